"""The paper's tables as Markdown, and any of them as LaTeX: the driver prints and logs them, the report
(``reports/``) writes them from what MLflow holds.

Every table is built as Markdown first (:func:`markdown_table`), and :func:`md_to_latex` turns a Markdown
document of caption lines, pipe tables and notes into LaTeX (``table`` + ``tabular`` with the Markdown
alignment, cells escaped), so the two forms cannot disagree. Table 2 and Table 5 reuse their existing
Markdown renderers (:func:`pipeline.tasks.stats.table2_markdown`, :func:`pipeline.mutations.table5_markdown`).

Cells are the MLflow contract's shape: ``{"tags": {...}, "metrics": {...}}`` per child run (what
:meth:`pipeline.campaign.tracking.CampaignTracker.log_cell` returned, or what the report read back).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pipeline.campaign.cell_metrics import SYSTEM_ORDER, system_key
from pipeline.mutations import table5_markdown
from pipeline.tasks.stats import table2_markdown

__all__ = [
    "SYSTEM_ORDER",
    "fmt_rate",
    "markdown_table",
    "md_to_latex",
    "pooled",
    "system_key",
    "table2_latex",
    "table2_markdown",
    "table4_markdown",
    "table5_latex",
    "table5_markdown",
]

NO_DATA = "no data"


def ablation_key(name: str) -> tuple[int, str]:
    return (0 if name == "none" else 1, name)


def markdown_table(header: Sequence[str], align: str, rows: Iterable[Sequence[Any]]) -> str:
    """A pipe table; ``align`` has one letter per column, ``l`` or ``r``."""
    if len(align) != len(header):
        raise ValueError(f"align {align!r} has {len(align)} letters for {len(header)} columns")
    rule = "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"
    lines = ["| " + " | ".join(header) + " |", rule]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"a row has {len(row)} cells for {len(header)} columns: {row!r}")
        lines.append("| " + " | ".join("—" if c is None else str(c).replace("|", "/") for c in row) + " |")
    return "\n".join(lines)


def fmt_rate(value: float | None, num: float | None = None, den: float | None = None) -> str:
    """``0.500 (3/6)``; ``—`` when nothing was measured (denominator 0 or missing)."""
    if value is None or not den:
        return "—" if not den else f"— (0/{int(den)})"
    if num is None:
        return f"{value:.3f}"
    return f"{value:.3f} ({_int(num)}/{int(den)})"


def _int(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


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


def table4_markdown(cells: Sequence[Mapping[str, Any]], comparisons: Sequence[Mapping[str, Any]] = ()) -> str:
    """Table 4: accuracy per suite × system (seeds pooled: numerators and denominators summed), with
    coverage, conditional and probe accuracy, plan validity, execution success and the unsupported-claim
    rate; then the paired bootstrap differences between systems (95% CI, per seed)."""
    title = "Table 4: accuracy per suite and system"
    if not cells:
        return f"{title}: {NO_DATA} (no cell runs).\n"
    keys = ("tgms.suite", "tgms.model", "tgms.ablation", "tgms.system")
    groups = _group(cells, keys)
    order = sorted(groups, key=lambda k: (k[0], k[1], ablation_key(k[2]), system_key(k[3])))
    rows = []
    for key in order:
        cs = groups[key]
        seeds = sorted({str(c["tags"].get("tgms.seed", "")) for c in cs}, key=lambda s: (len(s), s))
        infra = sum(int(c["metrics"].get("n_unscored_infra", 0)) for c in cs)
        rates = [fmt_rate(*pooled(cs, m)) for m, _ in RATE_COLUMNS]
        rows.append([*key, ",".join(seeds), *rates, infra])
    header = ["suite", "model", "ablation", "system", "seeds", *(h for _, h in RATE_COLUMNS), "infra errors"]
    lines = [
        f"{title} (seeds pooled: each rate is the sum of numerators over the sum of denominators, shown "
        "in brackets; infra errors are unscored tasks, left out of every rate).",
        "",
        markdown_table(header, "llll" + "r" * (len(header) - 4), rows),
        "",
        comparisons_markdown(comparisons),
    ]
    return "\n".join(lines)


def comparisons_markdown(comparisons: Sequence[Mapping[str, Any]]) -> str:
    """The paired bootstrap differences (accuracy of a minus b over the tasks both scored)."""
    title = "Paired differences (accuracy a − b, paired bootstrap, 10,000 resamples, 95% CI)"
    if not comparisons:
        return f"{title}: {NO_DATA} (no two systems share a suite, model, seed and ablation).\n"
    rows = []
    for c in sorted(
        comparisons,
        key=lambda c: (c["suite"], c["model"], str(c["seed"]), ablation_key(c["ablation"]),
                       system_key(c["a"]), system_key(c["b"])),
    ):  # fmt: skip
        if c.get("n"):
            diff, ci = f"{c['diff']:+.3f}", f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]"
        else:
            diff, ci = "—", "no common scored task"
        # McNemar's exact p on the discordant tasks (older comparisons.json files have none)
        p = f"{c['mcnemar_p']:.2g}" if c.get("mcnemar_p") is not None else "—"
        split = f"{c['only_a']} / {c['only_b']}" if c.get("only_a") is not None else "—"
        rows.append(
            [c["suite"], c["model"], c["seed"], c["ablation"], f"{c['a']} − {c['b']}", diff, ci, c["n"],
             split, p]
        )  # fmt: skip
    header = ["suite", "model", "seed", "ablation", "a − b", "diff", "95% CI", "tasks", "only a / only b",
              "McNemar p"]  # fmt: skip
    return f"{title}.\n\n" + markdown_table(header, "lllllrrrrr", rows) + "\n"


# -- LaTeX -----------------------------------------------------------------------------------------------
_TEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}
_TEX_UNICODE = {"—": "---", "–": "--", "−": "$-$", "…": r"\ldots{}", "×": r"$\times$", "±": r"$\pm$",
                "→": r"$\rightarrow$", "≥": r"$\geq$", "≤": r"$\leq$", "§": r"\S{}"}  # fmt: skip
_TEX_RE = re.compile("|".join(re.escape(k) for k in [*_TEX_SPECIAL, *_TEX_UNICODE]))


def tex_escape(text: str) -> str:
    """Text safe in a LaTeX paragraph or cell (specials escaped, a few symbols spelled in LaTeX)."""
    text = text.replace("`", "")
    return _TEX_RE.sub(lambda m: _TEX_SPECIAL.get(m.group(0)) or _TEX_UNICODE[m.group(0)], text)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_rule(line: str) -> bool:
    return bool(re.fullmatch(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?", line.strip()))


def md_to_latex(md: str, label: str | None = None) -> str:
    """A Markdown document (caption lines, pipe tables, notes) as LaTeX: the text before the first table
    is the caption, each table a ``tabular`` (``r`` columns where the Markdown rule says ``---:``), the
    text between and after tables ``\\par`` paragraphs. A document without a table is its text alone."""
    lines = md.splitlines()
    blocks: list[tuple[str, list[str]]] = []  # ("text" | "table", lines)
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and _is_rule(lines[i + 1]):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            blocks.append(("table", lines[i:j]))
            i = j
        else:
            if blocks and blocks[-1][0] == "text":
                blocks[-1][1].append(lines[i])
            else:
                blocks.append(("text", [lines[i]]))
            i += 1
    if not any(kind == "table" for kind, _ in blocks):
        return "% " + "\n% ".join(lines) + "\n" + tex_escape(" ".join(x for x in lines if x.strip())) + "\n"
    out = ["\\begin{table}[t]", "\\centering", "\\small"]
    caption_done = False
    for kind, body in blocks:
        text = " ".join(x.strip() for x in body if x.strip())
        if kind == "text":
            if not text:
                continue
            if not caption_done:
                out.append(f"\\caption{{{tex_escape(text)}}}")
                if label:
                    out.append(f"\\label{{{label}}}")
                caption_done = True
            else:
                out.append(f"\\par\\medskip{{\\footnotesize {tex_escape(text)}}}\\par\\medskip")
            continue
        caption_done = True  # a table before any text: no caption
        header, rule, rows = _cells(body[0]), _cells(body[1]), [_cells(r) for r in body[2:]]
        cols = "".join("r" if r.endswith(":") else "l" for r in rule)
        out.append(f"\\begin{{tabular}}{{{cols}}}")
        out.append("\\hline")
        out.append(" & ".join(tex_escape(h) for h in header) + " \\\\")
        out.append("\\hline")
        for r in rows:
            r = (r + [""] * len(header))[: len(header)]
            out.append(" & ".join(tex_escape(c) for c in r) + " \\\\")
        out.append("\\hline")
        out.append("\\end{tabular}")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


def table2_latex(suite: dict[str, Any]) -> str:
    return md_to_latex(table2_markdown(suite), label="tab:suite")


def table5_latex(result: dict[str, Any]) -> str:
    return md_to_latex(table5_markdown(result), label="tab:mutations")
