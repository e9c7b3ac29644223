"""Correction probes (:mod:`pipeline.tasks.probes`): written once through the write API, rebuilt from the
event log alone, and every before/current pair verifies and has two different golds.

Two small stores serve the tests: the packaged CollegeMsg (no edge properties) and a 200-node synthetic
one with its correction epoch and manifest (planted patterns, ``w`` weights, interval-valued ``follows``).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tgms.engine.ingest.build import build_store
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.verifier import VerifierConfig, verify
from tgms.engine.store import Store
from tgms.engine.store.eventlog import read_log
from tgms.engine.store.store import replay
from tgms.pipeline.tasks.gold import compute_gold, plan_json
from tgms.pipeline.tasks.model import Draft, Template, step
from tgms.pipeline.tasks.probe_kinds import (
    PROBE_KINDS,
    Ledger,
    Picked,
    Question,
    probe_kind,
    registered_probe_kind,
)
from tgms.pipeline.tasks.probes import KINDS, PROBE_TEMPLATES, ensure_corrections, probe_drafts
from tgms.pipeline.tasks.sampler import DAY, Sampler

SEED = 0
Pairs = list[tuple[Template, Draft, Draft]]


def _clock() -> Callable[[], int]:
    it = itertools.count(1_750_000_000_000_000, 1_000)
    return lambda: next(it)


def base_store(root: Path, dataset: str) -> Path:
    """Ingest ``dataset`` as the CLI does (synthetic: with its correction epoch and manifest)."""
    build_store(dataset, root, events=5000, nodes=200, seed=0, now=_clock()).close()
    return root


def probed_copy(base: Path, root: Path, dataset: str, seed: int = SEED) -> int:
    """A copy of ``base`` with the probes written (same clock, so same tt); how many were written."""
    shutil.copytree(base, root, ignore=shutil.ignore_patterns(".lock"))
    with Store.open(root, now=_clock()) as store:
        return ensure_corrections(store, dataset, seed)


def probe_ops(root: Path) -> list[tuple[str, list[dict]]]:
    log = root / "eventlog.jsonl"
    return [(b.batch_id, b.ops(log)) for b in read_log(log).batches if b.batch_id.startswith("probe:")]


@pytest.fixture(scope="module")
def scratch() -> Iterator[Path]:
    shm = Path("/dev/shm")  # tmpfs when there is one: every batch is fsynced
    base = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="tgms-probes-", dir=base) as d:
        yield Path(d)


@pytest.fixture(scope="module")
def stores(scratch: Path) -> dict[str, tuple[Path, Path, int]]:
    """dataset -> (store without probes, store with seed-0 probes, probes written)."""
    out = {}
    for ds in ("collegemsg", "synthetic"):
        base = base_store(scratch / f"{ds}-base", ds)
        out[ds] = (base, scratch / ds, probed_copy(base, scratch / ds, ds))
    return out


@pytest.fixture(scope="module", params=["collegemsg", "synthetic"])
def probed(request: pytest.FixtureRequest, stores: dict[str, tuple[Path, Path, int]]) -> Iterator[tuple]:
    _, root, written = stores[request.param]
    with Store.open(root, read_only=True) as store:
        ctx = OpContext(store)
        yield request.param, root, written, ctx, probe_drafts(ctx, request.param, SEED)


def test_one_committed_batch_per_probe(probed: tuple) -> None:
    _, root, written, _, _ = probed
    assert 12 <= written <= 32
    batches = [b for b in read_log(root / "eventlog.jsonl").batches if b.batch_id.startswith("probe:")]
    assert len(batches) == written
    assert all(b.outcome and b.outcome["status"] == "committed" for b in batches)
    assert [b.batch_id.split(":")[:3] for b in batches] == [["probe", "0", str(k)] for k in range(written)]
    assert len({b.tt for b in batches}) == written  # each correction has its own transaction time


def test_pairs_verify_and_their_golds_differ(probed: tuple) -> None:
    dataset, root, written, ctx, pairs = probed
    assert len(pairs) == written
    tts = {b.batch_id: b.tt for b in read_log(root / "eventlog.jsonl").batches}
    kinds = set()
    for tmpl, before, current in pairs:
        assert tmpl is PROBE_TEMPLATES[tmpl.name.removeprefix("probe.")] and tmpl.family == "probe"
        kinds.add(tmpl.name)
        assert (before.probe_half, current.probe_half) == ("before", "current")
        assert before.probe_pair == current.probe_pair and before.input_uids == current.input_uids
        as_of = tts[before.probe_pair] - 1
        assert all(s["args"]["as_of_tt"] == as_of for s in before.steps)
        assert [
            {**s, "args": {k: v for k, v in s["args"].items() if k != "as_of_tt"}} for s in before.steps
        ] == (current.steps)
        assert all("as_of_tt" not in s["args"] for s in current.steps)
        golds = []
        for k, draft in enumerate((before, current)):
            question = tmpl.paraphrases[k].format(**draft.params)
            plan = plan_json(f"{dataset}/{draft.probe_pair}/{draft.probe_half}", question, tmpl, draft)
            report = verify(plan, ctx, VerifierConfig(task_uids=frozenset(draft.input_uids)))
            assert report.valid, (plan, report.violations)
            gold = compute_gold(ctx, None, tmpl, draft, plan)
            assert gold.status == "ok", (plan, gold.reason)
            golds.append(gold.gold)
        q_before = tmpl.paraphrases[0].format(**before.params)
        assert f"as recorded at {before.params['belief'].split('as recorded at ')[1]}" in q_before
        assert f"({as_of} µs)" in q_before and "before later corrections" in q_before
        assert "current records" in tmpl.paraphrases[0].format(**current.params)
        assert golds[0] != golds[1], (tmpl.name, golds)
    assert len(kinds) >= 4
    if dataset == "synthetic":
        assert "probe.property" in kinds  # msg events carry a weight `w`


def test_planted_nodes_are_never_touched(stores: dict[str, tuple[Path, Path, int]]) -> None:
    _, root, _ = stores["synthetic"]
    planted = json.loads((root / "manifest.json").read_text())["planted"]
    nodes = {u for g in ("rings", "pingpongs") for p in planted[g] for u in p["nodes"]}
    touched = set()
    for _, ops in probe_ops(root):
        for op in ops:
            r = op.get("ref", op)
            touched |= {r["src"], r["dst"]}
    assert touched and not touched & nodes


def test_a_replayed_store_gives_the_same_drafts(probed: tuple, scratch: Path) -> None:
    dataset, root, _, ctx, pairs = probed
    with replay(root / "eventlog.jsonl", scratch / f"{dataset}-replayed") as again:
        assert again.digest() == ctx.store.digest()
        assert ensure_corrections(again, dataset, SEED) == 0  # only read
        assert probe_drafts(OpContext(again), dataset, SEED) == pairs
    assert probe_drafts(ctx, dataset, SEED + 1) == []  # another seed's probes are not this seed's


def test_deterministic_in_the_seed(stores: dict[str, tuple[Path, Path, int]], scratch: Path) -> None:
    base, root, written = stores["synthetic"]
    assert probed_copy(base, scratch / "same", "synthetic") == written
    assert probe_ops(scratch / "same") == probe_ops(root)
    with Store.open(scratch / "same", read_only=True) as a, Store.open(root, read_only=True) as b:
        assert probe_drafts(OpContext(a), "synthetic", SEED) == probe_drafts(OpContext(b), "synthetic", SEED)
    with Store.open(scratch / "same") as store:  # a second run (any seed) writes nothing
        digest = store.digest()
        assert ensure_corrections(store, "synthetic", SEED) == 0
        assert ensure_corrections(store, "synthetic", SEED + 1) == 0
        assert store.digest() == digest
    probed_copy(base, scratch / "other", "synthetic", seed=1)
    other = probe_ops(scratch / "other")
    assert other and [ops for _, ops in other] != [ops for _, ops in probe_ops(root)]
    assert all(bid.startswith("probe:1:") for bid, _ in other)


def test_templates() -> None:
    assert set(PROBE_TEMPLATES) == set(KINDS)
    for kind, tmpl in PROBE_TEMPLATES.items():
        assert tmpl.name == f"probe.{kind}" and tmpl.family == "probe" and tmpl.kind in ("count", "value")
        assert len(set(tmpl.paraphrases)) == 3 and all("{belief}" in p for p in tmpl.paraphrases)
        assert tmpl.draw(None) is None  # type: ignore[arg-type]


class ToyProbe:
    """A kind defined outside pipeline/tasks: late events into one day, asked as a day count."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, _round: int) -> Picked:
        u = s.busy_uid()
        if not led.free(u):
            return None
        t = s.day_start(s.time(margin=DAY)) + 1
        if not led.free_span(t, t + 1):
            return None
        v = s.active_uid()
        if v == u or not led.free(v):
            return None
        op = {"op": "assert_edge", "src": u, "dst": v, "rel_type": "toy", "vt_s": t, "vt_e": t + 1}
        return [op], {u, v}, [(t, t + 1)]

    @staticmethod
    def question(ops: list[dict]) -> Question:
        op = ops[0]
        w = {"t_a": op["vt_s"] - 1, "t_b": op["vt_s"] - 1 + DAY}
        args = {"metric": "edge_event_count", "window": w, "stride": DAY}
        return {"t": str(w["t_a"])}, (), [step("s1", "graph_metric_timeseries", args)], "s1.rows[0].value"


TOY = {
    "answer": "count",
    "ops": ("graph_metric_timeseries",),
    "paraphrases": ("Toy one at {t}, {belief}?", "Toy two at {t}, {belief}?", "Toy three at {t}, {belief}?"),
}


def test_a_registered_kind_is_written_and_asked_with_no_edit_of_the_driver(
    stores: dict[str, tuple[Path, Path, int]], scratch: Path
) -> None:
    base, root, _ = stores["collegemsg"]
    with registered_probe_kind("toy", ToyProbe, **TOY) as kind:
        assert kind.template.name == "probe.toy" and "toy" in PROBE_KINDS
        probed_copy(base, scratch / "toy", "collegemsg")
        with Store.open(scratch / "toy", read_only=True) as store:
            drafts = probe_drafts(OpContext(store), "collegemsg", SEED)
    assert "toy" not in PROBE_KINDS  # removed again
    toy = [(t, b, c) for t, b, c in drafts if t.name == "probe.toy"]
    assert toy, "the toy kind wrote no probe"
    for _, before, current in toy:
        assert before.probe_half == "before" and current.probe_half == "current"
        assert before.steps[0]["args"]["as_of_tt"] < 2**62 and "as_of_tt" not in current.steps[0]["args"]
    # the built-in kinds keep their own random streams: their probes are the ones written without the toy
    builtin = [(bid, ops) for bid, ops in probe_ops(scratch / "toy") if not bid.endswith(":toy")]
    first = [ops for _, ops in probe_ops(root)]
    assert [ops for _, ops in builtin][:3] == first[:3]


def test_the_registry_refuses_a_duplicate_or_bad_paraphrases() -> None:
    with pytest.raises(RuntimeError, match="registered twice"):
        probe_kind("events", **TOY)(ToyProbe)
    with pytest.raises(ValueError, match="three distinct paraphrases"):
        probe_kind("bad", answer="count", ops=(), paraphrases=("a", "a", "b"))
