"""The generator's manifest: parameters, communities, activity, rates, bursts, planted patterns (the gold
of pattern-mining tasks) and the correction epoch, all JSON-able."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from tgms.engine.ingest.synthetic.config import GENERATOR_VERSION, HOUR_S
from tgms.engine.ingest.synthetic.corrections import Ops
from tgms.engine.ingest.synthetic.world import World, uid
from tgms.engine.timeutil import US_PER_SECOND


# ---- manifest -------------------------------------------------------------------------------------------
def build_manifest(w: World, batches: list[Ops], targets: list[Ops]) -> dict[str, Any]:
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
            {"src": uid(s), "dst": uid(d), "rel_type": "msg", "t": ts * us, "props": {"w": x}}
            for (s, d, ts), x in zip(p["_edges"], p["_w"], strict=True)
        ]
        planted["rings" if p["_ring"] else "pingpongs"].append(
            {
                "id": p["id"],
                "motif": "M_triangle_cyclic" if p["_ring"] else "M_2node_pingpong",
                "nodes": [uid(x) for x in p["_nodes"]],
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
