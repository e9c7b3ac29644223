"""A real trace to view: a small CollegeMsg store (the first :data:`EVENTS` real events), a plan run on it
with ``tgms plan run`` (one step's page cut, so taint shows), and a hand-written answer whose four claims
get the four verdicts from the real claim verifier.

The plan (a DAG with a branch and a join)::

    s1 temporal_reachability(src, week, limit 3)  -> page cut (truncated)
    s2 graph_metric_timeseries(edge_event_count, week, 1 day)
    s3 snapshot_subgraph(seeds s1.rows[*].uid, t_a)   <- s1: tainted (read a cut page)
    s4 compute sum(s2.rows.value)                         <- s2
    s5 compute ratio(s4.value, s1.rows_total)             <- s1, s4 (rows_total is exact: not tainted)

Claims: c1 ``s1.rows_total`` (right: supported), c2 a uid of s3's nodes (right, but s3 is tainted:
weakly_supported), c3 ``s4.value`` + 1 (wrong: unsupported), c4 a count ``from`` s2 citing only s1
(unverifiable).
"""

from __future__ import annotations

import collections
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import collegemsg_head
from tgms.engine.api import build_store
from tgms.pipeline.cli.main import main

EVENTS = 2000
DAY_US = 86_400 * 10**6


@dataclass(frozen=True)
class Traced:
    store: Path
    plan: Path
    run: Path  # `tgms plan run` output
    answer: Path  # the hand-written answer
    output: dict[str, Any]
    answer_obj: dict[str, Any]


def _plan(src: str, t_a: int) -> dict[str, Any]:
    week = {"t_a": t_a, "t_b": t_a + 7 * DAY_US}
    return {
        "plan_id": "viewer-test",
        "question": f"Whom can {src} reach in the first week, and how busy was that week?",
        "steps": [
            {"id": "s1", "op": "temporal_reachability", "args": {"src": src, "window": week, "limit": 3}},
            {
                "id": "s2",
                "op": "graph_metric_timeseries",
                "args": {"metric": "edge_event_count", "window": week, "stride": DAY_US},
            },
            {
                # not a compute: compute reads past a cut page (issue 27), a uid list argument does not
                "id": "s3",
                "op": "snapshot_subgraph",
                "args": {"seeds": {"$ref": "s1.rows[*].uid"}, "t_valid": t_a},
                "depends_on": ["s1"],
            },
            {
                "id": "s4",
                "op": "compute",
                "args": {"fn": "sum", "input": {"$ref": "s2.rows"}, "field": "value"},
                "depends_on": ["s2"],
            },
            {
                "id": "s5",
                "op": "compute",
                "args": {"fn": "ratio", "a": {"$ref": "s4.value"}, "b": {"$ref": "s1.rows_total"}},
                "depends_on": ["s1", "s4"],
            },
        ],
        "answer_spec": {"kind": "count", "from": "s1.rows_total"},
    }


def _busiest_src(head: Path) -> tuple[str, int]:
    """The uid that sends the most messages in the head, and the first event's time (µs)."""
    rows = [line.split() for line in head.read_text("utf-8").splitlines() if line.strip()]
    src = collections.Counter(r[0] for r in rows).most_common(1)[0][0]
    return f"n{src}", int(rows[0][2]) * 10**6


@pytest.fixture(scope="session")
def traced(tmp_path_factory: pytest.TempPathFactory) -> Traced:
    root = tmp_path_factory.mktemp("viewer")
    head = collegemsg_head(root, EVENTS)
    store = root / "store"
    build_store("collegemsg", store, source=head).close()
    src, t_a = _busiest_src(head)
    plan_path = root / "plan.json"
    plan_path.write_text(json.dumps(_plan(src, t_a)), "utf-8")
    run_path = root / "run.json"
    _run(["plan", "run", str(plan_path), "--store", str(store)], run_path)
    output = json.loads(run_path.read_text("utf-8"))
    steps = {s["id"]: s for s in output["trace"]["steps"]}
    assert [steps[s]["status"] for s in ("s1", "s2", "s3", "s4", "s5")] == ["ok"] * 5
    assert steps["s1"]["truncated"] and steps["s3"]["upstream_truncated"], "the fixture needs a cut page"
    answer = _answer(output, root / "store")
    answer_path = root / "answer.json"
    answer_path.write_text(json.dumps(answer), "utf-8")
    return Traced(store, plan_path, run_path, answer_path, output, answer)


def _run(argv: list[str], out: Path) -> None:
    """Run a tgms command with its stdout captured into ``out`` (exit 0 required)."""
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(argv)
    assert code == 0, argv
    out.write_text(buf.getvalue(), "utf-8")


def _answer(output: dict[str, Any], store: Path) -> dict[str, Any]:
    """Four claims, one per verdict, with values read from the run's own results."""
    from tgms.engine.api import ResultStore, trace_from_dict

    trace = trace_from_dict(output["trace"], ResultStore(store / "results"))
    total = trace.payload("s1")["rows_total"]
    uid = trace.payload("s3")["nodes"][0]["uid"]
    busy = trace.payload("s4")["value"]
    return {
        "text": f"{total} nodes are reachable, among them {uid}; the week had {busy + 1} message events.",
        "answer": {"kind": "count", "value": total},
        "claims": [
            {"id": "c1", "type": "count", "value": total, "evidence": ["s1"], "from": "s1.rows_total"},
            {"id": "c2", "type": "entity", "uids": [uid], "evidence": ["s3"]},
            {"id": "c3", "type": "value", "value": busy + 1, "evidence": ["s4"], "from": "s4.value"},
            {"id": "c4", "type": "count", "value": 7, "evidence": ["s1"], "from": "s2.rows_total"},
        ],
    }
