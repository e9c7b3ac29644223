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
_INT_MIN = (
    (0, "seed start_us n_rings n_pingpongs n_bursts n_interval_corrections n_event_corrections"),
    (0, "n_retracts n_late_facts"),
    (1, "n_events days burst_hours"),
    (2, "delta_s"),
    (4, "n_nodes"),
    (1024, "chunk_rows"),
)
_FLOAT_RANGE = (  # (name, low, high, low excluded)
    ("p_intra", 0.0, 1.0, False),
    ("activity_alpha", 0.0, 100.0, True),
    ("burst_multiplier", 1.0, 1000.0, False),
    ("follows_fraction", 0.0, 0.5, False),
    ("follows_mean_days", 0.0, 3650.0, True),
    ("follows_open_fraction", 0.0, 1.0, False),
)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def validate_config(cfg: SyntheticConfig) -> None:
    """Refuse parameters the generator cannot honour (``E_INVALID_ARG`` naming the ``field``)."""

    def need(ok: bool, name: str, message: str) -> None:
        if not ok:
            raise InvalidArgError(message, field=name, value=getattr(cfg, name))

    for lo, names in _INT_MIN:
        for name in names.split():
            v = getattr(cfg, name)
            need(_is_int(v) and lo <= v <= OPEN_END // 2, name, f"{name} must be an integer >= {lo}")
    for name, lo, hi, lo_open in _FLOAT_RANGE:
        v = getattr(cfg, name)
        ok = (_is_int(v) or isinstance(v, float)) and lo <= v <= hi and not (lo_open and v == lo)
        need(ok, name, f"{name} must be a number in {'(' if lo_open else '['}{lo}, {hi}]")
    c, n = cfg.n_communities, cfg.n_nodes
    need(
        c is None or (_is_int(c) and 1 <= c <= n // 2),
        "n_communities",
        "n_communities must be in [1, n_nodes // 2] (communities have >= 2 nodes)",
    )
    need(
        3 * cfg.n_rings + 2 * cfg.n_pingpongs <= n // 2,
        "n_rings",
        "too many planted patterns: their nodes must be <= n_nodes / 2",
    )
    need(
        cfg.n_planted_events + cfg.n_follows <= cfg.n_events,
        "n_events",
        "n_events is smaller than the planted events plus the follows rows",
    )
    need(
        cfg.n_interval_corrections + cfg.n_retracts <= cfg.n_follows,
        "n_interval_corrections",
        "n_interval_corrections + n_retracts exceeds the number of follows edges",
    )
    need(cfg.n_follows <= n * (n - 1) // 4, "follows_fraction", "too many follows edges for n_nodes")
    slot = (cfg.days * 24 * 8 // 10) // max(cfg.n_bursts, 1)
    need(
        cfg.n_bursts == 0 or slot >= cfg.burst_hours + 24,
        "n_bursts",
        "bursts do not fit: need 0.8 * days * 24 / n_bursts >= burst_hours + 24",
    )
    need(cfg.days * DAY_S > 4 * cfg.delta_s, "delta_s", "delta_s is too large for the time span")
    need(cfg.start_us % US_PER_SECOND == 0, "start_us", "start_us must be a whole second")


# ---- endpoint sampling ----------------------------------------------------------------------------------
class _Endpoints:
    """Activity-weighted node sampling, globally or inside a community (nodes are contiguous by community)."""

    def __init__(self, weights: np.ndarray, offsets: np.ndarray, p_intra: float) -> None:
        self.n, self.weights, self.offsets, self.p_intra = len(weights), weights, offsets, p_intra
        self.cum = np.cumsum(weights)
        self.total = float(self.cum[-1])
        self.sizes = np.diff(offsets)
        self.comm = np.repeat(np.arange(len(self.sizes), dtype=np.int64), self.sizes)
        lo = offsets[:-1]
        self.cum_lo = np.where(lo > 0, self.cum[np.maximum(lo - 1, 0)], 0.0)
        self.cum_hi = self.cum[offsets[1:] - 1]
        # guide table: guide[g] = first i with cum[i] > g * total / G, a lower bound for any x in cell g
        self.g_scale = 4 * self.n / self.total
        self.guide = np.searchsorted(self.cum, np.arange(4 * self.n) / self.g_scale, side="right")

    def _search(self, x: np.ndarray) -> np.ndarray:
        """``min(searchsorted(cum, x, "right"), n - 1)`` via the guide table (few cache misses per x)."""
        last = self.n - 1
        cell = np.clip((x * self.g_scale).astype(np.int64) - 1, 0, len(self.guide) - 1)
        idx = np.minimum(self.guide[cell], last)
        active = np.flatnonzero((idx < last) & (self.cum[idx] <= x))
        while len(active):
            idx[active] += 1
            active = active[idx[active] < last]
            active = active[self.cum[idx[active]] <= x[active]]
        return idx

    def global_nodes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._search(rng.random(n) * self.total)

    def community_nodes(self, rng: np.random.Generator, comms: np.ndarray) -> np.ndarray:
        lo, hi = self.cum_lo[comms], self.cum_hi[comms]
        idx = self._search(lo + rng.random(len(comms)) * (hi - lo))
        return np.clip(idx, self.offsets[comms], self.offsets[comms + 1] - 1)

    def pairs(self, rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
        """``n`` (src, dst) pairs without self-loops; a share ``p_intra`` picks dst in src's community."""
        src = self.global_nodes(rng, n)
        intra = rng.random(n) < self.p_intra
        dst = np.empty(n, dtype=np.int64)
        dst[intra] = self.community_nodes(rng, self.comm[src[intra]])
        dst[~intra] = self.global_nodes(rng, int((~intra).sum()))
        for _ in range(8):
            loop = np.flatnonzero(src == dst)
            if len(loop) == 0:
                break
            li, lg = loop[intra[loop]], loop[~intra[loop]]
            dst[li] = self.community_nodes(rng, self.comm[src[li]])
            dst[lg] = self.global_nodes(rng, len(lg))
        loop = np.flatnonzero(src == dst)
        if len(loop):  # a neighbour inside the community (every community has >= 2 nodes)
            c = self.comm[src[loop]]
            dst[loop] = self.offsets[c] + (src[loop] - self.offsets[c] + 1) % self.sizes[c]
        return src, dst


@dataclass
class _World:
    """Everything the generation steps share."""

    cfg: SyntheticConfig
    ep: _Endpoints
    start_s: int
    span_s: int
    bursts_h: list[int]
    planted: list[dict[str, Any]]
    pat_of: np.ndarray  # node -> index of its planted pattern, or -1
    iso: np.ndarray  # pattern -> isolation window [lo, hi) in seconds
    msg: dict[str, np.ndarray] = field(default_factory=dict)
    fol: dict[str, np.ndarray] = field(default_factory=dict)

    def isolate(
        self, rng: np.random.Generator, src: np.ndarray, dst: np.ndarray, t: np.ndarray | None
    ) -> None:
        """Re-draw the dst of edges joining two nodes of one pattern (inside its window when ``t`` given)."""
        ps = self.pat_of[src]
        bad = np.flatnonzero((ps >= 0) & (ps == self.pat_of[dst]))
        if t is not None and len(bad):
            bad = bad[(t[bad] >= self.iso[ps[bad], 0]) & (t[bad] < self.iso[ps[bad], 1])]
        while len(bad):
            new = self.ep.global_nodes(rng, len(bad))
            ok = (new != src[bad]) & (self.pat_of[new] != ps[bad])
            dst[bad[ok]] = new[ok]
            bad = bad[~ok]


# ---- the generator --------------------------------------------------------------------------------------
def generate_from_config(cfg: SyntheticConfig) -> SyntheticDataset:
    validate_config(cfg)
    seeds = np.random.SeedSequence(cfg.seed).spawn(5)
    r_struct, r_plant, _, r_follow, r_corr = (np.random.default_rng(s) for s in seeds)
    n, c = cfg.n_nodes, cfg.communities()
    sizes = r_struct.multinomial(n - 2 * c, r_struct.dirichlet(np.full(c, 2.0))) + 2
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ep = _Endpoints(r_struct.pareto(cfg.activity_alpha, n) + 1.0, offsets, cfg.p_intra)
    hours, start_s = cfg.days * 24, cfg.start_us // US_PER_SECOND
    lo, slot = hours // 10, (hours * 8 // 10) // max(cfg.n_bursts, 1)  # one burst per slot of the middle 80%
    bursts_h = [
        lo + i * slot + int(r_struct.integers(12, slot - cfg.burst_hours - 11)) for i in range(cfg.n_bursts)
    ]
    planted = _plant(r_plant, cfg, start_s, cfg.days * DAY_S)
    pat_of = np.full(n, -1, dtype=np.int64)
    for i, p in enumerate(planted):
        pat_of[p["_nodes"]] = i
    iso = np.array([p["_iso_s"] for p in planted], dtype=np.int64).reshape(-1, 2)
    w = _World(cfg, ep, start_s, cfg.days * DAY_S, bursts_h, planted, pat_of, iso)
    w.msg = _gen_msgs(seeds[2], w)
    w.fol = _gen_follows(r_follow, w)

    uids = pc.binary_join_element_wise("s", pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), "")
    w_text = pa.array([props_text({"w": k}) for k in range(_W_MAX + 1)], type=pa.string())
    s_text = pa.array([props_text({"strength": s}) for s in _STRENGTHS], type=pa.string())
    frames = (
        _frame(cfg, uids, w.msg, None, w_text.take(pa.array(w.msg["w"])), "msg"),
        _frame(cfg, uids, w.fol, pa.array(w.fol["t_end"]), s_text.take(pa.array(w.fol["s"])), "follows"),
    )
    batches, targets = _corrections(r_corr, w)
    manifest = _manifest(w, batches, targets)
    manifest["frames"] = {
        fr.rel_type: {"rows": fr.num_rows, "digest": fr.digest(), "instantaneous": fr.is_instantaneous}
        for fr in frames
    }
    return SyntheticDataset(frames=frames, manifest=manifest, corrections=batches)


def _frame(
    cfg: SyntheticConfig,
    uids: pa.Array,
    cols: dict[str, np.ndarray],
    t_end: pa.Array | None,
    props: pa.Array,
    rel_type: str,
) -> EventFrame:
    """Build the frame ``chunk_rows`` rows at a time (node indices -> uid strings, seconds -> us)."""
    src, dst, t_s = cols["src"], cols["dst"], cols["t"]
    tables = []
    for a in range(0, max(len(t_s), 1), cfg.chunk_rows):
        b = min(a + cfg.chunk_rows, len(t_s))
        end = None if t_end is None else t_end.slice(a, b - a)
        src_a, dst_a = uids.take(pa.array(src[a:b])), uids.take(pa.array(dst[a:b]))
        tables.append(make_table(src_a, dst_a, t_s[a:b] * US_PER_SECOND, end, props.slice(a, b - a)))
    source = f"{GENERATOR_VERSION}:seed={cfg.seed}"
    return EventFrame(pa.concat_tables(tables), rel_type, label="user", name="synthetic", source=source)


def _weights(rng: np.random.Generator, n: int) -> np.ndarray:
    return np.minimum(rng.geometric(0.5, n), _W_MAX).astype(np.int8)


def _plant(rng: np.random.Generator, cfg: SyntheticConfig, start_s: int, span_s: int) -> list[dict[str, Any]]:
    k = 3 * cfg.n_rings + 2 * cfg.n_pingpongs
    nodes = rng.choice(cfg.n_nodes, size=k, replace=False).astype(np.int64)
    out: list[dict[str, Any]] = []
    pos, d = 0, cfg.delta_s
    for i in range(cfg.n_rings + cfg.n_pingpongs):
        ring = i < cfg.n_rings
        ns = nodes[pos : pos + (3 if ring else 2)]
        pos += len(ns)
        t1 = start_s + d + int(rng.integers(0, span_s - 3 * d))
        t2 = t1 + int(rng.integers(1, d // 2 + 1))
        t3 = t2 + int(rng.integers(1, d // 2 + 1))
        u, v = int(ns[0]), int(ns[1])
        x = int(ns[2]) if ring else u
        edges = [(u, v, t1), (v, x, t2), (x, u, t3)] if ring else [(u, v, t1), (v, u, t2), (u, v, t3)]
        out.append(
            {
                "id": f"ring{i}" if ring else f"pingpong{i - cfg.n_rings}",
                "_ring": ring,
                "_nodes": ns,
                "_edges": edges,
                "_w": [int(k) for k in _weights(rng, 3)],
                "_iso_s": (t1 - d, t3 + d + 1),  # seconds: no other event among ns in [t1 - d, t3 + d]
            }
        )
    return out


def _gen_msgs(seed: np.random.SeedSequence, w: _World) -> dict[str, np.ndarray]:
    """Background msg events day by day (each day its own stream: memory is bounded by a day's events and
    the content does not depend on ``chunk_rows``), merged in time order with the planted events."""
    cfg, hours = w.cfg, w.cfg.days * 24
    rng = np.random.default_rng(seed.spawn(1)[0])
    intensity = np.ones(hours)
    for h in w.bursts_h:
        intensity[h : h + cfg.burst_hours] = cfg.burst_multiplier
    n_bg = cfg.n_events - cfg.n_follows - cfg.n_planted_events
    counts = rng.multinomial(n_bg, intensity / intensity.sum())
    p_src, p_dst, p_t = (
        np.array([e[j] for p in w.planted for e in p["_edges"]], dtype=np.int64) for j in range(3)
    )
    p_w = np.array([x for p in w.planted for x in p["_w"]], dtype=np.int8)
    p_hour = (p_t - w.start_s) // HOUR_S
    parts: dict[str, list[np.ndarray]] = {"src": [], "dst": [], "t": [], "w": []}
    for day, day_seed in enumerate(seed.spawn(cfg.days)):
        rng = np.random.default_rng(day_seed)
        h0, h1 = 24 * day, 24 * day + 24
        hour_of = np.repeat(np.arange(h0, h1, dtype=np.int64), counts[h0:h1])
        t = w.start_s + hour_of * HOUR_S + rng.integers(0, HOUR_S, len(hour_of))
        src, dst = w.ep.pairs(rng, len(t))
        w.isolate(rng, src, dst, t)
        wt = _weights(rng, len(t))
        sel = (p_hour >= h0) & (p_hour < h1)
        t = np.concatenate([t, p_t[sel]])
        order = np.argsort(t, kind="stable")
        parts["t"].append(t[order])
        parts["src"].append(np.concatenate([src, p_src[sel]])[order].astype(np.int32))
        parts["dst"].append(np.concatenate([dst, p_dst[sel]])[order].astype(np.int32))
        parts["w"].append(np.concatenate([wt, p_w[sel]])[order])
    return {k: np.concatenate(v) for k, v in parts.items()}


def _gen_follows(rng: np.random.Generator, w: _World) -> dict[str, np.ndarray]:
    cfg, k, n = w.cfg, w.cfg.n_follows, w.cfg.n_nodes
    keys = np.empty(0, dtype=np.int64)
    while len(keys) < k:  # distinct (src, dst) pairs, first drawn first kept
        src, dst = w.ep.pairs(rng, max(1024, (k - len(keys)) * 5 // 4))
        w.isolate(rng, src, dst, None)
        both = np.concatenate([keys, src * n + dst])
        keys = both[np.sort(np.unique(both, return_index=True)[1])][:k]
    t = w.start_s + rng.integers(0, w.span_s, k)
    dur = np.maximum(HOUR_S, np.round(rng.exponential(cfg.follows_mean_days * DAY_S, k))).astype(np.int64)
    t_end = (t + dur) * US_PER_SECOND
    t_end[rng.random(k) < cfg.follows_open_fraction] = OPEN_END
    s = rng.integers(0, len(_STRENGTHS), k)
    o = np.argsort(t, kind="stable")
    return {
        "src": (keys // n)[o].astype(np.int32),
        "dst": (keys % n)[o].astype(np.int32),
        "t": t[o],
        "t_end": t_end[o],
        "s": s[o],
    }


# ---- corrections ----------------------------------------------------------------------------------------
def _uid(k: Any) -> str:
    return f"s{int(k)}"


def _ref(src: Any, dst: Any, rel_type: str) -> dict[str, str]:
    return {"src": _uid(src), "dst": _uid(dst), "rel_type": rel_type, "disc": ""}


def _events_at(msg: dict[str, np.ndarray], s: int, d: int, t_s: int) -> int:
    """How many msg events s→d there are at second ``t_s`` (events are sorted by time)."""
    lo, hi = np.searchsorted(msg["t"], t_s, side="left"), np.searchsorted(msg["t"], t_s, side="right")
    return int(((msg["src"][lo:hi] == s) & (msg["dst"][lo:hi] == d)).sum())


Ops = list[dict[str, Any]]


def _corrections(rng: np.random.Generator, w: _World) -> tuple[list[Ops], list[Ops]]:
    """Three batches: corrections (intervals and events), retracts, late facts; plus what each op targets."""
    cfg, fol, msg, us = w.cfg, w.fol, w.msg, US_PER_SECOND
    free = np.flatnonzero((w.pat_of[fol["src"]] < 0) & (w.pat_of[fol["dst"]] < 0))
    need = cfg.n_interval_corrections + cfg.n_retracts
    if need > len(free):
        raise InvalidArgError(
            "too few follows edges away from planted nodes", field="n_retracts", needed=need
        )
    fix: tuple[Ops, Ops] = ([], [])
    ret: tuple[Ops, Ops] = ([], [])
    for j, i in enumerate(rng.choice(free, size=need, replace=False) if need else []):
        s, d, t, te = int(fol["src"][i]), int(fol["dst"][i]), int(fol["t"][i]), int(fol["t_end"][i])
        span = (te // us - t) if te != OPEN_END else max(w.start_s + w.span_s - t, HOUR_S)  # seconds
        old = {"strength": _STRENGTHS[int(fol["s"][i])]}
        ref, edge = _ref(s, d, "follows"), {**_ref(s, d, "follows"), "t": t * us, "t_end": te, "props": old}
        if j < cfg.n_interval_corrections:  # [a, b) strictly inside [t, te): three fragments
            a_off = int(rng.integers(1, span // 2 + 1))
            a, b = (t + a_off) * us, (t + int(rng.integers(a_off + 1, span))) * us
            new = {"strength": _STRENGTHS[(int(fol["s"][i]) + int(rng.integers(1, len(_STRENGTHS)))) % 10]}
            fix[0].append({"op": "correct", "ref": ref, "props": new, "vt_s": a, "vt_e": b})
            frags = [(t * us, a, old), (a, b, new), (b, te, old)]
            fragments = [{"vt_s": x, "vt_e": y, "props": p} for x, y, p in frags]
            fix[1].append({"kind": "interval_correction", "edge": edge, "fragments": fragments})
        else:
            tr = (t + int(rng.integers(1, span))) * us
            ret[0].append({"op": "retract", "ref": ref, "t": tr})
            ret[1].append({"kind": "retract", "edge": edge, "valid_after": {"vt_s": t * us, "vt_e": tr}})
    chosen: set[int] = set()
    for _ in range(1000 * (cfg.n_event_corrections + 1)):
        if len(chosen) == cfg.n_event_corrections:
            break
        i = int(rng.integers(0, len(msg["t"])))
        s, d, t = int(msg["src"][i]), int(msg["dst"][i]), int(msg["t"][i])
        if i in chosen or w.pat_of[s] >= 0 or w.pat_of[d] >= 0 or _events_at(msg, s, d, t) != 1:
            continue
        chosen.add(i)
        old_w = int(msg["w"][i])
        new = {"w": 1 + (old_w + int(rng.integers(0, _W_MAX - 1))) % _W_MAX}  # any other weight
        fix[0].append(
            {"op": "correct", "ref": _ref(s, d, "msg"), "props": new, "vt_s": t * us, "vt_e": t * us + 1}
        )
        edge = {**_ref(s, d, "msg"), "t": t * us, "t_end": None, "props": {"w": old_w}}
        fragments = [{"vt_s": t * us, "vt_e": t * us + 1, "props": new}]
        fix[1].append({"kind": "event_correction", "edge": edge, "fragments": fragments})
    if len(chosen) < cfg.n_event_corrections:
        raise InvalidArgError("could not find msg events to correct", field="n_event_corrections")
    batches = [fix, ret, _late_facts(rng, w)]
    return [b[0] for b in batches if b[0]], [b[1] for b in batches if b[0]]


def _late_facts(rng: np.random.Generator, w: _World) -> tuple[Ops, Ops]:
    """assert_edge ops for msg events and follows intervals that overlap no version of their identity."""
    cfg, n, us = w.cfg, w.cfg.n_nodes, US_PER_SECOND
    fol_keys = set((w.fol["src"].astype(np.int64) * n + w.fol["dst"]).tolist()) if cfg.n_late_facts else set()
    used: set[tuple[int, int, int]] = set()
    ops: Ops = []
    targets: Ops = []
    for _ in range(1000 * (cfg.n_late_facts + 1)):
        if len(ops) == cfg.n_late_facts:
            break
        src, dst = w.ep.pairs(rng, 1)
        s, d = int(src[0]), int(dst[0])
        a = w.start_s + int(rng.integers(0, w.span_s))
        if w.pat_of[s] >= 0 or w.pat_of[d] >= 0:
            continue
        if len(ops) < (cfg.n_late_facts + 1) // 2:  # a late msg event at a second the pair has none
            if (s, d, a) in used or _events_at(w.msg, s, d, a):
                continue
            used.add((s, d, a))
            props: dict[str, Any] = {"w": int(_weights(rng, 1)[0])}
            vt_s, vt_e, rel = a * us, a * us + 1, "msg"
        else:  # a follows interval for a pair that has none
            if s * n + d in fol_keys:
                continue
            fol_keys.add(s * n + d)
            dur = max(HOUR_S, round(float(rng.exponential(cfg.follows_mean_days * DAY_S))))
            props = {"strength": _STRENGTHS[int(rng.integers(0, len(_STRENGTHS)))]}
            vt_s, vt_e, rel = a * us, (a + dur) * us, "follows"
        ops.append({"op": "assert_edge", **_ref(s, d, rel), "props": props, "vt_s": vt_s, "vt_e": vt_e})
        targets.append(
            {"kind": "late_fact", "edge": {**_ref(s, d, rel), "t": vt_s, "t_end": vt_e, "props": props}}
        )
    if len(ops) < cfg.n_late_facts:
        raise InvalidArgError("could not place late-arriving facts", field="n_late_facts")
    return ops, targets


# ---- manifest -------------------------------------------------------------------------------------------
def _manifest(w: _World, batches: list[Ops], targets: list[Ops]) -> dict[str, Any]:
    cfg, msg, fol, us = w.cfg, w.msg, w.fol, US_PER_SECOND
    n_bg = cfg.n_events - cfg.n_follows - cfg.n_planted_events
    base = n_bg / (cfg.days * 24 + (cfg.burst_multiplier - 1.0) * cfg.burst_hours * cfg.n_bursts)
    t = msg["t"]
    bursts = []
    for h in w.bursts_h:
        lo, hi = w.start_s + h * HOUR_S, w.start_s + (h + cfg.burst_hours) * HOUR_S
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
    intra = float(np.mean(w.ep.comm[msg["src"]] == w.ep.comm[msg["dst"]])) if len(t) else 0.0
    is_top = np.zeros(cfg.n_nodes, dtype=bool)
    is_top[np.argsort(-w.ep.weights)[: max(1, cfg.n_nodes // 100)]] = True
    planted: dict[str, list[dict[str, Any]]] = {"rings": [], "pingpongs": []}
    for p in w.planted:
        evs = [
            {"src": _uid(s), "dst": _uid(d), "rel_type": "msg", "t": ts * us, "props": {"w": x}}
            for (s, d, ts), x in zip(p["_edges"], p["_w"], strict=True)
        ]
        planted["rings" if p["_ring"] else "pingpongs"].append(
            {
                "id": p["id"],
                "motif": "M_triangle_cyclic" if p["_ring"] else "M_2node_pingpong",
                "nodes": [_uid(x) for x in p["_nodes"]],
                "events": evs,
                "t_first": evs[0]["t"],
                "t_last": evs[-1]["t"],
                "delta": cfg.delta_s * us,
                "isolation_window": [p["_iso_s"][0] * us, (p["_iso_s"][1] - 1) * us + 1],
            }
        )
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
        "time": {"start": w.start_s * us, "end": (w.start_s + w.span_s) * us, "days": cfg.days, "unit": "us"},
        "communities": {
            "n": cfg.communities(),
            "offsets": [int(x) for x in w.ep.offsets],
            "msg_intra_fraction": round(intra, 6),
        },
        "activity": {
            "distribution": "pareto+1",
            "alpha": cfg.activity_alpha,
            "top1pct_msg_src_share": round(float(np.mean(is_top[msg["src"]])), 6),
        },
        "rates": {"base_events_per_hour": round(base, 6), "bucket_us": HOUR_S * us},
        "bursts": bursts,
        "planted": {"delta": cfg.delta_s * us, **planted},
        "corrections": {"batches": batches, "targets": targets},
    }
