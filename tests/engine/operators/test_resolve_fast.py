"""resolve_entities: fast path == brute-force oracle (randomized), plus hand cases.

Randomized cases compare ``envelope.call(...)["payload"]`` with the oracle's paged payload (same canonical
payload, or the same error code), ≥ TGMS_ORACLE_CASES calls; arguments are valid most of the time and
otherwise carry exactly one fault, so that error codes are compared case by case.
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.engine.operators.oracle_compare import compare
from tests.engine.operators.sampling import N_CASES, counter_clock
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.oracle import OracleStore
from tgms.engine.store import Store
from tgms.engine.timeutil import OPEN_END

# ------------------------------------------------------------------------------------- random stores

NAMES = ("Alice Smith", "alice  smith", "ALICE SMITH", "Alicia", "Ali", "Bob", "Bobby Tables", "bob",
         "Straße", "STRASSE", "  Carol\tAnn ", "carol ann", "Dave", "Ærø", "x")  # fmt: skip
UIDS = ("n1", "n2", "n7", "n42", "7", "u0", "u1", "alice", "Bob", "n100")
LABELS = ("person", "bot")
T_MAX = 200


def _props(rng: random.Random) -> dict[str, Any]:
    r = rng.random()
    if r < 0.75:
        return {"name": rng.choice(NAMES)}
    if r < 0.85:
        return {"name": rng.choice([5, None, ["Alice"], True])}  # not a string: name is null
    return {"other": "Alice"}


def resolve_store(root: Path, backend: str, seed: int) -> tuple[Store, list[int]]:
    """Nodes with colliding names, renames (corrections and later versions), retractions and edges."""
    rng = random.Random(seed)
    store = Store.create(root, backend, now=counter_clock())
    uids = rng.sample(UIDS, rng.randint(5, len(UIDS)))
    tts = []
    first = [
        {
            "op": "assert_node",
            "uid": u,
            "label": rng.choice(LABELS),
            "props": _props(rng),
            "vt_s": rng.randint(0, 50),
        }
        for u in uids[: len(uids) // 2 + 1]
    ]
    tts.append(store.write(first).tt)
    later = uids[len(uids) // 2 + 1 :]
    for _ in range(rng.randint(3, 6)):
        ops: list[dict[str, Any]] = []
        if later and rng.random() < 0.6:  # a node first asserted now: unknown at earlier as_of_tt
            u = later.pop()
            ops.append(
                {"op": "assert_node", "uid": u, "label": rng.choice(LABELS), "props": _props(rng), "vt_s": 0}
            )
        known = [u for u in uids if u not in later]
        for _ in range(rng.randint(0, 3)):
            s, d = rng.choice(known), rng.choice(known)
            t = rng.randint(0, T_MAX)
            ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": "msg", "vt_s": t, "vt_e": t + 1})
        if ops:
            tts.append(store.write(ops).tt)
        u = rng.choice(known)
        kind = rng.random()
        if kind < 0.4:  # rename from some time on (a later version wins the "latest" rule)
            op = {"op": "assert_node", "uid": u, "label": rng.choice(LABELS), "props": _props(rng),
                  "vt_s": rng.randint(51, T_MAX)}  # fmt: skip
        elif kind < 0.7:  # we were wrong about the name over some interval
            a = rng.randint(0, T_MAX)
            op = {
                "op": "correct",
                "ref": {"uid": u},
                "props": _props(rng),
                "vt_s": a,
                "vt_e": a + rng.randint(1, 400),
            }
        else:
            op = {"op": "retract", "ref": {"uid": u}, "t": rng.randint(1, T_MAX)}
        r = store.try_write([op])
        if r.status == "committed":
            tts.append(r.tt)
    return store, tts


RESOLVE_FAULTS = ("blank", "long", "type", "label_type", "unknown", "missing", "as_of", "as_of_type", "limit")


def resolve_args(rng: random.Random, tts: list[int]) -> dict[str, Any]:
    """Valid resolve_entities arguments (65%), else one fault."""
    name = rng.choice(NAMES)
    query = rng.choice(
        [
            rng.choice(UIDS),
            rng.choice(["1", "2", "7", "42", "100", "3"]),  # SNAP digits
            name,
            name.upper(),
            "  " + name.lower().replace(" ", "   ") + " ",
            name[: rng.randint(1, len(name))],
            rng.choice(["zz", "a", "A", "al", "car", "stras", "ær", "n", "Bo"]),
        ]
    )
    args: dict[str, Any] = {"query": query}
    if rng.random() < 0.3:
        args["label"] = rng.choice([*LABELS, "nobody"])
    if rng.random() < 0.4:
        args["as_of_tt"] = rng.choice([*tts, tts[0] - 1])
    if rng.random() < 0.3:
        args["limit"] = rng.randint(1, 3)
    if rng.random() < 0.35:
        fault = rng.choice(RESOLVE_FAULTS)
        if fault == "blank":
            args["query"] = rng.choice(["", "   ", "\t\n"])
        elif fault == "long":
            args["query"] = "a" * 201
        elif fault == "type":
            args["query"] = rng.choice([5, ["Alice"], None, True])
        elif fault == "label_type":
            args["label"] = 3
        elif fault == "unknown":
            args["name"] = "Alice"
        elif fault == "missing":
            del args["query"]
        elif fault == "as_of":
            args["as_of_tt"] = rng.choice([-1, OPEN_END])
        elif fault == "as_of_type":
            args["as_of_tt"] = "yesterday"
        else:
            args["limit"] = rng.choice([0, 10_001])
    return args


STORES = 5


def test_resolve_entities_matches_oracle(tmp_path: Path, backend: str) -> None:
    outcomes: Counter[str] = Counter()
    per_store = -(-N_CASES // STORES)
    for s in range(STORES):
        store, tts = resolve_store(tmp_path / f"s{s}", backend, seed=300 + s)
        try:
            ctx, oracle = OpContext(store), OracleStore(*store.public_rows())
            rng = random.Random(s)
            for _ in range(per_store):
                outcomes[compare(ctx, oracle, "resolve_entities", resolve_args(rng, tts))] += 1
        finally:
            store.close()
    assert sum(outcomes.values()) >= N_CASES
    assert outcomes["ok"] >= N_CASES // 2, outcomes
    assert outcomes["E_SCHEMA"] and outcomes["E_INVALID_ARG"], outcomes


def fast(ctx: OpContext, op: str, **args: Any) -> dict[str, Any]:
    return call(ctx, op, args)["payload"]


# --------------------------------------------------------------------------------- resolve by hand


@pytest.fixture
def people(make_store) -> Store:
    store = make_store()
    store.write(
        [
            {
                "op": "assert_node",
                "uid": "n1",
                "label": "person",
                "props": {"name": "Alice Smith"},
                "vt_s": 0,
            },
            {"op": "assert_node", "uid": "n2", "label": "bot", "props": {"name": "alice smith"}, "vt_s": 0},
            {"op": "assert_node", "uid": "n3", "label": "person", "props": {"name": "Alicia"}, "vt_s": 0},
            {"op": "assert_node", "uid": "n42", "label": "person", "vt_s": 0},
            {
                "op": "assert_node",
                "uid": "n5",
                "label": "person",
                "props": {"name": "Bob"},
                "vt_s": 0,
                "vt_e": 10,
            },
            {"op": "assert_node", "uid": "n5", "label": "person", "props": {"name": "Robert"}, "vt_s": 10},
            {"op": "assert_node", "uid": "n6", "label": "person", "props": {"name": "Straße"}, "vt_s": 0},
        ]
    )
    return store


def test_resolve_tiers(people: Store) -> None:
    ctx = OpContext(people)

    def res(q: str, **kw: Any) -> list[tuple[str, str]]:
        args = {"query": q, **kw}
        compare(ctx, OracleStore(*people.public_rows()), "resolve_entities", args)
        return [(r["uid"], r["match"]) for r in fast(ctx, "resolve_entities", **args)["rows"]]

    assert res("n42") == [("n42", "uid")]
    assert res(" 42 ") == [("n42", "uid")]  # SNAP digits, stripped
    assert res("  ALICE   smith ") == [("n1", "name"), ("n2", "name")]
    assert res("alice smith", label="person") == [("n1", "name")]
    assert res("ali") == [("n1", "prefix"), ("n2", "prefix"), ("n3", "prefix")]
    assert res("alicia", label="bot") == []  # the label filter applies before tiers
    assert res("Bob") == []  # n5's latest version is named Robert
    assert res("STRASSE") == [("n6", "name")]  # casefold
    assert fast(ctx, "resolve_entities", query="rob")["rows"] == [
        {"uid": "n5", "label": "person", "name": "Robert", "match": "prefix"}
    ]
    tt = people.write(
        [{"op": "correct", "ref": {"uid": "n5"}, "props": {"name": "Bobby"}, "vt_s": 10, "vt_e": OPEN_END}]
    ).tt
    assert res("bob") == [("n5", "prefix")]  # the cached index follows writes
    assert res("rob", as_of_tt=tt - 1) == [("n5", "prefix")]  # and past beliefs
    assert res("n7") == []
