"""The report's tables from :class:`reports.read.ReportData`, each a :class:`pipeline.table.Table` or
:class:`pipeline.table.Document` (Markdown, LaTeX and JSON come from it: :mod:`reports.build`).

A table with nothing to show is one line saying so, never an empty or made-up table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from tgms.pipeline.campaign.tables import NO_DATA, ablation_key, pooled, system_key
from tgms.pipeline.campaign.tables import table4 as table4_of
from tgms.pipeline.latency.operators import table_model as ops_table
from tgms.pipeline.mutations import table5 as table5_of
from tgms.pipeline.systems.base import load_systems
from tgms.pipeline.table import Cell, Document, Table
from tgms.pipeline.tasks.stats import LABEL as TABLE2_LABEL
from tgms.reports.read import ReportData

Shown = Table | Document


def table2(data: ReportData) -> Shown:
    """Every suite's Table 2 as the campaigns logged it (distinct ones, one after the other)."""
    if not data.table2:
        empty = f"Table 2: {NO_DATA} (no campaign run logged tables/table2.md)."
        return Table(name="table2", label=TABLE2_LABEL, empty=empty)
    return Document(name="table2", tables=tuple(t for doc in data.table2 for t in doc.tables))


def table3(data: ReportData) -> Table:
    """What each system sees: the registry's description, its knobs as the campaign configured them, and
    the cells it ran."""
    title = "Table 3: what each system sees"
    fields: dict[str, Any] = {"name": "table3", "label": "tab:systems"}
    systems = sorted({c.tags.get("tgms.system", "") for c in data.cells} - {""}, key=system_key)
    if not systems:
        return Table(empty=f"{title}: {NO_DATA} (no cell runs).", **fields)
    specs = load_systems()
    params = data.parent_params()
    rows = []
    for s in systems:
        prefix = f"catalog.systems.{s}."
        knobs = {k[len(prefix) :]: v for k, v in sorted(params.items()) if k.startswith(prefix)}
        cells = [c for c in data.cells if c.tags.get("tgms.system") == s]
        ablations = sorted({c.tags.get("tgms.ablation", "none") for c in cells}, key=ablation_key)
        doc = specs[s].doc.splitlines()[0] if s in specs else "(not a registered system)"
        knob_text = ", ".join(f"{k}={v}" for k, v in knobs.items()) or "defaults"
        rows.append([s, doc, knob_text, len(cells), ", ".join(ablations)])
    used = sorted({c.tags.get("tgms.ablation", "none") for c in data.cells} - {"none"}, key=ablation_key)
    notes = [
        f"- {a}: {params.get(f'catalog.ablations.{a}.description', '(no description logged)')}" for a in used
    ]
    return Table.of(
        ["system", "sees", "knobs", "cells", "ablations"],
        "lllrl",
        rows,
        caption=f"{title} (description from the system registry; knobs as the campaign configured them).",
        notes=("\n".join(["Ablations:", *notes]),) if notes else (),
        **fields,
    )


def table4(data: ReportData) -> Document:
    return table4_of([c.as_cell() for c in data.cells], data.comparisons)


def table5(data: ReportData) -> Shown:
    if not data.mutations:
        return Table(name="table5", label="tab:mutations", empty=f"Table 5: {NO_DATA} (no mutations run).")
    return Document(name="table5", tables=tuple(table5_of(m) for m in data.mutations))


def params_b(cell_tags: Mapping[str, str], params: Mapping[str, str]) -> float | None:
    """The model size in billions from the cell's ``tgms.params_b`` tag, else the config's
    ``model.params_b`` param; None when neither holds a positive number."""
    for raw in (cell_tags.get("tgms.params_b"), params.get("model.params_b")):
        try:
            value = float(raw) if raw is not None else math.nan
        except ValueError:
            continue
        if value > 0:
            return value
    return None


def scale_rows(data: ReportData) -> list[dict[str, Any]]:
    """Accuracy per (suite, model, system) over ablation ``none``, seeds pooled, with the model's size."""
    params = data.parent_params()
    groups: dict[tuple[str, str, str], list[Any]] = {}
    sizes: dict[str, float | None] = {}
    for c in data.cells:
        if c.tags.get("tgms.ablation", "none") != "none":
            continue
        model = c.tags.get("tgms.model", "")
        sizes[model] = sizes.get(model) or params_b(c.tags, {**params, **c.params})
        groups.setdefault((c.tags.get("tgms.suite", ""), model, c.tags.get("tgms.system", "")), []).append(c)
    rows = []
    for (suite, model, system), cs in groups.items():
        value, num, den = pooled([c.as_cell() for c in cs], "accuracy")
        rows.append({"suite": suite, "model": model, "params_b": sizes.get(model), "system": system,
                     "accuracy": value, "num": num, "den": den})  # fmt: skip
    return rows


def table6(data: ReportData) -> Table:
    """Accuracy by model size: one row per (suite, model), one column per system."""
    title = "Table 6: accuracy by model size"
    fields: dict[str, Any] = {"name": "table6", "label": "tab:scale"}
    rows = scale_rows(data)
    if not rows:
        return Table(empty=f"{title}: {NO_DATA} (no cell runs with ablation none).", **fields)
    systems = sorted({r["system"] for r in rows}, key=system_key)
    models = sorted(
        {(r["suite"], r["model"], r["params_b"]) for r in rows},
        key=lambda x: (x[0], x[2] is None, x[2] or 0.0, x[1]),
    )
    by = {(r["suite"], r["model"], r["system"]): r for r in rows}
    body = []
    for suite, model, size in models:
        cells = [by.get((suite, model, s)) for s in systems]
        body.append(
            [suite, model, Cell(text="—" if size is None else f"{size:g}", value=size)]
            + [Cell.rate(r["accuracy"], r["num"], r["den"]) if r else Cell.of(None) for r in cells]
        )
    note = "one model" if len({m for _, m, _ in models}) == 1 else f"{len({m for _, m, _ in models})} models"
    return Table.of(
        ["suite", "model", "params (B)", *systems],
        "llr" + "r" * len(systems),
        body,
        caption=f"{title} ({note}; ablation none; seeds pooled; accuracy (correct/scored)).",
        **fields,
    )


def ops(data: ReportData) -> Shown:
    title = "§5.6 operator latency"
    fields: dict[str, Any] = {"name": "ops", "label": "tab:operators"}
    if not data.ops:
        return Table(empty=f"{title}: {NO_DATA} (no ops_bench run).", **fields)
    parts = []
    for records in data.ops:
        scales = ", ".join(dict.fromkeys(str(r.get("scale")) for r in records))
        caption = (
            f"{title} (scales {scales}; p50/p95 over timed repetitions after one warm-up; target = the "
            "paper's p50 where one applies)."
        )
        parts.append(ops_table(records).model_copy(update={"caption": caption, **fields}))
    return Document(name="ops", tables=tuple(parts))


def all_tables(data: ReportData) -> list[tuple[str, Shown]]:
    """``(file stem, table)`` for every table of the report, in the paper's order."""
    return [
        ("table2", table2(data)),
        ("table3", table3(data)),
        ("table4", table4(data)),
        ("table5", table5(data)),
        ("table6", table6(data)),
        ("ops", ops(data)),
    ]


def wilson(num: float, den: float, z: float = 1.959963984540054) -> tuple[float, float] | None:
    """The 95% Wilson score interval of a proportion ``num/den`` (None when ``den`` is 0)."""
    if den <= 0:
        return None
    p = num / den
    centre = (p + z * z / (2 * den)) / (1 + z * z / den)
    half = z * math.sqrt(p * (1 - p) / den + z * z / (4 * den * den)) / (1 + z * z / den)
    return max(0.0, centre - half), min(1.0, centre + half)


def by_system(data: ReportData) -> list[dict[str, Any]]:
    """Accuracy per (suite, model, ablation, system), seeds pooled, with its Wilson interval (the plot)."""
    groups: dict[tuple[str, ...], list[Any]] = {}
    for c in data.cells:
        key = tuple(c.tags.get(k, "") for k in ("tgms.suite", "tgms.model", "tgms.ablation", "tgms.system"))
        groups.setdefault(key, []).append(c.as_cell())
    out = []
    for (suite, model, ablation, system), cs in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], ablation_key(kv[0][2]), system_key(kv[0][3]))
    ):
        value, num, den = pooled(cs, "accuracy")
        out.append({"suite": suite, "model": model, "ablation": ablation, "system": system,
                    "accuracy": value, "num": num, "den": den, "ci": wilson(num, den)})  # fmt: skip
    return out


def has_rows(rows: Sequence[Mapping[str, Any]]) -> bool:
    return any(r.get("den") for r in rows)
