"""The numbers a campaign logs, computed from per-task records alone (no MLflow here: the report and the
tests call the same functions on records they read back).

- :func:`cell_metrics`: one cell's flat metric dict (the MLflow contract of a child run): for each of
  :data:`METRICS` the value (left out when its denominator is 0: nothing was measured), ``_num`` and
  ``_den``; ``n_tasks``, ``n_unscored_infra``; ``probe_accuracy`` over the tasks of family ``probe``;
  ``family.<family>.accuracy`` (with ``_num``/``_den``).
- :func:`compare_cells`: the paired bootstrap for every pair of systems that share suite, model, seed and
  ablation, over the tasks both scored (an infrastructure failure on one side drops the task from that
  pair only, so the comparison stays paired).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tgms.pipeline.campaign.outcomes import latest_by_task, outcome_of
from tgms.pipeline.scoring.bootstrap import DEFAULT_RESAMPLES, paired_bootstrap
from tgms.pipeline.scoring.metrics import TaskOutcome, summarize
from tgms.pipeline.scoring.significance import mcnemar_exact
from tgms.pipeline.systems.record import TaskRecord

METRICS = (
    "accuracy",
    "coverage",
    "conditional_accuracy",
    "plan_validity_first",
    "repeat_rate",
    "execution_success",
    "unsupported_rate",
    "mean_tokens",
    "mean_latency_s",
)
PROBE_FAMILY = "probe"
SYSTEM_ORDER = ("tgms", "vector_rag", "static_graph_rag", "text_to_cypher")
#: the tags that make two cells comparable (same tasks, same model, same seed, same ablation)
PAIR_KEYS = ("tgms.suite", "tgms.model", "tgms.seed", "tgms.ablation")
_BAD = re.compile(r"[^\w.\-/ ]")


def metric_key(*parts: object) -> str:
    """A valid MLflow metric name from its parts joined by ``.`` (characters MLflow refuses become ``_``;
    ``/`` in a model name such as ``Qwen/Qwen2.5-7B`` is kept, but never doubled or leading)."""
    name = ".".join(_BAD.sub("_", str(p)) for p in parts)
    return re.sub(r"/+", "/", name).strip("/")


def system_key(name: str) -> tuple[int, str]:
    """Sort key: the paper's system order first, then any other system by name."""
    return (SYSTEM_ORDER.index(name), name) if name in SYSTEM_ORDER else (len(SYSTEM_ORDER), name)


def outcomes(records: Iterable[TaskRecord]) -> tuple[list[TaskOutcome], int, int]:
    """``(scored outcomes, n_tasks, n_unscored)`` of a cell's records (one per task, the last wins)."""
    rows = latest_by_task(records)
    scored = [o for o in map(outcome_of, rows) if o is not None]
    return scored, len(rows), len(rows) - len(scored)


def cell_metrics(records: Iterable[TaskRecord]) -> dict[str, float]:
    """The child run's metrics (see the module doc); every value a float, as MLflow stores them."""
    scored, n_tasks, unscored = outcomes(records)
    out: dict[str, float] = {"n_tasks": float(n_tasks), "n_unscored_infra": float(unscored)}
    summary = summarize(scored)
    for name in METRICS:
        _put(out, name, summary[name])
    probes = [o for o in scored if o.family == PROBE_FAMILY]
    _put(out, "probe_accuracy", summarize(probes)["accuracy"])
    for family in sorted({o.family for o in scored if o.family}):
        fam = [o for o in scored if o.family == family]
        _put(out, metric_key("family", family, "accuracy"), summarize(fam)["accuracy"])
    return out


def _put(out: dict[str, float], name: str, metric: Mapping[str, Any]) -> None:
    if metric["value"] is not None:
        out[name] = float(metric["value"])
    out[f"{name}_num"] = float(metric["num"])
    out[f"{name}_den"] = float(metric["den"])


def compare_cells(
    cells: Sequence[tuple[Mapping[str, str], Sequence[TaskRecord]]],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Paired bootstraps between systems of comparable cells, given as ``(tags, records)`` pairs.

    Each result carries the group (``suite``, ``model``, ``seed``, ``ablation``), the systems ``a`` < ``b``,
    the bootstrap figures (``diff`` = accuracy of a minus b over the common scored tasks, ``ci_low``,
    ``ci_high``, ``n``, ...) and its metric prefix ``key``. Pairs without a common scored task are listed
    with ``n`` 0 and no figures, so a missing comparison is visible rather than silently absent.
    """
    groups: dict[tuple[str, ...], dict[str, dict[str, float]]] = {}
    for tags, records in cells:
        group = tuple(str(tags.get(k, "")) for k in PAIR_KEYS)
        system = str(tags.get("tgms.system", ""))
        scores = groups.setdefault(group, {}).setdefault(system, {})
        for o in outcomes(records)[0]:
            scores[o.task_id] = 1.0 if o.correct else 0.0
    results = []
    for group in sorted(groups):
        by_system = groups[group]
        names = sorted(by_system, key=system_key)  # tgms first: "tgms − baseline" reads as the gain
        for i, a in enumerate(names):
            for b in names[i + 1 :]:
                results.append(_pair(group, a, b, by_system[a], by_system[b], resamples, seed))
    return results


def _pair(
    group: tuple[str, ...],
    a: str,
    b: str,
    sa: Mapping[str, float],
    sb: Mapping[str, float],
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    suite, model, run_seed, ablation = group
    common = sorted(set(sa) & set(sb))
    row: dict[str, Any] = {
        "suite": suite,
        "model": model,
        "seed": run_seed,
        "ablation": ablation,
        "a": a,
        "b": b,
        "key": metric_key("ci", suite, model, f"s{run_seed}", ablation, f"{a}__{b}"),
        "n": len(common),
    }
    if common:
        boot = paired_bootstrap(
            [sa[t] for t in common], [sb[t] for t in common], resamples=resamples, seed=seed
        )
        # the bootstrap's own seed must not overwrite the cell's sampling seed
        row.update({k: v for k, v in boot.items() if k not in ("n", "seed")}, bootstrap_seed=boot["seed"])
        # McNemar's exact p beside the CI (pipeline.scoring.significance)
        row.update(mcnemar_exact([sa[t] for t in common], [sb[t] for t in common]))
    return row


def comparison_metrics(comparisons: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """The parent run's CI metrics: ``<key>.diff``, ``<key>.low``, ``<key>.high`` per measured pair."""
    out: dict[str, float] = {}
    for c in comparisons:
        if c.get("n"):
            out[f"{c['key']}.diff"] = float(c["diff"])
            out[f"{c['key']}.low"] = float(c["ci_low"])
            out[f"{c['key']}.high"] = float(c["ci_high"])
            out[f"{c['key']}.mcnemar_p"] = float(c["mcnemar_p"])
    return out
