"""Write a report directory from :class:`reports.read.ReportData`: every table as Markdown and LaTeX, the
PNG plots, and ``report.md`` (all tables in the paper's order, then what could not be drawn)."""

from __future__ import annotations

from pathlib import Path

from pipeline.campaign.tables import md_to_latex
from reports.plots import accuracy_by_model_size, accuracy_by_system
from reports.read import ReportData
from reports.tables import all_tables

LABELS = {"table2": "tab:suite", "table3": "tab:systems", "table4": "tab:accuracy", "table5": "tab:mutations",
          "table6": "tab:scale", "ops": "tab:operators"}  # fmt: skip


def write_report(data: ReportData, out: str | Path) -> list[Path]:
    """Write the report into ``out`` (created); the files written, in order."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections: list[str] = []
    for stem, md in all_tables(data):
        if stem == "table2" and data.table2:  # logged by the driver in both forms: keep them as they are
            tex = "\n".join(t or md_to_latex(m, LABELS[stem]) for m, t in data.table2)
        else:
            tex = md_to_latex(md, LABELS[stem])
        for suffix, text in ((".md", md), (".tex", tex)):
            path = d / f"{stem}{suffix}"
            path.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
            written.append(path)
        sections.append(md.rstrip())
    plots = []
    for name, draw in (
        ("accuracy by system", accuracy_by_system),
        ("accuracy by model size", accuracy_by_model_size),
    ):
        png = draw(data, d)
        if png is None:
            plots.append(f"- {name}: not drawn (no data).")
        else:
            written.append(png)
            plots.append(f"- {name}: ![{name}]({png.name})")
    runs = ", ".join(p.info.run_id for p in data.parents) or "none"
    head = ["# Campaign report", "", f"Campaign parent runs: {runs}; cell runs: {len(data.cells)}.", ""]
    tail = ["", "## Plots", "", *plots]
    if data.notes:
        tail += ["", "## Notes", "", *(f"- {n}" for n in data.notes)]
    report = d / "report.md"
    report.write_text(
        "\n".join(head) + "\n\n".join(sections) + "\n" + "\n".join(tail) + "\n", encoding="utf-8"
    )
    written.append(report)
    return written
