"""Oracle of resolve_entities: names or user identifiers to uids.

Each uid known at the belief state is represented by its *latest* believed node version (greatest
(vt_s, vid)); its label and ``props.name`` (a string, else null) come from that version. Matching tiers
are tried in order and only the first non-empty tier is returned:

1. ``uid``    — uid == query (exact), or query is decimal digits d and uid == "n" + d (SNAP ids);
2. ``name``   — norm(name) == norm(query);
3. ``prefix`` — norm(name) starts with norm(query);

with norm(s) = casefold, whitespace runs collapsed to one space, stripped.
"""

from __future__ import annotations

from typing import Any

from tgms.engine.canonical import canonicalize
from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.oracle.store import OracleStore, as_of_arg, check_keys, str_arg

MAX_QUERY = 200


def norm(s: str) -> str:
    return " ".join(s.casefold().split())


def oracle_resolve_entities(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["query"], ["label"], "resolve_entities")
    a = as_of_arg(args)
    query = str_arg(args, "query")
    assert query is not None
    label = str_arg(args, "label")
    q = query.strip()
    if not q or len(q) > MAX_QUERY:
        raise InvalidArgError(f"query must have 1..{MAX_QUERY} non-blank characters", field="query")
    latest: dict[str, dict[str, Any]] = {}
    for v in store.believed_nodes(a):
        cur = latest.get(v["uid"])
        if cur is None or (v["vt_s"], v["vid"]) > (cur["vt_s"], cur["vid"]):
            latest[v["uid"]] = v
    cands: list[dict[str, Any]] = []
    for uid in sorted(store.known_uids(a)):
        node = latest.get(uid)
        name = node["props"].get("name") if node is not None else None
        cand = {
            "uid": uid,
            "label": node["label"] if node is not None else None,
            "name": name if isinstance(name, str) else None,
        }
        if label is not None and cand["label"] != label:
            continue
        cands.append(cand)
    nq = norm(q)
    tiers = (
        ("uid", lambda c: c["uid"] == q or (q.isdecimal() and q.isascii() and c["uid"] == "n" + q)),
        ("name", lambda c: c["name"] is not None and norm(c["name"]) == nq),
        ("prefix", lambda c: c["name"] is not None and norm(c["name"]).startswith(nq)),
    )
    rows: list[dict[str, Any]] = []
    for match, pred in tiers:
        rows = [{**c, "match": match} for c in cands if pred(c)]
        if rows:
            break
    return canonicalize({"rows": rows, "rows_total": len(rows)})
