"""Scoring of the evaluation pipeline (DESIGN §4): the typed-answer rule, campaign metrics with explicit
denominators, and paired bootstrap CIs between systems. Kept apart from the engine: it judges answers,
it never produces them."""

from tgms.pipeline.scoring.bootstrap import all_pairs, paired_bootstrap, resampled_means
from tgms.pipeline.scoring.metrics import (
    Metric,
    TaskOutcome,
    breakdown,
    per_task_scores,
    ratio,
    summarize,
)
from tgms.pipeline.scoring.typed import IOU_THRESHOLD, RULES, iou, score

__all__ = [
    "IOU_THRESHOLD",
    "RULES",
    "Metric",
    "TaskOutcome",
    "all_pairs",
    "breakdown",
    "iou",
    "paired_bootstrap",
    "per_task_scores",
    "ratio",
    "resampled_means",
    "score",
    "summarize",
]
