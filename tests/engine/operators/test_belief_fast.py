"""belief_changes: fast path == brute-force oracle on random bi-temporal stores (both backends), hand cases
for every kind of change, invariant 2, and refusals."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock, random_store, sample_args
from tgms.engine.errors import TGMSError
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store
from tgms.engine.timeutil import OPEN_END

STORES = 4
UIDS = [f"u{i}" for i in range(8)]


def test_belief_changes_match_oracle(tmp_path: Path, backend: str) -> None:
    outcomes: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    per_store = max(-(-N_CASES // STORES), 8)
    for s in range(STORES):
        store, tts = random_store(tmp_path / f"s{s}", backend, seed=300 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for i in range(per_store):
                args = sample_args("belief_changes", rng, UIDS, tts)
                if i % 3 == 0:
                    args["as_of_tt"] = rng.choice(tts)
                if i % 4 == 0:
                    args["limit"] = rng.randint(1, 5)
                outcomes[compare(ctx, oracle, "belief_changes", args)] += 1
            # every kind the store holds, counted over its whole history
            whole = call(ctx, "belief_changes", {"tt_from": 0, "tt_to": OPEN_END, "limit": 10_000})
            kinds.update(r["change"] for r in whole["payload"]["rows"])
        finally:
            store.close()
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert set(kinds) == {"asserted", "corrected", "retracted", "closed"}, kinds


# ---------------------------------------------------------------------------------------- hand cases


def _edge(props: dict[str, Any], vt_s: int, vt_e: int) -> dict[str, Any]:
    return {"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "r", "props": props,
            "vt_s": vt_s, "vt_e": vt_e}  # fmt: skip


REF = {"src": "a", "dst": "b", "rel_type": "r"}


@pytest.fixture
def story(tmp_path: Path, backend: str):
    """t0: nodes; t1: edge [0,100) w=1; t2: correct [20,40) w=2; t3: retract at 60; t4: retract at 10
    (drops the correction whole, cuts the first remainder); t5: node a renamed."""
    store = Store.create(tmp_path / "s", backend, now=counter_clock())
    tts = [store.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in ("a", "b", "c")]).tt]
    tts.append(store.write([_edge({"w": 1}, 0, 100)]).tt)
    tts.append(store.write([{"op": "correct", "ref": REF, "props": {"w": 2}, "vt_s": 20, "vt_e": 40}]).tt)
    tts.append(store.write([{"op": "retract", "ref": REF, "t": 60}]).tt)
    tts.append(store.write([{"op": "retract", "ref": REF, "t": 10}]).tt)
    tts.append(store.write([{"op": "correct", "ref": {"uid": "a"}, "props": {"name": "A"}, "vt_s": 0,
                             "vt_e": OPEN_END}]).tt)  # fmt: skip
    yield store, tts
    store.close()


def _rows(store: Store, **args: Any) -> list[dict[str, Any]]:
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), "belief_changes", {"limit": 1000, **args}) == "ok"
    return call(ctx, "belief_changes", {"limit": 1000, **args})["payload"]["rows"]


def _iv(v: dict[str, Any] | None) -> tuple[int, int, Any] | None:
    return None if v is None else (v["vt_s"], v["vt_e"], v["props"].get("w", v["props"].get("name")))


def test_every_kind_in_order(story: tuple[Store, list[int]]) -> None:
    store, tts = story
    got = [(r["tt"], r["change"], r["entity"], _iv(r["before"]), _iv(r["after"]))
           for r in _rows(store, tt_from=tts[1], tt_to=OPEN_END)]  # fmt: skip
    t1, t2, t3, t4, t5 = tts[1:]
    # within one batch, rows of one edge are ordered by version id (a hash): compare each batch as a set
    assert sorted(got, key=repr) == sorted(
        [
            (t1, "asserted", "edge", None, (0, 100, 1)),
            (
                t2,
                "corrected",
                "edge",
                (0, 100, 1),
                (20, 40, 2),
            ),  # the remainders [0,20) and [40,100) are silent
            (t3, "closed", "edge", (40, 100, 1), (40, 60, 1)),
            (t4, "closed", "edge", (0, 20, 1), (0, 10, 1)),
            (t4, "retracted", "edge", (20, 40, 2), None),
            (t4, "retracted", "edge", (40, 60, 1), None),
            (t5, "corrected", "node", (0, OPEN_END, None), (0, OPEN_END, "A")),
        ],
        key=repr,
    )
    assert [r[0] for r in got] == sorted(r[0] for r in got)


def test_uid_kinds_and_window(story: tuple[Store, list[int]]) -> None:
    store, tts = story
    only_c = _rows(store, tt_from=0, tt_to=OPEN_END, uid="c")
    assert [(r["change"], r["uid"]) for r in only_c] == [("asserted", "c")]
    retracts = _rows(store, tt_from=0, tt_to=OPEN_END, uid="b", kinds=["retracted"])
    assert len(retracts) == 2 and all(r["eid"] is not None and r["uid"] is None for r in retracts)
    assert _rows(store, tt_from=tts[2], tt_to=tts[3]) == _rows(store, tt_from=tts[2], tt_to=tts[2] + 1)
    assert _rows(store, tt_from=tts[-1] + 1, tt_to=OPEN_END) == []


def test_pinned_results_never_change(story: tuple[Store, list[int]]) -> None:
    """Invariant 2: a later closure of an `after` version is hidden past the horizon, so a call whose
    window ends in the past (or that is pinned by as_of_tt) gives the same payload after more writes."""
    store, tts = story
    ctx = OpContext(store)
    early = {"tt_from": 0, "tt_to": tts[2] + 1, "limit": 1000}
    pinned = {"tt_from": 0, "tt_to": OPEN_END, "as_of_tt": tts[2], "limit": 1000}
    before = [call(ctx, "belief_changes", a)["payload"] for a in (early, pinned)]
    assert before[0] == before[1]
    (asserted,) = [r for r in before[0]["rows"] if r["entity"] == "edge" and r["change"] == "asserted"]
    assert asserted["after"]["tt_e"] == tts[2]  # closed by the correction, inside the window
    corr = next(r for r in before[0]["rows"] if r["change"] == "corrected")
    assert corr["after"]["tt_e"] == OPEN_END  # closed later at tts[4], past the horizon: censored
    store.write([{"op": "retract", "ref": REF, "t": 5}])
    after = [call(ctx, "belief_changes", a)["payload"] for a in (early, pinned)]
    assert after == before
    unpinned = call(ctx, "belief_changes", {"tt_from": 0, "tt_to": OPEN_END, "limit": 1000})["payload"]
    assert unpinned["rows_total"] > before[0]["rows_total"]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"tt_from": 5}, "E_SCHEMA"),
        ({"tt_from": 5, "tt_to": 5}, "E_INVALID_ARG"),
        ({"tt_from": "0", "tt_to": 5}, "E_SCHEMA"),
        ({"tt_from": 0, "tt_to": 5, "kinds": ["added"]}, "E_INVALID_ARG"),
        ({"tt_from": 0, "tt_to": 5, "kinds": "asserted"}, "E_SCHEMA"),
        ({"tt_from": 0, "tt_to": OPEN_END, "uid": "zz"}, "E_NOT_FOUND"),
        ({"tt_from": 0, "tt_to": 2, "uid": "a"}, "E_NOT_FOUND"),  # not believed before the horizon
        ({"tt_from": 0, "tt_to": 5, "window": {"t_a": 0, "t_b": 1}}, "E_SCHEMA"),
    ],
)
def test_refusals(story: tuple[Store, list[int]], args: dict[str, Any], code: str) -> None:
    store, _ = story
    ctx = OpContext(store)
    assert compare(ctx, OracleStore(*store.public_rows()), "belief_changes", args) == code
    with pytest.raises(TGMSError) as err:
        call(ctx, "belief_changes", args)
    assert err.value.code == code


def test_cost_guard_names_narrowing(story: tuple[Store, list[int]]) -> None:
    store, _ = story
    with pytest.raises(TGMSError) as err:
        call(OpContext(store), "belief_changes", {"tt_from": 0, "tt_to": OPEN_END}, budget_s=1e-9)
    assert err.value.code == "E_COST" and any("uid" in s for s in err.value.details["suggestions"])
