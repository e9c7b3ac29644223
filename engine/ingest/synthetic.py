"""A seeded synthetic temporal graph with known gold (DESIGN §4 "Datasets").

``generate(n_nodes, n_events, seed, **knobs)`` returns a :class:`SyntheticDataset`: two event frames, a
JSON-able ``manifest`` (the gold of pattern-mining tasks) and ``corrections`` (write batches for a second
belief epoch). The same seed and knobs give the same bytes on every run (numpy ``Generator`` streams spawned
from one ``SeedSequence``, one per component, consumed in a fixed order).

Content
- Nodes ``s0 .. s<n-1>`` (label ``user``) in contiguous communities (``manifest["communities"]["offsets"]``:
  community ``c`` holds ``s<k>`` for ``offsets[c] <= k < offsets[c+1]``). A share ``p_intra`` of events
  pick their target inside the source's community.
- Heavy-tailed activity: node weights are Pareto(``activity_alpha``) + 1; sources and targets are drawn in
  proportion to them.
- ``msg`` events (instantaneous, whole seconds, props ``{"w": 1..5}``) over ``days`` days from ``start_us``,
  at a flat hourly rate except in ``n_bursts`` global burst windows of ``burst_hours`` hours where the rate
  is ``burst_multiplier`` times higher (burst windows start on hour boundaries).
- ``follows`` edges are interval-valued: ``[t, t_end)`` lasting days (exponential, mean
  ``follows_mean_days``, at least one hour), a share ``follows_open_fraction`` open-ended
  (``t_end = OPEN_END``). Each (src, dst) pair has at most one follows interval, so none overlap.
- Planted cyclic triangles (``M_triangle_cyclic``: u→v, v→w, w→u) and ping-pongs (``M_2node_pingpong``:
  u→v, v→u, u→v) as ``msg`` events at whole seconds, strictly increasing, last minus first ``<= delta``.
  Every planted pattern has its own nodes, and no other event (of any rel type) joins two of its nodes
  inside its ``isolation_window`` ``[t_first - delta, t_last + delta + 1)``: restricted to its nodes and
  that window the planted instance is the only one. Corrections never touch planted nodes.

``n_events`` counts all rows: ``msg`` rows (planted included) plus ``follows`` rows.

Corrections (three batches, in the store's write-op JSON): ``correct`` of a follows interval over
``[a, b)`` strictly inside it (3 fragments) and of single msg events' props over ``[t, t+1)``; ``retract``
of follows intervals at a ``t`` strictly inside; ``assert_edge`` of late-arriving msg events and follows
intervals that overlap no existing version of their identity.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.canonical import dumps
from engine.errors import InvalidArgError, NotFoundError
from engine.ingest.events import EventFrame, make_table, props_text
from engine.timeutil import OPEN_END, US_PER_SECOND

GENERATOR_VERSION = "tgms-synthetic-v1"
HOUR_S = 3600
DAY_S = 86_400
_W_MAX = 5
_STRENGTHS = tuple(round(0.1 * k, 1) for k in range(1, 11))


@dataclass(frozen=True, slots=True)
class SyntheticConfig:
    """Every parameter of the generator (all JSON-able; recorded in the manifest)."""

    n_nodes: int = 1000
    n_events: int = 100_000
    seed: int = 0
    n_communities: int | None = None  # None: max(1, round(sqrt(n_nodes) / 2))
    p_intra: float = 0.85
    activity_alpha: float = 1.3
    start_us: int = 1_704_067_200 * US_PER_SECOND  # 2024-01-01T00:00:00Z
    days: int = 60
    n_bursts: int = 2
    burst_hours: int = 6
    burst_multiplier: float = 8.0
    n_rings: int = 8
    n_pingpongs: int = 8
    delta_s: int = 3600
    follows_fraction: float = 0.05
    follows_mean_days: float = 3.0
    follows_open_fraction: float = 0.1
    n_interval_corrections: int = 6
    n_event_corrections: int = 6
    n_retracts: int = 4
    n_late_facts: int = 4
    chunk_rows: int = 1 << 20

    def communities(self) -> int:
        if self.n_communities is not None:
            return self.n_communities
        return max(1, min(self.n_nodes // 2, round(float(np.sqrt(self.n_nodes)) / 2)))

    @property
    def n_follows(self) -> int:
        return round(self.follows_fraction * self.n_events)

    @property
    def n_planted_events(self) -> int:
        return 3 * (self.n_rings + self.n_pingpongs)


@dataclass(frozen=True)
class SyntheticDataset:
    """The generator's output: frames (``msg``, ``follows``), the gold manifest and correction batches."""

    frames: tuple[EventFrame, ...]
    manifest: dict[str, Any]
    corrections: list[list[dict[str, Any]]] = field(default_factory=list)

    def frame(self, rel_type: str) -> EventFrame:
        for f in self.frames:
            if f.rel_type == rel_type:
                return f
        raise NotFoundError(
            f"no {rel_type!r} frame", rel_type=rel_type, known=[f.rel_type for f in self.frames]
        )

    @property
    def events(self) -> EventFrame:
        return self.frame("msg")

    @property
    def follows(self) -> EventFrame:
        return self.frame("follows")

    @property
    def num_rows(self) -> int:
        return sum(f.num_rows for f in self.frames)

    def manifest_json(self) -> str:
        return dumps(self.manifest)


def generate(n_nodes: int = 1000, n_events: int = 100_000, seed: int = 0, **knobs: Any) -> SyntheticDataset:
    """Generate a synthetic data set; ``knobs`` are the other :class:`SyntheticConfig` fields."""
    names = {f.name for f in dataclasses.fields(SyntheticConfig)}
    unknown = sorted(set(knobs) - names)
    if unknown:
        raise InvalidArgError(
            f"unknown synthetic knob(s): {', '.join(unknown)}", unknown=unknown, known=sorted(names)
        )
    return generate_from_config(SyntheticConfig(n_nodes=n_nodes, n_events=n_events, seed=seed, **knobs))


# ---- validation -----------------------------------------------------------------------------------------
def _check_int(cfg: SyntheticConfig, name: str, lo: int, hi: int | None = None) -> None:
    v = getattr(cfg, name)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo or (hi is not None and v > hi):
        rng = f"[{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise InvalidArgError(f"{name} must be an integer {rng}", field=name, value=v)


def _check_float(cfg: SyntheticConfig, name: str, lo: float, hi: float, *, lo_open: bool = False) -> None:
    v = getattr(cfg, name)
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and np.isfinite(v)
    if not ok or v > hi or v < lo or (lo_open and v == lo):
        raise InvalidArgError(
            f"{name} must be a number in {'(' if lo_open else '['}{lo}, {hi}]", field=name, value=v
        )


def validate_config(cfg: SyntheticConfig) -> None:
    """Refuse parameters the generator cannot honour (``E_INVALID_ARG`` naming the field)."""
    _check_int(cfg, "seed", 0)
    _check_int(cfg, "n_nodes", 4)
    _check_int(cfg, "n_events", 1)
    for name in ("n_rings", "n_pingpongs", "n_bursts", "n_interval_corrections", "n_event_corrections"):
        _check_int(cfg, name, 0)
    for name in ("n_retracts", "n_late_facts"):
        _check_int(cfg, name, 0)
    _check_int(cfg, "days", 1)
    _check_int(cfg, "burst_hours", 1)
    _check_int(cfg, "delta_s", 2)
    _check_int(cfg, "chunk_rows", 1024)
    _check_int(cfg, "start_us", 0, OPEN_END // 2)
    _check_int(cfg, "n_communities", 1, cfg.n_nodes // 2) if cfg.n_communities is not None else None
    _check_float(cfg, "p_intra", 0.0, 1.0)
    _check_float(cfg, "activity_alpha", 0.0, 100.0, lo_open=True)
    _check_float(cfg, "burst_multiplier", 1.0, 1000.0)
    _check_float(cfg, "follows_fraction", 0.0, 0.5)
    _check_float(cfg, "follows_mean_days", 0.0, 3650.0, lo_open=True)
    _check_float(cfg, "follows_open_fraction", 0.0, 1.0)
    n_pattern_nodes = 3 * cfg.n_rings + 2 * cfg.n_pingpongs
    if n_pattern_nodes > cfg.n_nodes // 2:
        raise InvalidArgError(
            "too many planted patterns for n_nodes (their nodes must be at most half of all nodes)",
            field="n_rings",
            pattern_nodes=n_pattern_nodes,
            n_nodes=cfg.n_nodes,
        )
    if cfg.n_planted_events + cfg.n_follows > cfg.n_events:
        raise InvalidArgError(
            "n_events is smaller than the planted events plus the follows edges",
            field="n_events",
            value=cfg.n_events,
            needed=cfg.n_planted_events + cfg.n_follows,
        )
    if cfg.n_follows > cfg.n_nodes * (cfg.n_nodes - 1) // 4:
        raise InvalidArgError(
            "too many follows edges for n_nodes", field="follows_fraction", n_follows=cfg.n_follows
        )
    hours = cfg.days * 24
    if cfg.n_bursts and (hours * 8 // 10) // cfg.n_bursts < cfg.burst_hours + 24:
        raise InvalidArgError(
            "burst windows do not fit: need (0.8 * days * 24) / n_bursts >= burst_hours + 24",
            field="n_bursts",
            value=cfg.n_bursts,
        )
    if cfg.n_rings + cfg.n_pingpongs and cfg.days * DAY_S <= 4 * cfg.delta_s:
        raise InvalidArgError("delta_s too large for the time span", field="delta_s", value=cfg.delta_s)
    if cfg.start_us % US_PER_SECOND:
        raise InvalidArgError("start_us must be a whole second", field="start_us", value=cfg.start_us)


# ---- endpoint sampling ----------------------------------------------------------------------------------
class _Endpoints:
    """Activity-weighted node sampling, globally or inside a community (nodes are contiguous by community)."""

    def __init__(self, weights: np.ndarray, offsets: np.ndarray, p_intra: float) -> None:
        self.n = len(weights)
        self.cum = np.cumsum(weights)
        self.total = float(self.cum[-1])
        self.offsets = offsets
        self.sizes = np.diff(offsets)
        self.comm = np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)
        lo = offsets[:-1]
        self.cum_lo = np.where(lo > 0, self.cum[np.maximum(lo - 1, 0)], 0.0)
        self.cum_hi = self.cum[offsets[1:] - 1]
        self.p_intra = p_intra
        self.weights = weights

    def global_nodes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        x = rng.random(n) * self.total
        return np.minimum(np.searchsorted(self.cum, x, side="right"), self.n - 1)

    def community_nodes(self, rng: np.random.Generator, comms: np.ndarray) -> np.ndarray:
        lo, hi = self.cum_lo[comms], self.cum_hi[comms]
        idx = np.searchsorted(self.cum, lo + rng.random(len(comms)) * (hi - lo), side="right")
        return np.clip(idx, self.offsets[comms], self.offsets[comms + 1] - 1)

    def pairs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``n`` (src, dst) pairs without self-loops, and the intra-community draw mask."""
        src = self.global_nodes(rng, n)
        intra = rng.random(n) < self.p_intra
        dst = np.empty(n, dtype=np.int64)
        dst[intra] = self.community_nodes(rng, self.comm[src[intra]])
        dst[~intra] = self.global_nodes(rng, int((~intra).sum()))
        for _ in range(8):
            loop = np.flatnonzero(src == dst)
            if len(loop) == 0:
                break
            li = loop[intra[loop]]
            lg = loop[~intra[loop]]
            dst[li] = self.community_nodes(rng, self.comm[src[li]])
            dst[lg] = self.global_nodes(rng, len(lg))
        loop = np.flatnonzero(src == dst)
        if len(loop):  # a neighbour inside the community (every community has >= 2 nodes)
            c = self.comm[src[loop]]
            dst[loop] = self.offsets[c] + (src[loop] - self.offsets[c] + 1) % self.sizes[c]
        return src, dst, intra


def _community_offsets(rng: np.random.Generator, n: int, c: int) -> np.ndarray:
    shares = rng.dirichlet(np.full(c, 2.0))
    sizes = rng.multinomial(n - 2 * c, shares) + 2
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


# ---- the generator --------------------------------------------------------------------------------------
def generate_from_config(cfg: SyntheticConfig) -> SyntheticDataset:
    validate_config(cfg)
    r_struct, r_plant, r_msg, r_follow, r_corr = (
        np.random.default_rng(s) for s in np.random.SeedSequence(cfg.seed).spawn(5)
    )
    n = cfg.n_nodes
    offsets = _community_offsets(r_struct, n, cfg.communities())
    weights = r_struct.pareto(cfg.activity_alpha, n) + 1.0
    ep = _Endpoints(weights, offsets, cfg.p_intra)
    span_s = cfg.days * DAY_S
    start_s = cfg.start_us // US_PER_SECOND
    bursts_h = _burst_hours(r_struct, cfg)
    planted = _plant(r_plant, cfg, start_s, span_s)
    pat_of = np.full(n, -1, dtype=np.int64)
    for i, p in enumerate(planted):
        pat_of[p["_nodes"]] = i
    iso = np.array([p["_iso_s"] for p in planted], dtype=np.int64).reshape(-1, 2)

    msg = _gen_msgs(r_msg, cfg, ep, start_s, bursts_h, planted, pat_of, iso)
    fol = _gen_follows(r_follow, cfg, ep, start_s, span_s, pat_of)

    uids = pc.binary_join_element_wise("s", pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), "")
    w_text = pa.array([props_text({"w": k}) for k in range(_W_MAX + 1)], type=pa.string())
    s_text = pa.array([props_text({"strength": s}) for s in _STRENGTHS], type=pa.string())
    msg_frame = _frame(
        uids, msg["src"], msg["dst"], msg["t"], None, w_text.take(pa.array(msg["w"])), "msg", cfg
    )
    fol_end = pa.array(fol["t_end"], type=pa.int64())
    fol_frame = _frame(
        uids, fol["src"], fol["dst"], fol["t"], fol_end, s_text.take(pa.array(fol["s"])), "follows", cfg
    )

    batches, targets = _corrections(r_corr, cfg, ep, pat_of, msg, fol, start_s, span_s)
    manifest = _manifest(cfg, offsets, ep, msg, fol, bursts_h, planted, start_s, span_s, batches, targets)
    manifest["frames"] = {
        f.rel_type: {"rows": f.num_rows, "digest": f.digest(), "instantaneous": f.is_instantaneous}
        for f in (msg_frame, fol_frame)
    }
    return SyntheticDataset(frames=(msg_frame, fol_frame), manifest=manifest, corrections=batches)


def _frame(
    uids: pa.Array,
    src: np.ndarray,
    dst: np.ndarray,
    t_s: np.ndarray,
    t_end: pa.Array | None,
    props: pa.Array,
    rel_type: str,
    cfg: SyntheticConfig,
) -> EventFrame:
    step = cfg.chunk_rows
    tables = []
    for a in range(0, max(len(t_s), 1), step):
        b = min(a + step, len(t_s))
        tables.append(
            make_table(
                uids.take(pa.array(src[a:b])),
                uids.take(pa.array(dst[a:b])),
                t_s[a:b] * US_PER_SECOND,
                None if t_end is None else t_end.slice(a, b - a),
                props.slice(a, b - a),
            )
        )
    return EventFrame(
        pa.concat_tables(tables),
        rel_type=rel_type,
        label="user",
        name="synthetic",
        source=f"{GENERATOR_VERSION}:seed={cfg.seed}",
    )


def _burst_hours(rng: np.random.Generator, cfg: SyntheticConfig) -> list[int]:
    """Start hours of the burst windows: one per equal slot of the middle 80% of the time span."""
    hours = cfg.days * 24
    lo, slot = hours // 10, (hours * 8 // 10) // max(cfg.n_bursts, 1)
    return [
        lo + i * slot + int(rng.integers(12, slot - cfg.burst_hours - 12 + 1)) for i in range(cfg.n_bursts)
    ]


def _plant(rng: np.random.Generator, cfg: SyntheticConfig, start_s: int, span_s: int) -> list[dict[str, Any]]:
    k = 3 * cfg.n_rings + 2 * cfg.n_pingpongs
    nodes = rng.choice(cfg.n_nodes, size=k, replace=False).astype(np.int64)
    out: list[dict[str, Any]] = []
    pos = 0
    d = cfg.delta_s
    for i in range(cfg.n_rings + cfg.n_pingpongs):
        ring = i < cfg.n_rings
        size = 3 if ring else 2
        ns = nodes[pos : pos + size]
        pos += size
        t1 = start_s + d + int(rng.integers(0, span_s - 3 * d))
        t2 = t1 + int(rng.integers(1, d // 2 + 1))
        t3 = t2 + int(rng.integers(1, d // 2 + 1))
        u, v = int(ns[0]), int(ns[1])
        w = int(ns[2]) if ring else u
        edges = [(u, v, t1), (v, w, t2), (w, u, t3)] if ring else [(u, v, t1), (v, u, t2), (u, v, t3)]
        out.append(
            {
                "_ring": ring,
                "_nodes": ns,
                "_edges": edges,
                "_w": [int(x) for x in _weights(rng, 3)],
                "_iso_s": (t1 - d, t3 + d + 1),
                "id": f"{'ring' if ring else 'pingpong'}{i if ring else i - cfg.n_rings}",
            }
        )
    return out


def _weights(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.minimum(rng.geometric(0.5, n), _W_MAX).astype(np.int8)


def _gen_msgs(
    rng: np.random.Generator,
    cfg: SyntheticConfig,
    ep: _Endpoints,
    start_s: int,
    bursts_h: list[int],
    planted: list[dict[str, Any]],
    pat_of: np.ndarray,
    iso: np.ndarray,
) -> dict[str, np.ndarray]:
    hours = cfg.days * 24
    intensity = np.ones(hours)
    for h in bursts_h:
        intensity[h : h + cfg.burst_hours] = cfg.burst_multiplier
    n_bg = cfg.n_events - cfg.n_follows - cfg.n_planted_events
    counts = rng.multinomial(n_bg, intensity / intensity.sum())
    p_src = np.array([e[0] for p in planted for e in p["_edges"]], dtype=np.int64)
    p_dst = np.array([e[1] for p in planted for e in p["_edges"]], dtype=np.int64)
    p_t = np.array([e[2] for p in planted for e in p["_edges"]], dtype=np.int64)
    p_w = np.array([w for p in planted for w in p["_w"]], dtype=np.int8)
    p_hour = (p_t - start_s) // HOUR_S
    parts: dict[str, list[np.ndarray]] = {"src": [], "dst": [], "t": [], "w": []}
    h0 = 0
    cum = np.cumsum(counts)
    while h0 < hours:  # groups of whole hours holding about chunk_rows events (time-ordered)
        base = cum[h0 - 1] if h0 else 0
        h1 = max(h0 + 1, int(np.searchsorted(cum, base + cfg.chunk_rows, side="right")))
        h1 = min(h1, hours)
        m = int(counts[h0:h1].sum())
        hour_of = np.repeat(np.arange(h0, h1, dtype=np.int64), counts[h0:h1])
        t = start_s + hour_of * HOUR_S + rng.integers(0, HOUR_S, m)
        src, dst, _ = ep.pairs(rng, m)
        _isolate(rng, ep, src, dst, t, pat_of, iso)
        w = _weights(rng, m)
        sel = (p_hour >= h0) & (p_hour < h1)
        t = np.concatenate([t, p_t[sel]])
        order = np.argsort(t, kind="stable")
        parts["t"].append(t[order])
        parts["src"].append(np.concatenate([src, p_src[sel]])[order].astype(np.int32))
        parts["dst"].append(np.concatenate([dst, p_dst[sel]])[order].astype(np.int32))
        parts["w"].append(np.concatenate([w, p_w[sel]])[order])
        h0 = h1
    return {k: np.concatenate(v) for k, v in parts.items()}


def _isolate(
    rng: np.random.Generator,
    ep: _Endpoints,
    src: np.ndarray,
    dst: np.ndarray,
    t: np.ndarray | None,
    pat_of: np.ndarray,
    iso: np.ndarray | None,
) -> None:
    """Re-draw the target of background edges joining two nodes of one planted pattern (in its window)."""
    ps = pat_of[src]
    bad = np.flatnonzero((ps >= 0) & (ps == pat_of[dst]))
    if t is not None and iso is not None and len(bad):
        bad = bad[(t[bad] >= iso[ps[bad], 0]) & (t[bad] < iso[ps[bad], 1])]
    while len(bad):
        new = ep.global_nodes(rng, len(bad))
        ok = (new != src[bad]) & (pat_of[new] != ps[bad])
        dst[bad[ok]] = new[ok]
        bad = bad[~ok]


def _gen_follows(
    rng: np.random.Generator,
    cfg: SyntheticConfig,
    ep: _Endpoints,
    start_s: int,
    span_s: int,
    pat_of: np.ndarray,
) -> dict[str, np.ndarray]:
    k = cfg.n_follows
    n = cfg.n_nodes
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < k:  # distinct (src, dst) pairs, first drawn first kept
        src, dst, _ = ep.pairs(rng, max(1024, (k - len(keys)) * 5 // 4))
        _isolate(rng, ep, src, dst, None, pat_of, None)
        both = np.concatenate([keys, src * n + dst])
        _, first = np.unique(both, return_index=True)
        keys = both[np.sort(first)][:k]
    t = start_s + rng.integers(0, span_s, k)
    dur = np.maximum(HOUR_S, np.round(rng.exponential(cfg.follows_mean_days * DAY_S, k))).astype(np.int64)
    t_end = (t + dur) * US_PER_SECOND
    t_end[rng.random(k) < cfg.follows_open_fraction] = OPEN_END
    s = rng.integers(0, len(_STRENGTHS), k)
    order = np.argsort(t, kind="stable")
    return {
        "src": (keys // n)[order].astype(np.int32),
        "dst": (keys % n)[order].astype(np.int32),
        "t": t[order],
        "t_end": t_end[order],
        "s": s[order],
    }


# ---- corrections ----------------------------------------------------------------------------------------
def _uid(k: Any) -> str:
    return f"s{int(k)}"


def _ref(src: Any, dst: Any, rel_type: str) -> dict[str, str]:
    return {"src": _uid(src), "dst": _uid(dst), "rel_type": rel_type, "disc": ""}


def _unique_event(msg: dict[str, np.ndarray], i: int) -> bool:
    """True when no other msg event has the same (src, dst, t) (so the identity's version is unambiguous)."""
    t = msg["t"]
    lo, hi = np.searchsorted(t, t[i], side="left"), np.searchsorted(t, t[i], side="right")
    same = (msg["src"][lo:hi] == msg["src"][i]) & (msg["dst"][lo:hi] == msg["dst"][i])
    return int(same.sum()) == 1


def _has_event_at(msg: dict[str, np.ndarray], s: int, d: int, t_s: int) -> bool:
    t = msg["t"]
    lo, hi = np.searchsorted(t, t_s, side="left"), np.searchsorted(t, t_s, side="right")
    return bool(((msg["src"][lo:hi] == s) & (msg["dst"][lo:hi] == d)).any())


def _corrections(
    rng: np.random.Generator,
    cfg: SyntheticConfig,
    ep: _Endpoints,
    pat_of: np.ndarray,
    msg: dict[str, np.ndarray],
    fol: dict[str, np.ndarray],
    start_s: int,
    span_s: int,
) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]]]:
    us = US_PER_SECOND
    end_s = start_s + span_s
    free = np.flatnonzero((pat_of[fol["src"]] < 0) & (pat_of[fol["dst"]] < 0))
    need = cfg.n_interval_corrections + cfg.n_retracts
    if need > len(free):
        raise InvalidArgError(
            "not enough follows edges for the requested corrections and retracts",
            needed=need,
            available=len(free),
        )
    picks = rng.choice(free, size=need, replace=False) if need else np.empty(0, dtype=np.int64)
    fix_ops: list[dict[str, Any]] = []
    fix_tg: list[dict[str, Any]] = []
    ret_ops: list[dict[str, Any]] = []
    ret_tg: list[dict[str, Any]] = []
    for j, i in enumerate(picks):
        s, d, t = int(fol["src"][i]), int(fol["dst"][i]), int(fol["t"][i])
        te_us = int(fol["t_end"][i])
        span = (te_us // us - t) if te_us != OPEN_END else max(end_s - t, HOUR_S)
        old = {"strength": _STRENGTHS[int(fol["s"][i])]}
        edge = {**_ref(s, d, "follows"), "t": t * us, "t_end": te_us, "props": old}
        if j < cfg.n_interval_corrections:
            a_off = int(rng.integers(1, span // 2 + 1))
            b_off = int(rng.integers(a_off + 1, span))
            new = {"strength": _STRENGTHS[(int(fol["s"][i]) + int(rng.integers(1, len(_STRENGTHS)))) % 10]}
            a, b = (t + a_off) * us, (t + b_off) * us
            fix_ops.append(
                {"op": "correct", "ref": _ref(s, d, "follows"), "props": new, "vt_s": a, "vt_e": b}
            )
            frags = [[t * us, a, old], [a, b, new], [b, te_us, old]]
            fix_tg.append(
                {
                    "kind": "interval_correction",
                    "edge": edge,
                    "fragments": [{"vt_s": x, "vt_e": y, "props": p} for x, y, p in frags],
                }
            )
        else:
            tr = (t + int(rng.integers(1, span))) * us
            ret_ops.append({"op": "retract", "ref": _ref(s, d, "follows"), "t": tr})
            ret_tg.append({"kind": "retract", "edge": edge, "valid_after": {"vt_s": t * us, "vt_e": tr}})
    chosen: set[int] = set()
    n_msg = len(msg["t"])
    tries = 0
    while len(chosen) < cfg.n_event_corrections:
        tries += 1
        if tries > 1000 * (cfg.n_event_corrections + 1):
            raise InvalidArgError("could not find msg events to correct", field="n_event_corrections")
        i = int(rng.integers(0, n_msg))
        s, d = int(msg["src"][i]), int(msg["dst"][i])
        if i in chosen or pat_of[s] >= 0 or pat_of[d] >= 0 or not _unique_event(msg, i):
            continue
        chosen.add(i)
        t_us = int(msg["t"][i]) * us
        old_w = int(msg["w"][i])
        new = {"w": 1 + (old_w + int(rng.integers(0, _W_MAX - 1))) % _W_MAX}
        fix_ops.append(
            {"op": "correct", "ref": _ref(s, d, "msg"), "props": new, "vt_s": t_us, "vt_e": t_us + 1}
        )
        fix_tg.append(
            {
                "kind": "event_correction",
                "edge": {**_ref(s, d, "msg"), "t": t_us, "t_end": None, "props": {"w": old_w}},
                "fragments": [{"vt_s": t_us, "vt_e": t_us + 1, "props": new}],
            }
        )
    late_ops, late_tg = _late_facts(rng, cfg, ep, pat_of, msg, fol, start_s, span_s)
    batches = [(fix_ops, fix_tg), (ret_ops, ret_tg), (late_ops, late_tg)]
    return [b for b, _ in batches if b], [tg for b, tg in batches if b]


def _late_facts(
    rng: np.random.Generator,
    cfg: SyntheticConfig,
    ep: _Endpoints,
    pat_of: np.ndarray,
    msg: dict[str, np.ndarray],
    fol: dict[str, np.ndarray],
    start_s: int,
    span_s: int,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    us = US_PER_SECOND
    n = cfg.n_nodes
    n_msg_late = (cfg.n_late_facts + 1) // 2
    fol_keys = set((fol["src"].astype(np.int64) * n + fol["dst"]).tolist()) if cfg.n_late_facts else set()
    used: set[tuple[int, int, int]] = set()
    ops: list[dict[str, Any]] = []
    tg: list[dict[str, Any]] = []
    tries = 0
    while len(ops) < cfg.n_late_facts:
        tries += 1
        if tries > 1000 * (cfg.n_late_facts + 1):
            raise InvalidArgError("could not place late-arriving facts", field="n_late_facts")
        src, dst, _ = ep.pairs(rng, 1)
        s, d = int(src[0]), int(dst[0])
        if pat_of[s] >= 0 or pat_of[d] >= 0:
            continue
        is_msg = len(ops) < n_msg_late
        a = start_s + int(rng.integers(0, span_s))
        if is_msg:
            if (s, d, a) in used or _has_event_at(msg, s, d, a):
                continue
            used.add((s, d, a))
            props: dict[str, Any] = {"w": int(_weights(rng, 1)[0])}
            vt_s, vt_e, rel = a * us, a * us + 1, "msg"
        else:
            if s * n + d in fol_keys:
                continue
            fol_keys.add(s * n + d)
            dur = max(HOUR_S, round(float(rng.exponential(cfg.follows_mean_days * DAY_S))))
            props = {"strength": _STRENGTHS[int(rng.integers(0, len(_STRENGTHS)))]}
            vt_s, vt_e, rel = a * us, (a + dur) * us, "follows"
        ops.append(
            {
                "op": "assert_edge",
                "src": _uid(s),
                "dst": _uid(d),
                "rel_type": rel,
                "disc": "",
                "props": props,
                "vt_s": vt_s,
                "vt_e": vt_e,
            }
        )
        tg.append(
            {"kind": "late_fact", "edge": {**_ref(s, d, rel), "t": vt_s, "t_end": vt_e, "props": props}}
        )
    return ops, tg


# ---- manifest -------------------------------------------------------------------------------------------
def _manifest(
    cfg: SyntheticConfig,
    offsets: np.ndarray,
    ep: _Endpoints,
    msg: dict[str, np.ndarray],
    fol: dict[str, np.ndarray],
    bursts_h: list[int],
    planted: list[dict[str, Any]],
    start_s: int,
    span_s: int,
    batches: list[list[dict[str, Any]]],
    targets: list[list[dict[str, Any]]],
) -> dict[str, Any]:
    us = US_PER_SECOND
    hours = cfg.days * 24
    n_bg = cfg.n_events - cfg.n_follows - cfg.n_planted_events
    base = n_bg / (hours + (cfg.burst_multiplier - 1.0) * cfg.burst_hours * cfg.n_bursts)
    t = msg["t"]
    bursts = []
    for h in bursts_h:
        lo, hi = start_s + h * HOUR_S, start_s + (h + cfg.burst_hours) * HOUR_S
        count = int(np.searchsorted(t, hi, side="left") - np.searchsorted(t, lo, side="left"))
        bursts.append(
            {
                "t_s": lo * us,
                "t_e": hi * us,
                "hours": cfg.burst_hours,
                "rate_multiplier": float(cfg.burst_multiplier),
                "expected_events_per_hour": round(base * cfg.burst_multiplier, 6),
                "events_in_window": count,
            }
        )
    seen = np.zeros(cfg.n_nodes, dtype=bool)
    for arr in (msg["src"], msg["dst"], fol["src"], fol["dst"]):
        seen[arr] = True
    intra = float(np.mean(ep.comm[msg["src"]] == ep.comm[msg["dst"]])) if len(t) else 0.0
    top = np.argsort(-ep.weights)[: max(1, cfg.n_nodes // 100)]
    is_top = np.zeros(cfg.n_nodes, dtype=bool)
    is_top[top] = True
    rings, pings = [], []
    for p in planted:
        evs = [
            {"src": _uid(s), "dst": _uid(d), "rel_type": "msg", "t": ts * us, "props": {"w": w}}
            for (s, d, ts), w in zip(p["_edges"], p["_w"], strict=True)
        ]
        entry = {
            "id": p["id"],
            "motif": "M_triangle_cyclic" if p["_ring"] else "M_2node_pingpong",
            "nodes": [_uid(x) for x in p["_nodes"]],
            "events": evs,
            "t_first": evs[0]["t"],
            "t_last": evs[-1]["t"],
            "delta": cfg.delta_s * us,
            "isolation_window": [p["_iso_s"][0] * us, p["_iso_s"][1] * us],
        }
        (rings if p["_ring"] else pings).append(entry)
    params = dataclasses.asdict(cfg)
    params["n_communities"] = cfg.communities()
    return {
        "generator": GENERATOR_VERSION,
        "seed": cfg.seed,
        "params": params,
        "uid_format": "s<k>",
        "label": "user",
        "n_nodes": cfg.n_nodes,
        "n_nodes_seen": int(seen.sum()),
        "n_events": int(len(t) + len(fol["t"])),
        "time": {"start": start_s * us, "end": (start_s + span_s) * us, "days": cfg.days, "unit": "us"},
        "communities": {
            "n": cfg.communities(),
            "offsets": [int(x) for x in offsets],
            "msg_intra_fraction": round(intra, 6),
        },
        "activity": {
            "distribution": "pareto+1",
            "alpha": cfg.activity_alpha,
            "top1pct_msg_src_share": round(float(np.mean(is_top[msg["src"]])), 6),
        },
        "rates": {"base_events_per_hour": round(base, 6), "bucket_us": HOUR_S * us},
        "bursts": bursts,
        "planted": {"delta": cfg.delta_s * us, "rings": rings, "pingpongs": pings},
        "corrections": {"batches": batches, "targets": targets},
    }
