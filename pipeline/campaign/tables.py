"""The paper's Table 4 (accuracy per suite and system) and its paired differences as a
:class:`pipeline.table.Document`, rendered to Markdown and LaTeX by :mod:`pipeline.table`; the driver prints
and logs them, the report (``reports/``) writes them from what MLflow holds. Table 2 and Table 5 are built
by :func:`pipeline.tasks.stats.table2` and :func:`pipeline.mutations.table5`; their ``*_markdown`` and
``*_latex`` forms are here and there for the callers that want text.

Cells are the MLflow contract's shape: ``{"tags": {...}, "metrics": {...}}`` per child run (what
:meth:`pipeline.campaign.tracking.CampaignTracker.log_cell` returned, or what the report read back).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tgms.pipeline.campaign.cell_metrics import SYSTEM_ORDER, system_key
from tgms.pipeline.mutations import table5, table5_markdown
from tgms.pipeline.scoring.suite import Suite
from tgms.pipeline.table import Cell, Column, Document, Table, fmt_rate, tex_escape, to_latex, to_markdown
from tgms.pipeline.tasks.stats import table2, table2_markdown

__all__ = [
    "SYSTEM_ORDER",
    "comparisons_table",
    "fmt_rate",
    "pooled",
    "system_key",
    "table2",
    "table2_latex",
    "table2_markdown",
    "table4",
    "table4_markdown",
    "table5",
    "table5_latex",
    "table5_markdown",
    "tex_escape",
]

NO_DATA = "no data"
LABEL4 = "tab:accuracy"  # Table 4's LaTeX label, wherever it is written (campaign log, report)


def ablation_key(name: str) -> tuple[int, str]:
    return (0 if name == "none" else 1, name)


# -- Table 4 ---------------------------------------------------------------------------------------------
RATE_COLUMNS = (
    ("accuracy", "accuracy"),
    ("coverage", "coverage"),
    ("conditional_accuracy", "cond. acc."),
    ("probe_accuracy", "probe acc."),
    ("plan_validity_first", "plan valid (1st)"),
    ("execution_success", "exec. success"),
    ("unsupported_rate", "unsupported"),
)


def pooled(cells: Iterable[Mapping[str, Any]], metric: str) -> tuple[float | None, float, float]:
    """``(value, num, den)`` of a rate over several cells (seeds): the sums of numerators and denominators."""
    num = den = 0.0
    for c in cells:
        m = c["metrics"]
        num += float(m.get(f"{metric}_num", 0.0))
        den += float(m.get(f"{metric}_den", 0.0))
    return (num / den if den else None), num, den


def _group(cells: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> dict[tuple[str, ...], list[Mapping]]:
    out: dict[tuple[str, ...], list[Mapping[str, Any]]] = {}
    for c in cells:
        out.setdefault(tuple(str(c["tags"].get(k, "")) for k in keys), []).append(c)
    return out


def table4(cells: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> Document:
    """Table 4: accuracy per suite × system (seeds pooled: numerators and denominators summed), with
    coverage, conditional and probe accuracy, plan validity, execution success and the unsupported-claim
    rate; then the paired bootstrap differences between systems (95% CI, per seed)."""
    title = "Table 4: accuracy per suite and system"
    if not cells:
        empty = Table(name="table4", label=LABEL4, empty=f"{title}: {NO_DATA} (no cell runs).")
        return Document(name="table4", tables=(empty,))
    keys = ("tgms.suite", "tgms.model", "tgms.ablation", "tgms.system")
    groups = _group(cells, keys)
    order = sorted(groups, key=lambda k: (k[0], k[1], ablation_key(k[2]), system_key(k[3])))
    rows = []
    for key in order:
        cs = groups[key]
        seeds = sorted({str(c["tags"].get("tgms.seed", "")) for c in cs}, key=lambda s: (len(s), s))
        infra = sum(int(c["metrics"].get("n_unscored_infra", 0)) for c in cs)
        rates = [Cell.rate(*pooled(cs, m)) for m, _ in RATE_COLUMNS]
        rows.append((*(Cell.of(k) for k in key), Cell.of(",".join(seeds)), *rates, Cell.of(infra)))
    columns = (
        *(Column(name=h) for h in ("suite", "model", "ablation", "system")),
        Column(name="seeds", align="r"),
        # every rate is better higher but the share of unsupported claims
        *(Column(name=h, align="r", lower_is_better=m == "unsupported_rate") for m, h in RATE_COLUMNS),
        Column(name="infra errors", align="r", lower_is_better=True),
    )
    main = Table(
        name="table4",
        label=LABEL4,
        caption=f"{title} (seeds pooled: each rate is the sum of numerators over the sum of denominators, "
        "shown in brackets; infra errors are unscored tasks, left out of every rate).",
        columns=columns,
        rows=tuple(rows),
    )
    return Document(name="table4", tables=(main, comparisons_table(comparisons)))


def table4_markdown(cells: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    return to_markdown(table4(cells, comparisons))


def comparisons_table(comparisons: Sequence[Mapping[str, Any]]) -> Table:
    """The paired bootstrap differences (accuracy of a minus b over the tasks both scored)."""
    title = "Paired differences (accuracy a − b, paired bootstrap, 10,000 resamples, 95% CI)"
    empty = f"{title}: {NO_DATA} (no two systems share a suite, model, seed and ablation)."
    rows = []
    for c in sorted(
        comparisons,
        key=lambda c: (c["suite"], c["model"], str(c["seed"]), ablation_key(c["ablation"]),
                       system_key(c["a"]), system_key(c["b"])),
    ):  # fmt: skip
        if c.get("n"):
            low, high = c["ci_low"], c["ci_high"]
            diff = Cell(text=f"{c['diff']:+.3f}", value=c["diff"], ci_low=low, ci_high=high)
            ci = Cell(text=f"[{low:+.3f}, {high:+.3f}]", ci_low=low, ci_high=high)
        else:
            diff, ci = Cell.of(None), Cell.of("no common scored task")
        # McNemar's exact p on the discordant tasks (older comparisons.json files have none)
        p = c.get("mcnemar_p")
        p_cell = Cell(text=f"{p:.2g}", value=p) if p is not None else Cell.of(None)
        split = f"{c['only_a']} / {c['only_b']}" if c.get("only_a") is not None else None
        ident = (Cell.of(c[k]) for k in ("suite", "model", "seed", "ablation"))
        pair = Cell.of(f"{c['a']} − {c['b']}")
        rows.append((*ident, pair, diff, ci, Cell.of(c["n"]), Cell.of(split), p_cell))
    header = ["suite", "model", "seed", "ablation", "a − b", "diff", "95% CI", "tasks", "only a / only b",
              "McNemar p"]  # fmt: skip
    columns = tuple(Column(name=h, align="l" if i < 5 else "r") for i, h in enumerate(header))
    return Table(name="comparisons", caption=f"{title}.", columns=columns, rows=tuple(rows), empty=empty)


def comparisons_markdown(comparisons: Sequence[Mapping[str, Any]]) -> str:
    return to_markdown(comparisons_table(comparisons))


def table2_latex(suite: Suite) -> str:
    return to_latex(table2(suite))


def table5_latex(result: dict[str, Any]) -> str:
    return to_latex(table5(result))
