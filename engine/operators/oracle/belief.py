"""Oracle of belief_changes: what the store's belief gained and lost between two transaction times.

Brute force over every version row (closed ones included): for each identity (a node uid, an edge eid) and
each batch time ``tt`` in the window, the versions the batch closed (``tt_e == tt``) are matched against
the versions it created (``tt_s == tt``), by scanning both lists whole. Reference: docs/operators.md §17.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.errors import InvalidArgError, NotFoundError
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    check_keys,
    edge_row,
    node_row,
    str_arg,
    str_list_arg,
    time_arg,
)
from tgms.engine.timeutil import OPEN_END

KINDS = ("asserted", "corrected", "retracted", "closed")
#: what a version says besides where it sits in time (and its own ids): equal content = same fact
_NOT_CONTENT = ("vid", "vt_s", "vt_e", "tt_s", "tt_e")


def _same_content(x: dict[str, Any], y: dict[str, Any]) -> bool:
    return all(x[k] == y[k] for k in x if k not in _NOT_CONTENT)


def _inside(x: dict[str, Any], y: dict[str, Any]) -> bool:
    return y["vt_s"] <= x["vt_s"] and x["vt_e"] <= y["vt_e"]


def _overlap(x: dict[str, Any], y: dict[str, Any]) -> bool:
    return x["vt_s"] < y["vt_e"] and y["vt_s"] < x["vt_e"]


def _batch_changes(closed: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    """(change, before, after) for one identity and one batch."""
    remainders = [n for n in new if any(_same_content(n, c) and _inside(n, c) for c in closed)]
    fresh = [n for n in new if n not in remainders]
    out: list[tuple[str, Any, Any]] = []
    for n in fresh:
        hit = [c for c in closed if _overlap(n, c)]
        if not hit:
            out.append(("asserted", None, n))
        out += [("corrected", c, n) for c in hit]
    for c in closed:
        if any(_overlap(n, c) for n in fresh):
            continue  # reported as corrected above
        kept = [n for n in remainders if _same_content(n, c) and _inside(n, c)]
        if kept:
            out += [("closed", c, n) for n in kept]
        else:
            out.append(("retracted", c, None))
    return out


def oracle_belief_changes(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["tt_from", "tt_to"], ["uid", "kinds"], "belief_changes")
    tt_from = time_arg(args["tt_from"], "tt_from")
    tt_to = time_arg(args["tt_to"], "tt_to", allow_open_end=True)
    uid = str_arg(args, "uid")
    kinds = str_list_arg(args, "kinds")
    for k in kinds or []:
        if k not in KINDS:
            raise InvalidArgError(
                f"kinds: {k!r} is not one of {list(KINDS)}", field="kinds", legal=list(KINDS)
            )
    as_of = as_of_arg(args)
    if tt_from >= tt_to:
        raise InvalidArgError("tt_from must be < tt_to", field="tt_from")
    # the horizon: batches at tt < H are seen; later closures of what they created are not
    horizon = tt_to if as_of is None else min(tt_to, as_of + 1)

    nodes = [v for v in store.nodes if uid is None or v["uid"] == uid]
    edges = [v for v in store.edges if uid is None or uid in (v["src"], v["dst"])]
    if uid is not None and not any(v["tt_s"] < horizon for v in nodes + edges):
        raise NotFoundError(f"unknown uid {uid!r}", field="uid", uids=[uid])

    def shown(v: dict[str, Any] | None, row: Any) -> dict[str, Any] | None:
        if v is None:
            return None
        out = row(v)
        if out["tt_e"] >= horizon:
            out["tt_e"] = OPEN_END
        return out

    rows = []
    for entity, versions, id_key, row in (("node", nodes, "uid", node_row), ("edge", edges, "eid", edge_row)):
        # grouped by identity in one pass (a scan of every version per identity was quadratic: 37 s per
        # call on CollegeMsg, which the suite's gold cross-check makes for every belief-history task)
        by_ident: dict[Any, list[dict[str, Any]]] = {}
        for v in versions:
            by_ident.setdefault(v[id_key], []).append(v)
        for ident, mine in by_ident.items():
            times = {v["tt_s"] for v in mine} | {v["tt_e"] for v in mine}
            for tt in sorted(t for t in times if tt_from <= t < horizon):
                closed = [v for v in mine if v["tt_e"] == tt]
                new = [v for v in mine if v["tt_s"] == tt]
                for change, before, after in _batch_changes(closed, new):
                    if kinds is not None and change not in kinds:
                        continue
                    rows.append(
                        {
                            "tt": tt,
                            "change": change,
                            "entity": entity,
                            "uid": ident if entity == "node" else None,
                            "eid": ident if entity == "edge" else None,
                            "before": shown(before, row),
                            "after": shown(after, row),
                        }
                    )

    def order(r: dict[str, Any]) -> tuple[Any, ...]:
        main = r["after"] if r["after"] is not None else r["before"]
        tie = (0, 0) if r["before"] is None else (1, r["before"]["vid"])
        ident = r["uid"] if r["entity"] == "node" else r["eid"]
        return (r["tt"], r["entity"], ident, main["vid"], tie)

    rows.sort(key=order)
    return {"rows": rows, "rows_total": len(rows)}
