"""Write a report directory from :class:`reports.read.ReportData`: every table as Markdown, LaTeX and JSON
(all three from the one table model), the PNG plots, and ``report.md`` (all tables in the paper's order,
then what could not be drawn)."""

from __future__ import annotations

from pathlib import Path

from tgms.pipeline.table import to_latex, to_markdown
from tgms.reports.plots import accuracy_by_model_size, accuracy_by_system
from tgms.reports.read import ReportData
from tgms.reports.tables import all_tables


def write_report(data: ReportData, out: str | Path) -> list[Path]:
    """Write the report into ``out`` (created); the files written, in order."""
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections: list[str] = []
    for stem, table in all_tables(data):
        md = to_markdown(table)
        for suffix, text in ((".md", md), (".tex", to_latex(table)), (".json", table.model_dump_json())):
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
