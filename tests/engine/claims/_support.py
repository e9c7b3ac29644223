"""Helpers shared by the claim tests: one small bi-temporal store, plan builders, answer builders.

The store (node uids ``n1``..``n7``, label ``user``, props ``{score: i}``, all valid from 0; ``S`` = one
second in microseconds)::

    n1 -msg-> n2  [1S, 1S+1)     n2 -msg-> n3  [2S, 2S+1)     n3 -msg-> n1  [3S, 3S+1)
    n3 -msg-> n4  [4S, 4S+1)     n4 -msg-> n5  [5S, 5S+1)     n1 -msg-> n6  [6S, 6S+1)
    n2 -follows-> n7  [S/2, 7S/2)

then, in a later batch (transaction time :data:`TT_CORRECTED`), n2's score is corrected to 20 over
``[0, 5S)`` (so the current belief has two versions of n2, the belief before it one).

``temporal_reachability`` from n1 over :data:`W` reaches :data:`REACHED` (in the operator's row order), and
there is exactly one cyclic triangle n1 -> n2 -> n3 -> n1 within ``delta = 5S``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import CLOCK_STEP, CLOCK_T0, FakeClock
from tgms.engine.claims.answer import Answer, parse_answer
from tgms.engine.claims.verifier import Verdict, VerifyConfig, verify_claims
from tgms.engine.execute.executor import ExecConfig, Trace, execute
from tgms.engine.operators.context import OpContext
from tgms.engine.plan.model import Plan, build_plan
from tgms.engine.store import Store

S = 1_000_000
W = {"t_a": 0, "t_b": 10 * S}
UIDS = [f"n{i}" for i in range(1, 8)]
#: (uid, earliest_arrival) reached from n1 over W, in row order
REACHED = [("n2", S), ("n7", S), ("n3", 2 * S), ("n4", 4 * S), ("n5", 5 * S), ("n6", 6 * S)]
N_REACHED = len(REACHED)
MSGS = [("n1", "n2", 1), ("n2", "n3", 2), ("n3", "n1", 3), ("n3", "n4", 4), ("n4", "n5", 5), ("n1", "n6", 6)]
FOLLOWS = (S // 2, 7 * S // 2)  # n2 -follows-> n7
#: transaction time of the correction batch (the third batch of a fresh FakeClock)
TT_CORRECTED = CLOCK_T0 + 2 * CLOCK_STEP
TT_BEFORE = TT_CORRECTED - 1
MOTIF = {"motif": "M_triangle_cyclic", "delta": 5 * S, "window": W}


def write_history(store: Store) -> None:
    store.write(
        [{"op": "assert_node", "uid": u, "label": "user", "vt_s": 0, "props": {"score": i + 1}}
         for i, u in enumerate(UIDS)]
    )  # fmt: skip
    store.write(
        [{"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t * S, "vt_e": t * S + 1,
          "props": {"w": t}} for s, d, t in MSGS]
        + [{"op": "assert_edge", "src": "n2", "dst": "n7", "rel_type": "follows", "vt_s": FOLLOWS[0],
            "vt_e": FOLLOWS[1]}]
    )  # fmt: skip
    tt = store.correct({"uid": "n2"}, {"score": 20}, 0, 5 * S).tt
    assert tt == TT_CORRECTED


def build_store(root: Path, backend: str = "duckdb") -> Store:
    store = Store.create(root, backend, now=FakeClock())
    write_history(store)
    return store


# -- plans ---------------------------------------------------------------------------------------------


def step(sid: str, op: str, args: dict[str, Any], *deps: str) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": list(deps)}


def raw_plan(*steps: dict[str, Any], answer: str | None = None, kind: str = "value") -> dict[str, Any]:
    raw: dict[str, Any] = {"plan_id": "p", "question": "a claims test plan about n1", "steps": list(steps)}
    if answer is not None:
        raw["answer_spec"] = {"kind": kind, "from": answer}
    return raw


def plan(*steps: dict[str, Any], answer: str | None = None, kind: str = "value") -> Plan:
    return build_plan(raw_plan(*steps, answer=answer, kind=kind))


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def reach(limit: int = 100, src: str = "n1", **kw: Any) -> dict[str, Any]:
    return {"src": src, "window": dict(W), "limit": limit, **kw}


def history(uid: str = "n2", **kw: Any) -> dict[str, Any]:
    return {"uid": uid, "include_edges": True, **kw}


def run(ctx: OpContext, p: Plan, config: ExecConfig | None = None) -> Trace:
    return execute(p, ctx, config=config, store_digest=ctx.store.digest())


# -- answers -------------------------------------------------------------------------------------------


def claim(typ: str, *evidence: str, cid: str = "c1", src: str | None = None, **body: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"id": cid, "type": typ, "evidence": list(evidence), **body}
    if src is not None:
        c["from"] = src
    return c


def answer(*claims: dict[str, Any], text: str = "", typed: tuple[str, Any] | None = None) -> dict[str, Any]:
    raw: dict[str, Any] = {"text": text, "claims": list(claims)}
    if typed is not None:
        raw["answer"] = {"kind": typed[0], "value": typed[1]}
    return raw


def verdicts(
    raw: dict[str, Any] | Answer, trace: Trace, ctx: OpContext | None, config: VerifyConfig | None = None
) -> list[Verdict]:
    return verify_claims(raw if isinstance(raw, Answer) else parse_answer(raw), trace, ctx, config)


def verdict_of(
    c: dict[str, Any], trace: Trace, ctx: OpContext | None, config: VerifyConfig | None = None
) -> Verdict:
    (v,) = verdicts(answer(c), trace, ctx, config)
    return v


def kinds(vs: list[Verdict]) -> list[str]:
    return [v.verdict for v in vs]


def base_plan() -> Plan:
    """Every kind of evidence the per-type tests cite (and a failed and a skipped step)::

    s1 reachability (complete page)   s2 count of s1.rows       s3 diff of two arrivals (µs)
    s4 n2's history with its edges    s5 history of an unknown uid (error)   s6 count of s5 (skipped)
    s7 cyclic triangles               s8 Allen relation of two s4 edges     s9 Allen relation of literals
    """
    return plan(
        step("s1", "temporal_reachability", reach()),
        step("s2", "compute", {"fn": "count", "input": ref("s1.rows")}, "s1"),
        step("s3", "compute", {"fn": "diff", "a": ref("s1.rows[5].earliest_arrival"),
                               "b": ref("s1.rows[0].earliest_arrival")}, "s1"),
        step("s4", "entity_history", history()),
        step("s5", "entity_history", {"uid": "nobody"}),
        step("s6", "compute", {"fn": "count", "input": ref("s5.rows")}, "s5"),
        step("s7", "count_temporal_motifs", dict(MOTIF)),
        step("s8", "compute", {"fn": "interval_relation", "a": ref("s4.edges[1]"), "b": ref("s4.edges[0]")},
             "s4"),
        step("s9", "compute", {"fn": "interval_relation", "a": [0, 5], "b": [3, 9]}),
    )  # fmt: skip
