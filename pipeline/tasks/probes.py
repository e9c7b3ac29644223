"""Correction probes: inject corrections through the write API, then ask each question twice.

Why: a bi-temporal engine is only useful if a system answers *as of a belief state*. A probe writes one
correction batch (late-arriving events, or a ``correct`` of recorded versions) and asks one question twice:
pinned to the belief just before the batch (``as_of_tt = tt - 1``) and under the current belief. The two
golds must differ, so a system that ignores ``as_of_tt`` (or reads only the latest state) cannot get both.
Kinds span several operator families (DESIGN §4): ``events`` (metrics), ``reach`` (traversal),
``contacts`` (evolution), ``versions`` (history) and ``property`` (edge weights, where edges carry one).
Each kind is one class registered in :mod:`pipeline.tasks.probe_kinds` with its template, its ``pick`` and
its ``question``; this module only drives them.

:func:`ensure_corrections` writes one batch per probe, ``batch_id = "probe:{seed}:{k}:{kind}"``, so each
correction has its own transaction time; a store whose log already holds committed ``probe:`` batches (a
replay, or an earlier run with any seed) is left untouched, so regeneration is byte-identical.
:func:`probe_drafts` rebuilds every question from the logged ops and ``tt`` alone, never from new random
draws, so a replayed store gives the same drafts. Probes are kept independent: no two share a node and
every probe's question window and written interval avoid those of the others, so a later probe cannot
cancel an earlier one's difference. Planted-pattern nodes of a synthetic manifest are never touched.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from tgms.engine.api import OpContext, Store, committed_batches
from tgms.pipeline.tasks.model import Draft, Template
from tgms.pipeline.tasks.probe_kinds import PROBE_KINDS, Ledger, numeric_prop_key, sample_props
from tgms.pipeline.tasks.sampler import Sampler, fmt_time

N_PROBES = 32  # spread evenly over the kinds a dataset supports (>= 30 before-halves for the mutations)
ATTEMPTS = 60  # candidate draws per probe before its slot is skipped
STREAM = 0x70726F62  # "prob": keeps the probes' random streams apart from the templates'
PREFIX = "probe:"

#: the built-in kinds in registration order, and their question templates (``probe.KIND``); the
#: functions below read the registry itself, so a kind registered later takes part too
KINDS: tuple[str, ...] = tuple(PROBE_KINDS)
PROBE_TEMPLATES: dict[str, Template] = {k: PROBE_KINDS[k].template for k in KINDS}


def _planted(root: Any) -> set[str]:
    path = root / "manifest.json"
    if not path.exists():
        return set()
    planted = json.loads(path.read_text()).get("planted") or {}
    return {u for group in ("rings", "pingpongs") for p in planted.get(group, []) for u in p["nodes"]}


def ensure_corrections(store: Store, dataset: str, seed: int) -> int:
    """Write the probes' correction batches (one per probe) unless the log already holds probe batches;
    returns how many were written."""
    if committed_batches(store.root, PREFIX):
        return 0
    ctx = OpContext(store)
    if ctx.edges(None).n == 0:
        return 0
    has_props = any(numeric_prop_key(p) for p in sample_props(ctx))  # bitcoin-otc ratings, synthetic weights
    registered = tuple(PROBE_KINDS)  # a kind's stream is seeded by its position: later kinds add streams
    kinds = [k for k in registered if has_props or not PROBE_KINDS[k].needs_props]
    rngs = {k: np.random.default_rng([seed, registered.index(k), STREAM]) for k in kinds}
    led = Ledger(_planted(store.root))
    written = 0
    for j in range(-(-N_PROBES // len(kinds))):
        for kind in kinds:
            if written >= N_PROBES:
                break
            sampler = Sampler(ctx, dataset, rngs[kind])  # fresh per probe: its caches predate no write
            for _ in range(ATTEMPTS):
                picked = PROBE_KINDS[kind].pick(sampler, led, j)
                if picked is not None:
                    ops, nodes, spans = picked
                    store.write(ops, batch_id=f"{PREFIX}{seed}:{written}:{kind}")
                    led.take(nodes, spans)
                    written += 1
                    break
    return written


# -- rebuilding the questions from the log -----------------------------------------------------------------
def _pinned(steps: list[dict[str, Any]], as_of: int) -> list[dict[str, Any]]:
    return [{**s, "args": {**s["args"], "as_of_tt": as_of}} for s in steps]


def probe_drafts(ctx: OpContext, dataset: str, seed: int) -> list[tuple[Template, Draft, Draft]]:
    """(template, before draft, current draft) per committed ``probe:{seed}:`` batch, in log order."""
    out: list[tuple[Template, Draft, Draft]] = []
    for b in committed_batches(ctx.store.root, f"{PREFIX}{seed}:"):
        kind = PROBE_KINDS.get(b.batch_id.rsplit(":", 1)[-1])
        if kind is None:
            continue
        params, uids, steps, answer = kind.question(b.ops)
        as_of = b.tt - 1
        before_belief = f"as recorded at {fmt_time(as_of)}, before later corrections"
        halves = (
            ("before", {**params, "belief": before_belief}, _pinned(steps, as_of)),
            ("current", {**params, "belief": "according to the current records"}, steps),
        )
        before, current = (
            Draft(p, uids, st, answer, key=(b.batch_id, half), probe_pair=b.batch_id, probe_half=half)
            for half, p, st in halves
        )
        out.append((kind.template, before, current))
    return out


__all__ = ["KINDS", "PROBE_TEMPLATES", "ensure_corrections", "probe_drafts"]
