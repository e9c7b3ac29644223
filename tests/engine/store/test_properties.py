"""Property tests: random batches of assert/retract/correct against an independent reference model.

The model below is written from DESIGN §3.2, not from the store code: versions are plain records in a
list, carving is done interval by interval. After every batch the store's full history (closed versions
included) must equal the model's; at the end, invariant 1 (one identity's believed valid intervals are
disjoint at every historical tt) and invariant 2 (a scan pinned to the tt of any earlier batch is
byte-identical after all later writes) are checked on the store.

``TGMS_HYPOTHESIS_EXAMPLES`` raises the number of examples (default 40 per backend).
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tgms.engine.errors import TGMSError
from tgms.engine.store import ScanFilter, Store
from tgms.engine.timeutil import OPEN_END

from ._support import (
    EVERY,
    disjointness_violations,
    edge_identity,
    log_lines,
    log_records,
    node_identity,
    rows_digest,
)

# -- the universe -------------------------------------------------------------------------------------
UIDS = ["a", "b", "c"]
UNKNOWN_UID = "zz"  # never asserted: refs to it fail, edges to it fail
EDGES = [("a", "b", "R", ""), ("a", "b", "R", "x"), ("b", "a", "R", ""), ("a", "c", "S", "")]
UNKNOWN_EDGE = ("c", "zz", "R", "")
UNKNOWN_VID = 12345
LABELS = ["node", "person"]
T_MAX = 30
EXAMPLES = int(os.environ.get("TGMS_HYPOTHESIS_EXAMPLES", "40"))


def _props_text(props: dict[str, Any]) -> str:
    return json.dumps(props, sort_keys=True, separators=(",", ":"))


# -- the reference model ------------------------------------------------------------------------------
@dataclass
class MV:
    """One version in the model."""

    ident: tuple[str, ...]
    vt_s: int
    vt_e: int
    props: str
    label: str | None  # nodes only
    tt_s: int
    tt_e: int = OPEN_END


class ModelFailure(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Model:
    versions: list[MV] = field(default_factory=list)
    entities: set[str] = field(default_factory=set)

    def believed(self, ident: tuple[str, ...]) -> list[MV]:
        return [v for v in self.versions if v.ident == ident and v.tt_e == OPEN_END]

    def carve(self, ident: tuple[str, ...], s: int, e: int, tt: int) -> list[MV]:
        hit = [v for v in self.believed(ident) if v.vt_s < e and s < v.vt_e]
        for v in hit:
            if v.tt_s == tt:  # written by this batch: drop, an empty [tt, tt) belief is no belief
                self.versions.remove(v)
            else:  # written earlier: close its transaction time
                v.tt_e = tt
            if v.vt_s < s:
                self.versions.append(MV(ident, v.vt_s, s, v.props, v.label, tt))
            if e < v.vt_e:
                self.versions.append(MV(ident, e, v.vt_e, v.props, v.label, tt))
        return hit

    def resolve(self, ref: dict[str, Any], vid_keys: dict[int, tuple]) -> tuple[tuple[str, ...], MV | None]:
        if "uid" in ref:
            if ref["uid"] not in self.entities:
                raise ModelFailure("E_NOT_FOUND")
            return ("node", ref["uid"]), None
        if "vid" in ref:
            key = vid_keys.get(ref["vid"])
            for v in self.versions:
                if key == (v.ident, v.tt_s, v.vt_s) and v.tt_e == OPEN_END:
                    return v.ident, v
            raise ModelFailure("E_NOT_FOUND")
        return ("edge", ref["src"], ref["dst"], ref["rel_type"], ref.get("disc", "")), None

    def op(self, op: dict[str, Any], tt: int, vid_keys: dict[int, tuple]) -> None:
        kind = op["op"]
        props = _props_text(op.get("props") or {})
        if kind == "assert_node":
            ident = ("node", op["uid"])
            self.entities.add(op["uid"])
            self.carve(ident, op["vt_s"], op.get("vt_e", OPEN_END), tt)
            self.versions.append(MV(ident, op["vt_s"], op.get("vt_e", OPEN_END), props, op["label"], tt))
        elif kind == "assert_edge":
            if op["src"] not in self.entities or op["dst"] not in self.entities:
                raise ModelFailure("E_NOT_FOUND")
            ident = ("edge", op["src"], op["dst"], op["rel_type"], op.get("disc", ""))
            self.carve(ident, op["vt_s"], op.get("vt_e", OPEN_END), tt)
            self.versions.append(MV(ident, op["vt_s"], op.get("vt_e", OPEN_END), props, None, tt))
        elif kind == "retract":
            ident, version = self.resolve(op["ref"], vid_keys)
            if version is not None and not version.vt_s < op["t"] < version.vt_e:
                raise ModelFailure("E_INVALID_ARG")
            if not self.carve(ident, op["t"], OPEN_END, tt):
                raise ModelFailure("E_NOT_FOUND")
        elif kind == "correct":
            ident, version = self.resolve(op["ref"], vid_keys)
            if "vt_s" in op:
                s, e = op["vt_s"], op["vt_e"]
            else:
                assert version is not None
                s, e = version.vt_s, version.vt_e
            hit = self.carve(ident, s, e, tt)
            if not hit:
                raise ModelFailure("E_NOT_FOUND")
            template = min(hit, key=lambda v: v.vt_s)
            self.versions.append(MV(ident, s, e, props, template.label, tt))
        else:  # pragma: no cover - the generator makes no other ops
            raise AssertionError(kind)

    def batch(self, ops: list[dict[str, Any]], tt: int, vid_keys: dict[int, tuple]) -> str | None:
        """Apply a batch all-or-nothing; return the failure code, or None if it committed."""
        trial = copy.deepcopy(self)
        try:
            for op in ops:
                trial.op(op, tt, vid_keys)
        except ModelFailure as exc:
            return exc.code
        self.versions, self.entities = trial.versions, trial.entities
        return None

    def history(self) -> Counter:
        return Counter((v.ident, v.vt_s, v.vt_e, v.props, v.label, v.tt_s, v.tt_e) for v in self.versions)

    def pinned(self, a: int) -> Counter:
        """What a scan pinned to ``as_of_tt=a`` must return: believed at a, later closures censored."""
        return Counter(
            (v.ident, v.vt_s, v.vt_e, v.props, v.label, v.tt_s, OPEN_END)
            for v in self.versions
            if v.tt_s <= a < v.tt_e
        )


def store_history(store: Store, flt: ScanFilter = EVERY) -> Counter:
    nodes, edges = store.public_rows(flt)
    out: Counter = Counter()
    for n in nodes:
        out[
            (
                node_identity(n),
                n["vt_s"],
                n["vt_e"],
                _props_text(n["props"]),
                n["label"],
                n["tt_s"],
                n["tt_e"],
            )
        ] += 1
    for e in edges:
        out[
            (edge_identity(e), e["vt_s"], e["vt_e"], _props_text(e["props"]), None, e["tt_s"], e["tt_e"])
        ] += 1
    return out


def vid_keys_of(store: Store) -> dict[int, tuple]:
    """vid -> (identity, tt_s, vt_s) for every stored version: how a vid ref maps into the model."""
    nodes, edges = store.public_rows(EVERY)
    keys = {n["vid"]: (node_identity(n), n["tt_s"], n["vt_s"]) for n in nodes}
    keys.update({e["vid"]: (edge_identity(e), e["tt_s"], e["vt_s"]) for e in edges})
    return keys


# -- generators ---------------------------------------------------------------------------------------
times = st.integers(0, T_MAX - 1)
props_st = st.dictionaries(
    st.sampled_from(["p", "q"]), st.integers(0, 3) | st.sampled_from(["x", "y"]), max_size=2
)


@st.composite
def intervals(draw: st.DrawFn) -> tuple[int, int]:
    s = draw(times)
    e = draw(st.integers(s + 1, T_MAX) | st.just(OPEN_END))
    return s, e


def _edge_ref(edge: tuple[str, str, str, str]) -> dict[str, str]:
    src, dst, rel, disc = edge
    ref = {"src": src, "dst": dst, "rel_type": rel}
    if disc:
        ref["disc"] = disc
    return ref


@st.composite
def refs(draw: st.DrawFn, vids: list[int]) -> dict[str, Any]:
    choice = draw(st.sampled_from(["uid", "edge", "vid"] if vids else ["uid", "edge"]))
    if choice == "uid":
        return {"uid": draw(st.sampled_from([*UIDS, UNKNOWN_UID]))}
    if choice == "edge":
        return _edge_ref(draw(st.sampled_from([*EDGES, UNKNOWN_EDGE])))
    return {"vid": draw(st.sampled_from([*vids, UNKNOWN_VID]))}


@st.composite
def ops_st(draw: st.DrawFn, vids: list[int]) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["assert_node", "assert_node", "assert_edge", "assert_edge", "retract", "correct"])
    )
    if kind == "assert_node":
        s, e = draw(intervals())
        op = {
            "op": kind,
            "uid": draw(st.sampled_from(UIDS)),
            "label": draw(st.sampled_from(LABELS)),
            "vt_s": s,
        }
        if e != OPEN_END or draw(st.booleans()):
            op["vt_e"] = e
        op["props"] = draw(props_st)
        return op
    if kind == "assert_edge":
        src, dst, rel, disc = draw(st.sampled_from([*EDGES, UNKNOWN_EDGE]))
        s, e = draw(intervals())
        op = {"op": kind, "src": src, "dst": dst, "rel_type": rel, "disc": disc, "vt_s": s, "vt_e": e}
        op["props"] = draw(props_st)
        return op
    ref = draw(refs(vids))
    if kind == "retract":
        return {"op": kind, "ref": ref, "t": draw(times)}
    op = {"op": kind, "ref": ref, "props": draw(props_st)}
    if "vid" not in ref or draw(st.booleans()):
        op["vt_s"], op["vt_e"] = draw(intervals())
    return op


def _malformed(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A batch refused at parse time (never logged): an empty interval hidden among good ops."""
    s = draw(times)
    bad = {"op": "assert_node", "uid": "a", "vt_s": s, "vt_e": s}
    return [{"op": "assert_node", "uid": "b", "vt_s": 0}, bad]


# -- the property -------------------------------------------------------------------------------------
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(data=st.data())
def test_random_batches_match_model_and_keep_both_invariants(backend, fake_clock, scratch_dir, data) -> None:
    with tempfile.TemporaryDirectory(dir=scratch_dir) as tmp:
        _run_example(Store.create(Path(tmp) / "s", backend, now=fake_clock()), data)


def _run_example(store: Store, data: st.DataObject) -> None:
    model = Model()
    pins: list[tuple[int, str]] = []  # (tt of a logged batch, digest of the scan pinned to it)
    last_tt = 0
    n_batches = data.draw(st.integers(1, 12), label="batches")
    try:
        for _ in range(n_batches):
            keys = vid_keys_of(store)
            if data.draw(st.integers(0, 9), label="malformed?") == 0:
                ops = _malformed(data.draw)
                before = (store.digest(), log_lines(store.log_path))
                with pytest.raises(TGMSError) as info:
                    store.try_write(ops)
                assert info.value.code in ("E_INVALID_ARG", "E_SCHEMA")
                assert (store.digest(), log_lines(store.log_path)) == before, (
                    "a malformed batch changed the store"
                )
                continue
            ops = data.draw(st.lists(ops_st(sorted(keys)), min_size=1, max_size=4), label="ops")
            digest_before = store.digest()
            result = store.try_write(ops)
            assert result.tt > last_tt, "transaction times must strictly increase"
            last_tt = result.tt
            want = model.batch(ops, result.tt, keys)
            got = None if result.error is None else result.error["error"]
            assert got == want, f"store outcome {result.status} {result.error} but model says {want}"
            batch_rec, outcome = log_records(store.log_path)[-2:]
            assert (batch_rec["kind"], batch_rec["seq"], batch_rec["tt"]) == ("batch", result.seq, result.tt)
            assert (outcome["kind"], outcome["seq"], outcome["status"]) == (
                "outcome",
                result.seq,
                result.status,
            )
            if want is not None:
                assert store.digest() == digest_before, "a failed batch changed the store"
                assert outcome["error"]["error"] == want
            assert store_history(store) == model.history()
            pins.append((result.tt, rows_digest(store, ScanFilter(as_of_tt=result.tt))))

        # invariant 1, at every historical tt boundary
        assert disjointness_violations(store) == []
        # invariant 2: every pinned result is byte-identical after all later writes ...
        assert [(a, rows_digest(store, ScanFilter(as_of_tt=a))) for a, _ in pins] == pins
        # ... and is exactly what the model believed at that tt (tt_e censored)
        for a, _ in pins:
            assert store_history(store, ScanFilter(as_of_tt=a)) == model.pinned(a), f"pinned at {a}"
        assert store_history(store, ScanFilter()) == model.pinned(OPEN_END - 1)
    finally:
        store.close()
