"""T2: planted-pattern mining on the synthetic generator's store; the gold comes from its manifest (the
planted instances), and the engine's answer must agree with it or the draw is dropped.

Each question names the planted pattern's nodes mixed with as many decoys (active nodes outside every
planted pattern) and the pattern's isolation window, inside which the planted instance is the only one
among its nodes."""

from __future__ import annotations

from functools import partial
from typing import Any

from tgms.pipeline.tasks.model import Draft, step, template
from tgms.pipeline.tasks.sampler import Sampler, fmt_duration, window_words

_WORDS = {
    "M_triangle_cyclic": "a cyclic triangle (u→v, v→w, w→u)",
    "M_2node_pingpong": "a ping-pong (u→v, v→u, u→v)",
}


def _planted(s: Sampler, *, group: str) -> Draft | None:
    pats: list[dict[str, Any]] = (s.manifest.get("planted") or {}).get(group) or []
    if not pats:
        return None
    p = s.choice(pats)
    planted = s.manifest.get("planted") or {}
    planted_nodes = {u for grp in ("rings", "pingpongs") for x in planted.get(grp) or [] for u in x["nodes"]}
    decoys: list[str] = []
    for _ in range(50):
        if len(decoys) == len(p["nodes"]):
            break
        u = s.active_uid()
        if u not in planted_nodes and u not in decoys:
            decoys.append(u)
    nodes = sorted(p["nodes"] + decoys)
    t_a, t_b = p["isolation_window"]
    args = {
        "motif": p["motif"],
        "delta": p["delta"],
        "window": {"t_a": t_a, "t_b": t_b},
        "node_filter": nodes,
        "limit": 1,
    }
    return Draft(
        {
            "nodes": ", ".join(nodes),
            "pattern": _WORDS[p["motif"]],
            "delta": fmt_duration(p["delta"]),
            **window_words(args["window"]),
            "k": len(p["nodes"]),
        },
        tuple(nodes),
        [step("s1", "find_temporal_motif_instances", args)],
        "s1.rows[0].nodes",
        key=(p["id"],),
        manifest_gold=sorted(p["nodes"]),
    )


# the planted groups, one template each: (template, manifest group, paraphrases)
GROUPS = (
    (
        "T2.planted_ring",
        "rings",
        (
            "Among the nodes {nodes}, which {k} form {pattern} completed within {delta} between {t_a} and "
            "{t_b}?",
            "Between {t_a} and {t_b}, which {k} of {nodes} exchange messages forming {pattern} within "
            "{delta}?",
            "Find the {k} nodes among {nodes} that make up {pattern} spanning at most {delta} inside "
            "[{t_a}, {t_b}).",
        ),
    ),
    (
        "T2.planted_pingpong",
        "pingpongs",
        (
            "Among the nodes {nodes}, which {k} carry out {pattern} completed within {delta} between {t_a} "
            "and {t_b}?",
            "Between {t_a} and {t_b}, which {k} of {nodes} exchange messages as {pattern} within {delta}?",
            "Which {k} nodes of {nodes} form {pattern} spanning at most {delta} inside [{t_a}, {t_b})?",
        ),
    ),
)
for _name, _group, _paraphrases in GROUPS:
    template(
        _name,
        kind="entity_set",
        ops=("find_temporal_motif_instances",),
        datasets=("synthetic",),
        paraphrases=_paraphrases,
    )(partial(_planted, group=_group))
