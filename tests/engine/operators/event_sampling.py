"""Random stores with mixed-type edge properties and random arguments for the event operators
(``list_events``, ``aggregate_events``)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tests.engine.operators.sampling import T_MAX, random_store
from tgms.engine.store import Store

EVENT_OPS = ("list_events", "aggregate_events")
CAL = ("year", "month", "day", "week", "hour", "dow", "month_of_year")
#: a time scale that moves the calendar keys: T_MAX steps of ~7 hours cross hours, days, weeks, months
SCALE = 25_000_000_000
BASE = 1_293_753_600_000_000  # 2010-12-31T00:00Z: an ISO week that straddles a year


def _rating(rng: random.Random) -> Any:
    return rng.choice([-10, -1, 0, 1, 1, 2, 5, 10, 2.5, -0.5, 1.0, "good", "bad", True, None, [1], "1"])


def event_store(root: Path, backend: str, seed: int) -> tuple[Store, list[int]]:
    """:func:`random_store` (corrections, retractions, ties) plus batches of calendar-scale events with a
    mixed-type ``rating`` (ints, floats, strings, booleans, lists, missing), some later corrected."""
    store, tts = random_store(root, backend, seed)
    rng = random.Random(seed * 7 + 1)
    uids = [f"u{i}" for i in range(8)]
    for _ in range(3):
        ops = []
        for _ in range(rng.randint(5, 15)):
            s, d = rng.choice(uids), rng.choice(uids)
            t = BASE + rng.randint(0, T_MAX) * SCALE + rng.choice([0, 0, 1])
            props: dict[str, Any] = {"w": rng.randint(1, 4)}
            r = _rating(rng)
            if r is not None:
                props["rating"] = r
            ops.append({"op": "assert_edge", "src": s, "dst": d, "rel_type": rng.choice(["rate", "msg"]),
                        "props": props, "vt_s": t, "vt_e": t + rng.choice([1, SCALE])})  # fmt: skip
        tts.append(store.write(ops).tt)
        s, d = rng.choice(uids), rng.choice(uids)
        r = store.try_write([{"op": "correct", "ref": {"src": s, "dst": d, "rel_type": "rate"},
                              "props": {"rating": rng.choice([-3, 7, "meh"])},
                              "vt_s": BASE, "vt_e": BASE + T_MAX * SCALE}])  # fmt: skip
        if r.status == "committed":
            tts.append(r.tt)
    return store, tts


def _window(rng: random.Random) -> dict[str, int]:
    if rng.random() < 0.4:
        a = rng.randint(0, T_MAX)
        return {"t_a": a, "t_b": a + rng.randint(1, T_MAX)}
    a = BASE + rng.randint(-5, T_MAX) * SCALE
    return {"t_a": a, "t_b": a + rng.randint(1, T_MAX) * SCALE}


FIELDS = ("src", "dst", "rel_type", "eid", "t", "vt_e", *CAL, "prop.w", "prop.rating", "prop.nope")


def _value(rng: random.Random, field: str, uids: list[str]) -> Any:
    pools = {
        "src": uids, "dst": uids, "rel_type": ["msg", "rate", "follows"], "eid": list(range(0, 20)),
        "t": [0, 50, 100, BASE + 50 * SCALE], "vt_e": [1, 60, 2**62], "year": [2010, 2011],
        "month": ["2011-01", "2011-02", "2010-12", "2011-1"], "day": ["2011-01-05", "2011-01-20"],
        "week": ["2011-W01", "2010-W52", "2011-W03"], "hour": [0, 7, 12, 23], "dow": [1, 4, 7],
        "month_of_year": [1, 2, 12], "prop.w": [1, 2, 3, 2.5, "2"],
        "prop.rating": [-1, 0, 1, 2.5, "good", True, 10],
    }  # fmt: skip
    return rng.choice(pools.get(field, [1, "x"]))


def predicate(rng: random.Random, uids: list[str]) -> dict[str, Any]:
    f = rng.choice(FIELDS)
    op = rng.choice(("eq", "ne", "lt", "le", "gt", "ge", "in", "not_in", "exists", "missing"))
    if op in ("exists", "missing"):
        return {"field": f, "op": op}
    if op in ("in", "not_in"):
        return {"field": f, "op": op, "value": [_value(rng, f, uids) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.15:
        return {"field": f, "op": op, "other": rng.choice(FIELDS)}
    return {"field": f, "op": op, "value": _value(rng, f, uids)}


def _selection(rng: random.Random, uids: list[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    if rng.random() < 0.6:
        args["window"] = _window(rng)
    for k in ("src", "dst", "node"):
        if rng.random() < 0.15:
            args[k] = rng.sample(uids, rng.randint(0, 3))
    if rng.random() < 0.2:
        args["rel_types"] = rng.sample(["msg", "rate", "follows"], rng.randint(1, 2))
    if rng.random() < 0.4:
        args["where"] = [predicate(rng, uids) for _ in range(rng.choice([1, 1, 2]))]
    if rng.random() < 0.1:
        args["where"] = [{"field": "src", "op": "eq", "other": "dst"}]
    return args


KEYS = (
    "src",
    "dst",
    "node",
    "pair",
    "unordered_pair",
    "rel_type",
    "t",
    "bucket",
    *CAL,
    "prop.rating",
    "prop.w",
)
NUM_FIELDS = ("t", "vt_e", "eid", "hour", "prop.w", "prop.rating")


def _aggregate(rng: random.Random, group_by: list[str]) -> dict[str, Any]:
    fn = rng.choice(("count", "count_distinct", "first_t", "last_t", "first_value", "last_value", "sum",
                     "mean", "min", "max", "median", "min_gap", "max_gap", "mean_gap", "median_gap",
                     "max_in_window", "sessions", "count_within_first", "max_session",
                     "max_session_events"))  # fmt: skip
    g: dict[str, Any] = {"fn": fn}
    if fn in ("first_value", "last_value"):
        g["field"] = rng.choice(
            ["src", "dst", "rel_type", "day", "t", "vt_e", "eid", "prop.rating", "prop.w"]
        )
    elif fn == "count_distinct":
        pool = ["src", "dst", "pair", "unordered_pair", "rel_type", "day", "vt_e", "prop.rating", "prop.w"]
        g["field"] = rng.choice(pool + (["other"] if "node" in group_by else []))
    elif fn in ("sum", "mean", "min", "max", "median"):
        g["field"] = rng.choice(NUM_FIELDS)
    elif fn in ("max_in_window", "count_within_first"):
        g["width"] = rng.choice([1, 5, 30, SCALE * 10, 2**61])
    elif fn in ("sessions", "max_session", "max_session_events"):
        g["gap"] = rng.choice([0, 5, 40, SCALE * 3])
    return g


def _filtered(rng: random.Random, g: dict[str, Any], uids: list[str]) -> dict[str, Any]:
    """The aggregate with its own where, a third of the time (groups that keep no event included)."""
    if rng.random() < 0.33:
        g["where"] = [predicate(rng, uids) for _ in range(rng.choice([1, 1, 2]))]
    return g


def _key_fields(k: str) -> list[str]:
    return {"pair": ["src", "dst"], "unordered_pair": ["a", "b"]}.get(k, [k.replace(".", "_")])


def sample_event_args(op: str, rng: random.Random, uids: list[str], tts: list[int]) -> dict[str, Any]:
    args = _selection(rng, uids)
    if op == "list_events":
        if rng.random() < 0.4 or not args:
            args["order"] = rng.choice(["asc", "desc"])
    else:
        while True:  # keys whose row fields do not collide (src with pair does)
            group_by = rng.sample(KEYS, rng.choice([0, 1, 1, 1, 2, 2, 3]))
            fields = [f for k in group_by for f in _key_fields(k)]
            if len(set(fields)) == len(fields):
                break
        args["group_by"] = group_by
        if "bucket" in group_by:  # spans of ~1..100 steps, from the window's start, 0 or a time of the data
            bucket: dict[str, Any] = {"width": rng.choice([1, 7, 100]) * SCALE + rng.choice([0, 1])}
            if rng.random() < 0.6:
                bucket["origin"] = rng.choice([0, BASE, BASE + 3 * SCALE, -SCALE])
            args["bucket"] = bucket
        aggs: list[dict[str, Any]] = []
        names: set[str] = set()
        for i in range(rng.randint(0, 3)):
            g = _filtered(rng, _aggregate(rng, group_by), uids)
            name = g["fn"] if "field" not in g else f"{g['fn']}_{g['field']}".replace(".", "_")
            if name in names:
                g["as"] = f"agg{i}"
            names.add(g.get("as", name))
            aggs.append(g)
        if aggs:
            args["aggregates"] = aggs
        out = fields + (sorted(names) if aggs else ["count"])
        if len(set(out)) == len(out):
            if rng.random() < 0.25:
                f = rng.choice(out)
                op_ = rng.choice(["gt", "ge", "lt", "eq", "exists", "missing"])
                h: dict[str, Any] = {"field": f, "op": op_}
                if op_ not in ("exists", "missing"):
                    h["value"] = rng.choice([0, 1, 2, 3, 1.5, "u3", "2011-01", 10**15])
                args["having"] = [h]
            if rng.random() < 0.6:
                args["order_by"] = [{"field": rng.choice(out), "desc": rng.random() < 0.5}
                                    for _ in range(rng.randint(1, 2))]  # fmt: skip
    if rng.random() < 0.35:
        args["as_of_tt"] = rng.choice(tts)
    if rng.random() < 0.3:
        args["limit"] = rng.randint(1, 4)
    return args
