"""The generator itself: planted patterns, background ``msg`` events day by day, ``follows`` intervals,
then the frames, the correction epoch (:mod:`.corrections`) and the manifest (:mod:`.manifest`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tgms.engine.canonical import dumps
from tgms.engine.errors import InvalidArgError, NotFoundError
from tgms.engine.ingest.events import EventFrame, make_table, props_text
from tgms.engine.ingest.synthetic.config import (
    DAY_S,
    GENERATOR_VERSION,
    HOUR_S,
    SyntheticConfig,
    validate_config,
)
from tgms.engine.ingest.synthetic.corrections import correction_epoch
from tgms.engine.ingest.synthetic.manifest import build_manifest
from tgms.engine.ingest.synthetic.world import STRENGTHS, W_MAX, Endpoints, World, weights
from tgms.engine.timeutil import OPEN_END, US_PER_SECOND


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


# ---- the generator --------------------------------------------------------------------------------------
def generate_from_config(cfg: SyntheticConfig) -> SyntheticDataset:
    validate_config(cfg)
    seeds = np.random.SeedSequence(cfg.seed).spawn(5)
    r_struct, r_plant, _, r_follow, r_corr = (np.random.default_rng(s) for s in seeds)
    n, c = cfg.n_nodes, cfg.communities()
    sizes = r_struct.multinomial(n - 2 * c, r_struct.dirichlet(np.full(c, 2.0))) + 2
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    ep = Endpoints(r_struct.pareto(cfg.activity_alpha, n) + 1.0, offsets, cfg.p_intra)
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
    w = World(cfg, ep, start_s, cfg.days * DAY_S, bursts_h, planted, pat_of, iso)
    w.msg = _gen_msgs(seeds[2], w)
    w.fol = _gen_follows(r_follow, w)

    uids = pc.binary_join_element_wise("s", pc.cast(pa.array(np.arange(n, dtype=np.int64)), pa.string()), "")
    w_text = pa.array([props_text({"w": k}) for k in range(W_MAX + 1)], type=pa.string())
    s_text = pa.array([props_text({"strength": s}) for s in STRENGTHS], type=pa.string())
    frames = (
        _frame(cfg, uids, w.msg, None, w_text.take(pa.array(w.msg["w"])), "msg"),
        _frame(cfg, uids, w.fol, pa.array(w.fol["t_end"]), s_text.take(pa.array(w.fol["s"])), "follows"),
    )
    batches, targets = correction_epoch(r_corr, w)
    manifest = build_manifest(w, batches, targets)
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
                "_w": [int(k) for k in weights(rng, 3)],
                "_iso_s": (t1 - d, t3 + d + 1),  # seconds: no other event among ns in [t1 - d, t3 + d]
            }
        )
    return out


def _gen_msgs(seed: np.random.SeedSequence, w: World) -> dict[str, np.ndarray]:
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
        wt = weights(rng, len(t))
        sel = (p_hour >= h0) & (p_hour < h1)
        t = np.concatenate([t, p_t[sel]])
        order = np.argsort(t, kind="stable")
        parts["t"].append(t[order])
        parts["src"].append(np.concatenate([src, p_src[sel]])[order].astype(np.int32))
        parts["dst"].append(np.concatenate([dst, p_dst[sel]])[order].astype(np.int32))
        parts["w"].append(np.concatenate([wt, p_w[sel]])[order])
    return {k: np.concatenate(v) for k, v in parts.items()}


def _gen_follows(rng: np.random.Generator, w: World) -> dict[str, np.ndarray]:
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
    s = rng.integers(0, len(STRENGTHS), k)
    o = np.argsort(t, kind="stable")
    return {
        "src": (keys // n)[o].astype(np.int32),
        "dst": (keys % n)[o].astype(np.int32),
        "t": t[o],
        "t_end": t_end[o],
        "s": s[o],
    }
