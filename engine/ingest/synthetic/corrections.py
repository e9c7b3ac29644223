"""The generator's second belief epoch: three write batches (corrections, retractions, late facts) and what
each op targets (the manifest's ``corrections``), drawn away from planted nodes."""

from __future__ import annotations

from typing import Any

import numpy as np

from tgms.engine.errors import InvalidArgError
from tgms.engine.ingest.synthetic.config import DAY_S, HOUR_S
from tgms.engine.ingest.synthetic.world import STRENGTHS, W_MAX, World, uid, weights
from tgms.engine.timeutil import OPEN_END, US_PER_SECOND


# ---- corrections ----------------------------------------------------------------------------------------
def _ref(src: Any, dst: Any, rel_type: str) -> dict[str, str]:
    return {"src": uid(src), "dst": uid(dst), "rel_type": rel_type, "disc": ""}


def _events_at(msg: dict[str, np.ndarray], s: int, d: int, t_s: int) -> int:
    """How many msg events s→d there are at second ``t_s`` (events are sorted by time)."""
    lo, hi = np.searchsorted(msg["t"], t_s, side="left"), np.searchsorted(msg["t"], t_s, side="right")
    return int(((msg["src"][lo:hi] == s) & (msg["dst"][lo:hi] == d)).sum())


Ops = list[dict[str, Any]]


def correction_epoch(rng: np.random.Generator, w: World) -> tuple[list[Ops], list[Ops]]:
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
        old = {"strength": STRENGTHS[int(fol["s"][i])]}
        ref, edge = _ref(s, d, "follows"), {**_ref(s, d, "follows"), "t": t * us, "t_end": te, "props": old}
        if j < cfg.n_interval_corrections:  # [a, b) strictly inside [t, te): three fragments
            a_off = int(rng.integers(1, span // 2 + 1))
            a, b = (t + a_off) * us, (t + int(rng.integers(a_off + 1, span))) * us
            new = {"strength": STRENGTHS[(int(fol["s"][i]) + int(rng.integers(1, len(STRENGTHS)))) % 10]}
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
        new = {"w": 1 + (old_w + int(rng.integers(0, W_MAX - 1))) % W_MAX}  # any other weight
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


def _late_facts(rng: np.random.Generator, w: World) -> tuple[Ops, Ops]:
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
            props: dict[str, Any] = {"w": int(weights(rng, 1)[0])}
            vt_s, vt_e, rel = a * us, a * us + 1, "msg"
        else:  # a follows interval for a pair that has none
            if s * n + d in fol_keys:
                continue
            fol_keys.add(s * n + d)
            dur = max(HOUR_S, round(float(rng.exponential(cfg.follows_mean_days * DAY_S))))
            props = {"strength": STRENGTHS[int(rng.integers(0, len(STRENGTHS)))]}
            vt_s, vt_e, rel = a * us, (a + dur) * us, "follows"
        ops.append({"op": "assert_edge", **_ref(s, d, rel), "props": props, "vt_s": vt_s, "vt_e": vt_e})
        targets.append(
            {"kind": "late_fact", "edge": {**_ref(s, d, rel), "t": vt_s, "t_end": vt_e, "props": props}}
        )
    if len(ops) < cfg.n_late_facts:
        raise InvalidArgError("could not place late-arriving facts", field="n_late_facts")
    return ops, targets
