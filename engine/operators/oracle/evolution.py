"""Oracles of the evolution family: neighborhood_evolution, co_active (and the 13 Allen relations)."""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    buckets,
    check_keys,
    choice_arg,
    edge_key,
    int_arg,
    overlaps,
    require_known,
    str_arg,
    str_list_arg,
    t1_t2_args,
    window_arg,
)

ALLEN_RELATIONS = (
    "before",
    "after",
    "meets",
    "met_by",
    "overlaps",
    "overlapped_by",
    "starts",
    "started_by",
    "during",
    "contains",
    "finishes",
    "finished_by",
    "equals",
)


def allen(a_s: int, a_e: int, b_s: int, b_e: int) -> str:
    """The Allen relation of A = [a_s, a_e) to B = [b_s, b_e) (both non-empty); exactly one holds."""
    if a_e < b_s:
        return "before"
    if b_e < a_s:
        return "after"
    if a_e == b_s:
        return "meets"
    if b_e == a_s:
        return "met_by"
    if a_s == b_s and a_e == b_e:
        return "equals"
    if a_s == b_s:
        return "starts" if a_e < b_e else "started_by"
    if a_e == b_e:
        return "finishes" if a_s > b_s else "finished_by"
    if b_s < a_s and a_e < b_e:
        return "during"
    if a_s < b_s and b_e < a_e:
        return "contains"
    return "overlaps" if a_s < b_s else "overlapped_by"


def oracle_neighborhood_evolution(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["uid", "t1", "t2"], ["stride"], "neighborhood_evolution")
    a = as_of_arg(args)
    uid = str_arg(args, "uid")
    assert uid is not None
    t1, t2 = t1_t2_args(args)
    stride = int_arg(args, "stride", t2 - t1, 1, None)
    assert stride is not None
    require_known([uid], store.known_uids(a), "uid")
    grid = buckets(t1, t2, stride)
    # (neighbour, version) for every believed edge version touching uid (self-loops excluded)
    incident = []
    for e in store.believed_edges(a):
        if e["src"] == uid and e["dst"] != uid:
            incident.append((e["dst"], e))
        elif e["dst"] == uid and e["src"] != uid:
            incident.append((e["src"], e))

    def neighbours(x: int, y: int) -> set[str]:
        return {v for v, e in incident if overlaps(e, x, y)}

    before = neighbours(0, t1)
    during = neighbours(t1, t2)
    gained = []
    for v in sorted(during - before):
        first = min(e["vt_s"] for w, e in incident if w == v and overlaps(e, t1, t2))
        gained.append({"uid": v, "first_seen": first})
    lost = []
    for v in sorted(before - during):
        last = max(e["vt_s"] for w, e in incident if w == v and overlaps(e, 0, t1))
        lost.append({"uid": v, "last_seen": last})
    series = [{"t_a": bs, "t_b": be, "degree": len(neighbours(bs, be))} for bs, be in grid]
    return canonicalize(
        {
            "neighbors_gained": gained,
            "neighbors_gained_total": len(gained),
            "neighbors_lost": lost,
            "neighbors_lost_total": len(lost),
            "degree_series": series,
            "degree_series_total": len(series),
        }
    )


SPEC_KEYS = ("src", "dst", "uid", "rel_types", "window")


def _select(
    store: OracleStore, a: int | None, spec: Any, name: str, edges: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    if not isinstance(spec, dict):
        raise SchemaError(f"{name} must be an object {{src?, dst?, uid?, rel_types?, window?}}", field=name)
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise SchemaError(f"unknown key(s) {unknown} in {name}", field=name, unknown=unknown)
    src = str_list_arg(spec, "src", allow_single=True)
    dst = str_list_arg(spec, "dst", allow_single=True)
    touch = str_list_arg(spec, "uid", allow_single=True)
    rel_types = str_list_arg(spec, "rel_types")
    window = window_arg(spec["window"], f"{name}.window") if spec.get("window") is not None else None
    known = store.known_uids(a)
    for field, lst in (("src", src), ("dst", dst), ("uid", touch)):
        if lst is not None:
            require_known(lst, known, f"{name}.{field}")
    out = []
    for e in edges:
        if src is not None and e["src"] not in src:
            continue
        if dst is not None and e["dst"] not in dst:
            continue
        if touch is not None and e["src"] not in touch and e["dst"] not in touch:
            continue
        if rel_types is not None and e["rel_type"] not in rel_types:
            continue
        if window is not None and not overlaps(e, window[0], window[1]):
            continue
        out.append(e)
    return out


def _ref(e: dict[str, Any]) -> dict[str, Any]:
    keys = ("vid", "eid", "src", "dst", "rel_type", "vt_s", "vt_e")
    return {k: e[k] for k in keys}


def oracle_co_active(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["a_spec", "b_spec", "allen_relation"], ["gap"], "co_active")
    a = as_of_arg(args)
    rel = choice_arg(args, "allen_relation", ALLEN_RELATIONS, None)
    gap = int_arg(args, "gap", None, 1, 2**62 - 1)
    if gap is not None and rel not in ("before", "after"):
        raise InvalidArgError("gap is only for before/after", field="gap")
    edges = store.believed_edges(a)
    sel_a = sorted(_select(store, a, args["a_spec"], "a_spec", edges), key=edge_key)
    sel_b = sorted(_select(store, a, args["b_spec"], "b_spec", edges), key=edge_key)
    rows = []
    for x in sel_a:
        for y in sel_b:
            if x["vid"] == y["vid"]:
                continue  # a version is not paired with itself
            if allen(x["vt_s"], x["vt_e"], y["vt_s"], y["vt_e"]) != rel:
                continue
            # the idle time between the earlier interval's end and the later one's start
            idle = y["vt_s"] - x["vt_e"] if rel == "before" else x["vt_s"] - y["vt_e"]
            if gap is not None and idle > gap:
                continue
            rows.append({"a": _ref(x), "b": _ref(y)})
    return canonicalize({"rows": rows, "rows_total": len(rows)})
