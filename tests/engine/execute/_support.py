"""Helpers shared by the executor tests: one small bi-temporal history, plan builders, trace digests.

The history (node uids ``a``..``f``, all valid from 0)::

    a -follows-> c  [0, 50)      a -msg-> b  [1, 2)  (w corrected to 9 in a later batch)
    b -msg-> c      [2, 3)       c -msg-> d  [3, 4)
    d -msg-> e      [4, 5)       a -msg-> f  [5, 6)
    e -msg-> f      [60, 61)     (after a failed batch naming an unknown uid)

so ``temporal_reachability`` from ``a`` over ``[0, 100)`` reaches exactly :data:`REACHED` (ordered by
earliest arrival), and a ``limit`` below 5 cuts its page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import FakeClock
from tgms.engine.execute.executor import ExecConfig, Executor, Trace
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import Plan, build_plan
from tgms.engine.store import Store

#: (uid, earliest_arrival) of every node reachable from "a" in [0, 100), in the operator's row order
REACHED = [("c", 0), ("b", 1), ("d", 3), ("e", 4), ("f", 5)]
N_REACHED = len(REACHED)


def write_history(store: Store) -> None:
    """The writes behind every executor test store (a correction and a recorded failure included)."""
    store.write([{"op": "assert_node", "uid": u, "label": "user", "vt_s": 0} for u in "abcdef"])
    msgs = [("a", "b", 1), ("b", "c", 2), ("c", "d", 3), ("d", "e", 4), ("a", "f", 5)]
    store.write(
        [
            {"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1,
             "props": {"w": t}}
            for s, d, t in msgs
        ]
        + [{"op": "assert_edge", "src": "a", "dst": "c", "rel_type": "follows", "vt_s": 0, "vt_e": 50}]
    )  # fmt: skip
    store.correct({"src": "a", "dst": "b", "rel_type": "msg", "disc": ""}, {"w": 9}, 1, 2)
    failed = store.try_write(
        [{"op": "assert_edge", "src": "a", "dst": "zz", "rel_type": "msg", "vt_s": 7, "vt_e": 8}]
    )
    assert failed.status != "committed"
    store.write([{"op": "assert_edge", "src": "e", "dst": "f", "rel_type": "msg", "vt_s": 60, "vt_e": 61}])


def history_store(root: Path, backend: str) -> Store:
    """A fresh store at ``root`` holding :func:`write_history` (deterministic transaction times)."""
    clock = FakeClock()
    store = Store.create(root, backend, now=clock)
    write_history(store)
    return store


def step(sid: str, op: str, args: dict[str, Any], *deps: str) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": list(deps)}


def plan(*steps: dict[str, Any], answer: str | None = None, kind: str = "value") -> Plan:
    raw: dict[str, Any] = {"plan_id": "p", "question": "a test plan", "steps": list(steps)}
    if answer is not None:
        raw["answer_spec"] = {"kind": kind, "from": answer}
    return build_plan(raw)


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def reach(limit: int = 100, src: str = "a") -> dict[str, Any]:
    """temporal_reachability args from ``src`` over [0, 100)."""
    return {"src": src, "window": {"t_a": 0, "t_b": 100}, "limit": limit}


def snapshot(seeds: Any, hops: int = 1) -> dict[str, Any]:
    return {"seeds": seeds, "t_valid": 3, "hops": hops}


def run(ctx: OpContext, p: Plan, config: ExecConfig | None = None, **kw: Any) -> Trace:
    """Run ``p`` with ``ExecConfig(**kw)`` (or ``config``) and an in-memory result store."""
    return Executor(ctx, config=config or ExecConfig(**kw)).run(p)


def step_digests(trace: Trace) -> list[tuple[Any, ...]]:
    """Everything per step that must be reproducible: id, status, error and the three digests."""
    return [(r.id, r.status, r.error, r.args_digest, r.result_digest, r.envelope_digest) for r in trace.steps]


def statuses(trace: Trace) -> dict[str, str]:
    return {r.id: r.status for r in trace.steps}


def error_code(trace: Trace, sid: str) -> str | None:
    rec = trace.record(sid)
    assert rec is not None, sid
    return None if rec.error is None else rec.error["error"]
