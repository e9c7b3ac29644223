"""The kinds of correction probe (:mod:`pipeline.tasks.probes`), one registered class each.

A kind registers with :func:`probe_kind`, which carries its question template (answer kind, the oracle
plan's operators, three paraphrases with a ``{belief}`` field); the class carries its two parts:

- ``pick(sampler, ledger, round) -> (ops, nodes, spans) | None``: one candidate correction batch drawn
  from the store (``None``: try another draw), with the nodes it touches and the valid-time spans it
  reserves in the :class:`Ledger`, so probes stay independent;
- ``question(ops) -> (params, input uids, oracle steps, answer ref)``: the question about that batch,
  rebuilt from its logged ops alone (never from new draws, so a replayed store gives the same questions).

Kinds span several operator families (DESIGN §4): ``events`` (metrics), ``reach`` (traversal),
``contacts`` (evolution), ``versions`` (history) and ``property`` (edge weights, only where edges carry
a numeric property: ``needs_props``). Registration order is the kinds' order; each kind's random stream
is seeded by its position, so a kind added later leaves the earlier kinds' draws unchanged.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from tgms.engine.api import OPEN_END, OpContext, call
from tgms.pipeline.tasks.model import Draft, Template, ref, step
from tgms.pipeline.tasks.sampler import DAY, HOUR, SECOND, WEEK, Sampler, fmt_time, window_words

FULL = 10_000  # page limit for lists a later step reads
MAX_RUN = 3 * DAY  # a `versions` correction merges events at most this far apart

Op = dict[str, Any]
Span = tuple[int, int]
Picked = tuple[list[Op], set[str], list[Span]] | None  # (ops, nodes touched, spans reserved)
Question = tuple[dict[str, Any], tuple[str, ...], list[dict[str, Any]], str]


class ProbeParts(Protocol):
    """What a probe kind's class provides."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, round_: int) -> Picked: ...

    @staticmethod
    def question(ops: list[Op]) -> Question: ...


@dataclass(frozen=True)
class ProbeKind:
    name: str
    template: Template
    pick: Callable[[Sampler, Ledger, int], Picked]
    question: Callable[[list[Op]], Question]
    needs_props: bool = False  # only on stores whose edges carry a numeric property


PROBE_KINDS: dict[str, ProbeKind] = {}


def _no_draw(_: Sampler) -> Draft | None:
    return None  # probes are built from the event log, never drawn


def probe_kind(
    name: str,
    *,
    answer: str,
    ops: tuple[str, ...],
    paraphrases: tuple[str, str, str],
    needs_props: bool = False,
) -> Callable[[type[ProbeParts]], type[ProbeParts]]:
    """Register a probe kind: its question template (``probe.NAME``) and its class's ``pick``/``question``."""
    if len(paraphrases) != 3 or len(set(paraphrases)) != 3:
        raise ValueError(f"probe kind {name}: three distinct paraphrases are required")

    def register(cls: type[ProbeParts]) -> type[ProbeParts]:
        if name in PROBE_KINDS:
            raise RuntimeError(f"probe kind {name!r} registered twice")
        tmpl = Template(f"probe.{name}", "probe", answer, paraphrases, _no_draw, None, ops)
        PROBE_KINDS[name] = ProbeKind(name, tmpl, cls.pick, cls.question, needs_props)
        return cls

    return register


@contextlib.contextmanager
def registered_probe_kind(name: str, parts: type[ProbeParts], **template: Any) -> Iterator[ProbeKind]:
    """Register a probe kind for the duration of a ``with`` block (tests and experiments), then remove it."""
    probe_kind(name, **template)(parts)
    try:
        yield PROBE_KINDS[name]
    finally:
        del PROBE_KINDS[name]


# -- what the kinds share ----------------------------------------------------------------------------------
class Ledger:
    """Nodes and valid-time spans already used by probes (or off limits), so probes stay independent."""

    def __init__(self, blocked: set[str]) -> None:
        self.nodes = set(blocked)
        self.spans: list[Span] = []

    def free(self, *uids: str) -> bool:
        return not any(u in self.nodes for u in uids)

    def free_span(self, s: int, e: int) -> bool:
        return all(e <= a or s >= b for a, b in self.spans)

    def take(self, uids: set[str], spans: list[Span]) -> None:
        self.nodes |= uids
        self.spans += spans


def _edge_op(src: str, dst: str, rel: str, t: int, props: dict[str, Any]) -> Op:
    return dict(op="assert_edge", src=src, dst=dst, rel_type=rel, props=props, vt_s=t, vt_e=t + 1)


def _events_of(ctx: OpContext, u: str) -> list[dict[str, Any]]:
    """Every believed edge version touching ``u``, by (vt_s, eid, vid): read off the edge arrays, which
    costs far less than an ``entity_history`` envelope of a busy node (and is never cut at a page)."""
    e, nid = ctx.edges(None), ctx.nid(u)
    pos = np.flatnonzero((e.src == nid) | (e.dst == nid))
    return ctx.edge_rows(e.rows(pos, ["vid", "src", "dst", "rel_type", "disc", "props", "vt_s", "vt_e"]))


def _instant(e: dict[str, Any]) -> bool:
    return bool(e["vt_e"] == e["vt_s"] + 1)


def _instants(evs: list[dict[str, Any]], src: str | None = None) -> list[dict[str, Any]]:
    return [e for e in evs if _instant(e) and (src is None or e["src"] == src)]


def _other(e: dict[str, Any], u: str) -> str:
    return e["dst"] if e["src"] == u else e["src"]


def _strangers(s: Sampler, led: Ledger, avoid: set[str], n: int) -> list[str]:
    out: list[str] = []
    for _ in range(10 * n):
        x = s.active_uid()
        if x not in avoid and x not in out and led.free(x):
            out.append(x)
            if len(out) == n:
                break
    return out


def _overlaps(versions: list[dict[str, Any]], op: Op) -> bool:
    """Whether a version of the op's edge identity (disc "") overlaps its valid interval."""
    return any(
        (v["src"], v["dst"], v["rel_type"], v.get("disc", "")) == (op["src"], op["dst"], op["rel_type"], "")
        and v["vt_s"] < op["vt_e"]
        and op["vt_s"] < v["vt_e"]
        for v in versions
    )


def _someone(s: Sampler) -> str:
    """A busy node half of the time, else any active one."""
    return s.busy_uid() if s.rng.random() < 0.5 else s.active_uid()


def numeric_prop_key(props: dict[str, Any]) -> str | None:
    keys = [k for k in sorted(props) if isinstance(props[k], int | float) and not isinstance(props[k], bool)]
    return keys[0] if keys else None


def sample_props(ctx: OpContext, n: int = 200) -> list[dict[str, Any]]:
    """The props of ``n`` evenly spaced believed edge versions."""
    edges = ctx.edges(None)
    pos = np.linspace(0, edges.n - 1, num=min(edges.n, n), dtype=np.int64)
    return [json.loads(p) for p in edges.col_at("props", pos).to_pylist() if p]


def _values(ctx: OpContext, key: str) -> set[Any]:
    return {p[key] for p in sample_props(ctx) if numeric_prop_key(p) == key}


# -- the kinds ------------------------------------------------------------------------------------------
@probe_kind(
    "events",
    answer="count",
    ops=("graph_metric_timeseries",),
    paraphrases=(
        "How many edge events started during the day [{t_a}, {t_b}), {belief}?",
        "Counting {belief}, how many edge events have a start time in the 24 hours from {t_a}?",
        "In the day from {t_a} to {t_b}, how many interactions took place, {belief}?",
    ),
)
class EventsProbe:
    """Late-arriving events of a busy node on one day: the day's event count changes (metrics)."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, _round: int) -> Picked:
        u = s.busy_uid()
        if not led.free(u):
            return None
        every = _events_of(s.ctx, u)
        evs = _instants(every)
        if not evs:
            return None
        e = s.choice(evs)
        day = s.day_start(e["vt_s"])
        contacts = sorted({_other(x, u) for x in evs} - {u})
        dsts = [d for d in contacts if led.free(d)]
        if not dsts or not led.free_span(day, day + DAY):
            return None
        ops: list[Op] = []
        for _ in range(int(s.rng.integers(2, 6))):
            d = s.choice(dsts)
            t = day + int(s.rng.integers(0, DAY // SECOND)) * SECOND
            new = _edge_op(u, d, e["rel_type"], t, e["props"])
            if not _overlaps(every, new) and not _overlaps(ops, new):  # it must not carve a recorded event
                ops.append(new)
        if len(ops) < 2:
            return None
        ops.sort(key=lambda o: (o["vt_s"], o["dst"]))
        return ops, {u, *(o["dst"] for o in ops)}, [(day, day + DAY)]

    @staticmethod
    def question(ops: list[Op]) -> Question:
        first = ops[0]
        t_a = first["vt_s"] - first["vt_s"] % DAY
        w = {"t_a": t_a, "t_b": t_a + DAY}
        args = {"metric": "edge_event_count", "window": w, "stride": DAY}
        return window_words(w), (), [step("s1", "graph_metric_timeseries", args)], "s1.rows[0].value"


@probe_kind(
    "reach",
    answer="count",
    ops=("temporal_reachability",),
    paraphrases=(
        "How many nodes can {u} reach by time-respecting paths between {t_a} and {t_b}, {belief}?",
        "Going by the graph {belief}: starting at {u} at {t_a}, how many distinct nodes can be reached "
        "along time-respecting paths before {t_b}?",
        "Count the nodes reachable from {u} by a time-respecting walk in the window [{t_a}, {t_b}), "
        "{belief}.",
    ),
)
class ReachProbe:
    """An early event to a node it could not reach: the reachable set of a day grows (traversal)."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, _round: int) -> Picked:
        u = _someone(s)
        evs = _instants(_events_of(s.ctx, u), src=u) if led.free(u) else []
        if not evs:
            return None
        e = s.choice(evs)
        day = s.day_start(e["vt_s"])
        if not led.free_span(day, day + DAY):
            return None
        reach = s.reachable(u, {"t_a": day, "t_b": day + DAY})
        xs = _strangers(s, led, {u, *reach}, 1) if reach else []  # before: at least one node reached
        if not xs:
            return None
        t0 = day + int(s.rng.integers(0, 6 * HOUR // SECOND)) * SECOND  # early in the window
        return [_edge_op(u, xs[0], e["rel_type"], t0, e["props"])], {u, xs[0]}, [(day, day + DAY)]

    @staticmethod
    def question(ops: list[Op]) -> Question:
        first = ops[0]
        u, t_a = first["src"], first["vt_s"] - first["vt_s"] % DAY
        w = {"t_a": t_a, "t_b": t_a + DAY}
        p = {"u": u, **window_words(w)}
        return p, (u,), [step("s1", "temporal_reachability", {"src": u, "window": w})], "s1.rows_total"


@probe_kind(
    "contacts",
    answer="count",
    ops=("neighborhood_evolution",),
    paraphrases=(
        "How many contacts did {u} have during [{t1}, {t2}) that it had never had before {t1}, {belief}?",
        "Counting a contact as any node joined to {u} by an edge in either direction, and going by the "
        "graph {belief}, how many new contacts did {u} gain between {t1} and {t2}?",
        "From {t1} to {t2}, how many neighbours of {u} were new (not seen before {t1}), {belief}?",
    ),
)
class ContactsProbe:
    """Events to strangers in a week: the node's newly gained contacts change (evolution)."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, _round: int) -> Picked:
        u = _someone(s)
        every = _events_of(s.ctx, u) if led.free(u) else []
        evs = _instants(every)
        if not evs:
            return None
        e = s.choice(evs)
        t1 = s.day_start(e["vt_s"])
        if not led.free_span(t1, t1 + WEEK):
            return None
        env = call(s.ctx, "neighborhood_evolution", {"uid": u, "t1": t1, "t2": t1 + WEEK}, check_cost=False)
        if env["payload"]["neighbors_gained_total"] == 0:
            return None  # the before half would be a degenerate zero
        xs = _strangers(s, led, {u, *(_other(x, u) for x in every)}, int(s.rng.integers(1, 4)))
        if not xs:
            return None
        ts = sorted(t1 + int(s.rng.integers(0, DAY // SECOND)) * SECOND for _ in xs)
        ops = [_edge_op(u, x, e["rel_type"], t, e["props"]) for x, t in zip(xs, ts, strict=True)]
        return ops, {u, *xs}, [(t1, t1 + WEEK)]

    @staticmethod
    def question(ops: list[Op]) -> Question:
        first = ops[0]
        u = first["src"]
        t1 = min(o["vt_s"] for o in ops)
        t1 -= t1 % DAY
        args = {"uid": u, "t1": t1, "t2": t1 + WEEK}
        p = {"u": u, "t1": fmt_time(t1), "t2": fmt_time(t1 + WEEK)}
        return p, (u,), [step("s1", "neighborhood_evolution", args)], "s1.neighbors_gained_total"


@probe_kind(
    "versions",
    answer="count",
    ops=("entity_history",),
    paraphrases=(
        "How many edge versions touching {u} (as either endpoint) are believed over its whole history, "
        "{belief}?",
        "Going by the graph {belief}, how many believed edge versions have {u} as source or target?",
        "Count the edge versions in the history of node {u}, across all valid time, {belief}.",
    ),
)
class VersionsProbe:
    """A ``correct`` merging instants or splitting an interval: the version count changes (history)."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, round_: int) -> Picked:
        """Odd rounds prefer splitting an interval-valued version (where there are any)."""
        u = s.active_uid()
        if not led.free(u):
            return None
        idents: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for e in _events_of(s.ctx, u):
            if e["src"] == u and e["dst"] != u and led.free(e["dst"]):
                idents.setdefault((e["dst"], e["rel_type"], e["disc"]), []).append(e)
        runs: list[tuple[tuple[str, str, str], int, int, dict[str, Any]]] = []  # merge instants into one
        cuts: list[tuple[tuple[str, str, str], int, int, dict[str, Any]]] = []  # split an interval in three
        for key, vs in sorted(idents.items()):
            vs.sort(key=lambda v: v["vt_s"])
            for i, v in enumerate(vs):
                length = v["vt_e"] - v["vt_s"]
                if length == 1:
                    j = i + 1
                    while (
                        j < len(vs) and j - i < 4 and _instant(vs[j]) and vs[j]["vt_s"] - v["vt_s"] <= MAX_RUN
                    ):
                        j += 1
                    if j - i >= 2:  # vs[i:j] become one version over [first, last + 1)
                        runs.append((key, v["vt_s"], vs[j - 1]["vt_s"] + 1, v["props"]))
                elif length >= 3 * SECOND:  # a sub-interval strictly inside: three fragments
                    third = DAY if v["vt_e"] >= OPEN_END else min(DAY, length // 3 // SECOND * SECOND)
                    a = v["vt_s"] + third
                    if v["vt_s"] < a < a + third < v["vt_e"]:
                        cuts.append((key, a, a + third, v["props"]))
        pool = next((p for p in ([cuts, runs] if round_ % 2 else [runs, cuts]) if p), None)
        if not pool:
            return None
        (dst, rel, disc), a, b, props = s.choice(pool)
        if not led.free_span(a, b):
            return None
        op = {
            "op": "correct",
            "ref": {"src": u, "dst": dst, "rel_type": rel, "disc": disc},
            "props": {**props, "corrected": True},
            "vt_s": a,
            "vt_e": b,
        }
        return [op], {u, dst}, [(a, b)]

    @staticmethod
    def question(ops: list[Op]) -> Question:
        first = ops[0]
        u = first["ref"]["src"]
        steps = [step("s1", "entity_history", {"uid": u, "include_edges": True})]
        return {"u": u}, (u,), steps, "s1.edges_total"


@probe_kind(
    "property",
    answer="value",
    ops=("snapshot_subgraph", "compute"),
    paraphrases=(
        "What is the {key} of the {rel} edge from {u} to {v} that is valid at {t}, {belief}?",
        "Going by the graph {belief}, which {key} value does the {rel} event {u} → {v} at {t} carry?",
        "Give the `{key}` property of the edge {u} → {v} ({rel}) at {t}, {belief}.",
    ),
    needs_props=True,
)
class PropertyProbe:
    """A ``correct`` of one event's numeric property: the value read off the edge changes (weights)."""

    @staticmethod
    def pick(s: Sampler, led: Ledger, _round: int) -> Picked:
        u = s.active_uid()
        evs = _instants(_events_of(s.ctx, u), src=u) if led.free(u) else []
        evs = [e for e in evs if numeric_prop_key(e["props"]) and e["dst"] != u]
        if not evs:
            return None
        e = s.choice(evs)
        v, t, key = e["dst"], e["vt_s"], numeric_prop_key(e["props"])
        assert key is not None
        if not led.free(v) or not led.free_span(t, t + 1):
            return None
        args = {"seeds": [u], "t_valid": t, "hops": 1, "rel_types": [e["rel_type"]], "limit": FULL}
        rows = call(s.ctx, "snapshot_subgraph", args, check_cost=False)["payload"]["rows"]
        if [r["vid"] for r in rows if r["dst"] == v] != [e["vid"]]:
            return None  # the question's filter must single out this event
        values = sorted(_values(s.ctx, key) | {x["props"][key] for x in evs if key in x["props"]})
        values.remove(e["props"][key])
        if not values:
            return None
        new = s.choice(values)  # a value the data set uses, so the correction stays in its domain
        ref_ = {"src": u, "dst": v, "rel_type": e["rel_type"], "disc": e["disc"]}
        op = {"op": "correct", "ref": ref_, "props": {**e["props"], key: new}, "vt_s": t, "vt_e": t + 1}
        return [op], {u, v}, [(t, t + 1)]

    @staticmethod
    def question(ops: list[Op]) -> Question:
        first = ops[0]
        r, t = first["ref"], first["vt_s"]
        key = numeric_prop_key(first["props"])
        u, v = r["src"], r["dst"]
        args = {"seeds": [u], "t_valid": t, "hops": 1, "rel_types": [r["rel_type"]], "limit": FULL}
        flt = {"fn": "filter", "input": ref("s1.rows"), "field": "dst", "cmp": "==", "value": v}
        steps = [step("s1", "snapshot_subgraph", args), step("s2", "compute", {**flt, "limit": FULL}, "s1")]
        p = {"u": u, "v": v, "t": fmt_time(t), "key": key, "rel": r["rel_type"]}
        return p, (u, v), steps, f"s2.rows[0].props.{key}"
