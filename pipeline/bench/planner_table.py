"""The figures and the table of ``tgms bench planner``, computed from a campaign cell's task records alone.

Every figure is read from the records (:mod:`pipeline.systems.record`) through the scoring layer's
outcomes where one exists (accuracy, first-emission validity, repeat rate, tokens), so the benchmark and
the campaign's MLflow metrics cannot disagree. Two figures the scoring layer does not have are read from
the records here:

- **valid after repair**: tasks where some plan (tgms) or query (text_to_cypher) attempt passed, over the
  tasks with at least one attempt (a baseline without plans has none: not measured);
- **seconds per task**: median and 90th percentile (nearest rank) of the task wall time, over the tasks whose
  model calls were all live (a task answered from the response cache took ~0 s; the table says how many
  tasks a timing covers when some were cached).

A task that ended in an infrastructure error is not scored; it is counted apart (``infra``), never as
wrong, and a rerun of the same benchmark retries it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tgms.pipeline.campaign.cell_metrics import outcomes, system_key
from tgms.pipeline.campaign.outcomes import latest_by_task
from tgms.pipeline.scoring.bootstrap import resampled_means
from tgms.pipeline.scoring.metrics import Metric, ratio, summarize
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.table import Table, to_markdown

CI_RESAMPLES = 2000
CI_SEED = 0


def p90(values: Sequence[float]) -> float | None:
    """The nearest-rank 90th percentile (an observed value, so it reads as "9 in 10 tasks took at most")."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]


def accuracy_ci(correct: Sequence[bool]) -> tuple[float, float] | None:
    """A 95% percentile bootstrap interval of the accuracy over tasks; None under two tasks."""
    if len(correct) < 2:
        return None
    means = resampled_means(np.asarray(correct, dtype=np.float64), resamples=CI_RESAMPLES, seed=CI_SEED)
    low, high = np.percentile(means, [2.5, 97.5])
    return round(float(low), 4), round(float(high), 4)


def cell_row(system: str, ablation: str, records: Sequence[TaskRecord]) -> dict[str, Any]:
    """One configuration's figures (see the module docstring); every rate as ``{value, num, den}``."""
    rows = latest_by_task(records)
    scored, n_tasks, unscored = outcomes(rows)
    summary = summarize(scored)
    finished = [r for r in rows if r.status != "infra_error"]
    tried = [r for r in finished if r.attempts]
    after: Metric = ratio(sum(any(a.valid for a in r.attempts) for r in tried), len(tried))
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    # a task answered from the response cache took ~0 s: it says nothing about the model's speed
    seconds = [r.latency_s for r in finished if not any(c.cached for c in r.llm_calls)]
    return {
        "system": system,
        "ablation": ablation,
        "tasks": n_tasks,
        "scored": len(scored),
        "infra": unscored,
        "first_emission_valid": summary["plan_validity_first"],
        "valid_after_repair": after,
        "repeat_rate": summary["repeat_rate"],
        "accuracy": summary["accuracy"],
        "accuracy_ci95": accuracy_ci([o.correct for o in scored]),
        "abstained": statuses.get("abstained", 0),
        "model_error": statuses.get("model_error", 0),
        "refused": statuses.get("refused", 0),
        "statuses": statuses,
        "timed": len(seconds),
        "seconds_median": round(statistics.median(seconds), 3) if seconds else None,
        "seconds_p90": round(p90(seconds) or 0.0, 3) if seconds else None,
        "tokens_per_task": summary["mean_tokens"],
    }


def row_key(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return (*system_key(str(row["system"])), row["ablation"] != "none", row["ablation"])


def _rate(m: Mapping[str, Any]) -> str:
    if not m["den"]:
        return "—"
    return f"{m['num']}/{m['den']} ({m['value']:.2f})"


def _accuracy(row: Mapping[str, Any]) -> str:
    text = _rate(row["accuracy"])
    ci = row["accuracy_ci95"]
    return text if ci is None else f"{text} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _num(value: float | None, fmt: str) -> str:
    return "—" if value is None else format(value, fmt)


def _seconds(row: Mapping[str, Any], key: str) -> str:
    """A timing, with how many tasks it covers when some came from the response cache (untimed)."""
    text = _num(row[key], ".1f")
    timed = row.get("timed")
    finished = row["tasks"] - row["infra"]
    return text if timed is None or timed >= finished or row[key] is None else f"{text} ({timed} timed)"


def rows_model(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The configurations' figures as a bare table (no caption)."""
    header = ["system", "ablation", "tasks", "first-emission valid", "valid after repair", "repeat rate",
              "accuracy [95% CI]", "abstained", "model errors", "s/task median", "s/task p90",
              "tokens/task"]  # fmt: skip
    body = []
    for r in sorted(rows, key=row_key):
        tasks = f"{r['tasks']}" + (f" ({r['infra']} infra)" if r["infra"] else "")
        tokens = r["tokens_per_task"]["value"]
        body.append(
            (r["system"], r["ablation"], tasks, _rate(r["first_emission_valid"]),
             _rate(r["valid_after_repair"]), _rate(r["repeat_rate"]), _accuracy(r), r["abstained"],
             r["model_error"],
             _seconds(r, "seconds_median"), _seconds(r, "seconds_p90"), _num(tokens, ",.0f"))
        )  # fmt: skip
    return Table.of(header, "llrrrrrrrrrr", body, none="", name="bench_planner", label="tab:bench_planner")


def rows_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The Markdown table of the configurations' figures."""
    return to_markdown(rows_model(rows))


def table(data: Mapping[str, Any]) -> Table:
    """The header lines as the caption, then the table: what the campaign's parent run logs under
    ``tables/bench_planner`` (Markdown, LaTeX, JSON)."""
    caption = "\n".join(f"- {line}" for line in header_lines(data))
    return rows_model(data["rows"]).model_copy(update={"caption": caption})


def header_lines(data: Mapping[str, Any]) -> list[str]:
    """What was measured where: machine, load, model and its file, tasks, configuration, the campaign."""
    m, mod, run = data["machine"], data["model"], data["run"]
    load = data["load"]
    switches = f"; switches {run['switches']}" if run.get("switches") else ""
    sha = mod.get("sha256")
    if sha:
        file = f"file SHA-256 {sha} ({mod['sha256_check']})"
    elif mod["kind"] == "scripted" or mod["name"] == "scripted":
        file = "the scripted TEST DOUBLE, no model: a check of the pipeline, never a result"
    elif mod["kind"] == "local":
        file = "the GGUF its local engine ships with (no model_file in its config)"
    else:
        file = "no model file in its config (served elsewhere)"
    return [
        f"Measured {data['when']} UTC on {m['host']}: {m['cores']} cores, {m['memory_gib']} GiB, "
        f"{m['cpu']}; load (1/5/15 min) {_load(load['start'])} at the start, {_load(load['end'])} at the "
        f"end; {data['seconds']:,.0f} s wall; code {data.get('code', 'unknown')}"
        + (
            f" (this table rebuilt {data['rebuilt']} UTC from the run's records, no request sent)."
            if data.get("rebuilt")
            else "."
        ),
        f"Model {mod['name']} ({mod['kind']}"
        + (f", served by {mod['engine']}" if mod.get("engine") else "")
        + (f", {mod['quantization']}" if mod.get("quantization") else "")
        + f", temperature {mod['temperature']:g}, max_tokens {mod['max_tokens']}); {file}.",
        f"Tasks: {run['suite']} {run['split']} {run['selection']} ({run['n_tasks']} tasks, families "
        f"{', '.join(f'{k} {v}' for k, v in run['families'].items())}); seed {run['seed']}; repair budget "
        f"{run['repair_budget']}{switches}.",
        f"Campaign run directory {run['run_dir']}; MLflow run {run['mlflow_run_id']} in "
        f"{run['tracking_uri']}.",
    ]


def _load(values: Sequence[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def markdown(data: Mapping[str, Any]) -> str:
    """The header lines, then the table (the ``--update-docs`` section and the printed output)."""
    return "\n".join(f"- {line}" for line in header_lines(data)) + "\n\n" + rows_table(data["rows"])
