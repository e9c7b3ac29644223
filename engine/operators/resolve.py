"""Entity resolution (O12): resolve_entities — names or user identifiers to uids.

Fast path: per belief state the context caches a small index built from the believed node versions and
the uid dictionary — every known uid with the label and ``props.name`` of its latest believed version
(greatest ``(vt_s, vid)``), a dict from normalized name to candidates, and the normalized names sorted
for prefix search. A call is then a dictionary lookup (uid tier), a hash lookup (name tier) or a
binary search (prefix tier). Semantics: ``docs/operators.md`` §13.
"""

from __future__ import annotations

import bisect
import json
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import Field, field_validator

from tgms.engine.operators.base import Model, OpArgs, PagedOutput, invalid
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import CostEstimate, StoreProfile
from tgms.engine.operators.registry import operator

MAX_QUERY = 200


def normalize(text: str) -> str:
    """casefold, whitespace runs collapsed to one space, stripped."""
    return " ".join(text.casefold().split())


class ResolveArgs(OpArgs):
    query: Annotated[
        str, Field(description=f"a uid, SNAP id digits, or a name (at most {MAX_QUERY} characters)")
    ]
    label: Annotated[str | None, Field(description="only entities whose latest label is exactly this")] = None

    @field_validator("query")
    @classmethod
    def _non_blank(cls, q: str) -> str:
        stripped = q.strip()
        if not stripped or len(stripped) > MAX_QUERY:
            raise invalid(f"query must have 1..{MAX_QUERY} non-blank characters (got {len(stripped)})")
        return q


class ResolvedEntity(Model):
    uid: str
    label: str | None
    name: str | None
    match: str


class ResolveOut(PagedOutput):
    rows: list[ResolvedEntity]
    rows_total: int


@dataclass(frozen=True)
class Candidate:
    uid: str
    label: str | None
    name: str | None


@dataclass(frozen=True)
class ResolveIndex:
    """The candidates of one belief state, and the lookups of the three tiers."""

    by_uid: dict[str, Candidate]
    by_name: dict[str, list[Candidate]]
    names: list[str]  # sorted normalized names (with repeats), parallel to ``named``
    named: list[Candidate]


def _name_of(props: str | None) -> str | None:
    if not props or '"name"' not in props:
        return None
    name = json.loads(props).get("name")
    return name if isinstance(name, str) else None


def _build_index(ctx: OpContext, as_of_tt: int | None) -> ResolveIndex:
    uids = ctx.uids()
    known = ctx.known_nids(as_of_tt)
    nodes = ctx.nodes(as_of_tt)
    latest: dict[int, tuple[str | None, str | None]] = {}
    if nodes.num_rows:
        nid = nodes["nid"].to_numpy()
        order = np.lexsort((nodes["vid"].to_numpy(), nodes["vt_s"].to_numpy(), nid))
        last = order[np.append(nid[order][1:] != nid[order][:-1], True)]  # the last row of each nid
        labels = nodes["label"].to_pylist()
        props = nodes["props"].to_pylist()
        for i in last.tolist():
            latest[int(nid[i])] = (labels[i], _name_of(props[i]))
    by_uid: dict[str, Candidate] = {}
    for n in np.nonzero(known)[0].tolist():
        label, name = latest.get(n, (None, None))
        by_uid[uids[n]] = Candidate(uids[n], label, name)
    by_name: dict[str, list[Candidate]] = {}
    for c in by_uid.values():
        if c.name is not None:
            by_name.setdefault(normalize(c.name), []).append(c)
    pairs = sorted(((k, c) for k, cs in by_name.items() for c in cs), key=lambda p: (p[0], p[1].uid))
    return ResolveIndex(by_uid, by_name, [k for k, _ in pairs], [c for _, c in pairs])


def _uid_tier(idx: ResolveIndex, q: str) -> list[Candidate]:
    keys = [q]
    if q.isascii() and q.isdigit():
        keys.append("n" + q)  # SNAP node id digits -> uid n<id>
    return [idx.by_uid[k] for k in keys if k in idx.by_uid]


def _prefix_tier(idx: ResolveIndex, nq: str) -> list[Candidate]:
    out = []
    i = bisect.bisect_left(idx.names, nq)
    while i < len(idx.names) and idx.names[i].startswith(nq):
        out.append(idx.named[i])
        i += 1
    return out


def _resolve_cost(p: StoreProfile, a: ResolveArgs) -> CostEstimate:
    # priced as a cold call: the index is built once per belief state (~7 µs per entity: scan, props
    # parse, normalize); lookups in a built index take milliseconds
    est = CostEstimate({"scan_row": p.n_nodes * 35, "row_out": min(p.n_nodes, 1000)})
    est.suggestions.append(
        f"use a budget of at least {est.seconds:.2f} s: the first call indexes all {p.n_nodes} entities"
    )
    return est


@operator(
    name="resolve_entities",
    edge_arrays=False,  # node tables and edge statistics only
    family="resolve",
    args=ResolveArgs,
    output=ResolveOut,
    cost=_resolve_cost,
    manual=(
        "Resolves a name or identifier in the question to uids, the only operator that may introduce an "
        "identifier not given in the task. Tiers are tried in order and only the first that matches is "
        "returned: `uid` (query equals a uid, or query is digits d and the uid is n<d>), `name` (the "
        "latest believed props.name equals the query, case- and whitespace-insensitive), `prefix` (that "
        "name starts with the query). Rows {uid, label, name, match} by uid; label filters exactly; no "
        "match gives rows = [], not an error."
    ),
    example={
        "args": {"query": "Alice Smith", "label": "person"},
        "outputs": ["rows", "rows_total"],
        "note": 'in a plan, later steps take the uid as {"$ref": "s1.rows[0].uid"}',
    },
)
def resolve_entities(ctx: OpContext, a: ResolveArgs) -> dict[str, Any]:
    idx: ResolveIndex = ctx.cached(("resolve_index", a.as_of_tt), lambda: _build_index(ctx, a.as_of_tt))
    q = a.query.strip()
    nq = normalize(q)

    def admit(cs: list[Candidate]) -> list[Candidate]:
        return [c for c in cs if c.label == a.label] if a.label is not None else cs

    rows: list[dict[str, Any]] = []
    tiers = (
        ("uid", lambda: _uid_tier(idx, q)),
        ("name", lambda: idx.by_name.get(nq, [])),
        ("prefix", lambda: _prefix_tier(idx, nq)),
    )
    for match, candidates in tiers:
        hits = sorted(admit(candidates()), key=lambda c: c.uid)
        if hits:
            rows = [{"uid": c.uid, "label": c.label, "name": c.name, "match": match} for c in hits]
            break
    return {"rows": rows, "rows_total": len(rows)}
