"""One table model for every table the project prints, logs or writes for the paper: a :class:`Table` of
:class:`Column` s and rows of :class:`Cell` s, rendered to Markdown (:func:`to_markdown`) and LaTeX
(:func:`to_latex`) from the same object, and to JSON by pydantic (``model_dump_json``; :func:`from_json`
reads it back). Several tables shown as one (Table 4 and its paired differences) are a :class:`Document`.

A cell keeps its numbers (``value``, a rate's ``num``/``den``, a CI) beside its display ``text``: the
renderers print only the text, so the Markdown and LaTeX cannot disagree, and whatever comes later (bolding
the best value, sorting, a JSON export) reads numbers instead of parsing ``0.500 (3/6)`` back.

The Markdown layout is the one the project's tables have always had (``tables/*.md`` of earlier runs are
byte-identical), and the LaTeX the one ``md_to_latex`` used to parse back out of that Markdown: the first
text is the ``\\caption``, each table a ``tabular`` with its columns' alignment, the text between and after
tabulars ``\\par`` paragraphs. :func:`parse_markdown` remains for Markdown that has no model behind it
(tables logged before the model existed, or handed over as text).

The bottom layer of ``pipeline`` (pyproject.toml, contract ``pipeline-layers``): the standard library and
pydantic only, so any layer may build tables.
"""

from __future__ import annotations

import json
import numbers
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "Cell",
    "Column",
    "Document",
    "Table",
    "fmt_rate",
    "from_json",
    "parse_markdown",
    "tex_escape",
    "to_latex",
    "to_markdown",
]

Align = Literal["l", "r"]
Scalar = bool | int | float | str | None
NONE_TEXT = "—"  # what a missing value prints as in the paper's tables


def _int(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def fmt_rate(value: float | None, num: float | None = None, den: float | None = None) -> str:
    """``0.500 (3/6)``; ``—`` when nothing was measured (denominator 0 or missing)."""
    if value is None or not den:
        return "—" if not den else f"— (0/{int(den)})"
    if num is None:
        return f"{value:.3f}"
    return f"{value:.3f} ({_int(num)}/{int(den)})"


def _scalar(value: Any) -> Scalar:
    """A JSON scalar for ``Cell.value`` (numpy numbers become Python ones; anything else its text)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    return str(value)


class Cell(BaseModel):
    """One cell: its display ``text`` (all a renderer prints) and the numbers behind it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    value: Scalar = None
    num: float | None = None
    den: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None

    @classmethod
    def of(cls, value: Any, none: str = NONE_TEXT) -> Cell:
        """A cell showing ``value`` as ``str(value)``, ``none`` when it is None (a Cell stays as it is)."""
        if isinstance(value, Cell):
            return value
        return cls(text=none if value is None else str(value), value=_scalar(value))

    @classmethod
    def rate(cls, value: float | None, num: float | None = None, den: float | None = None) -> Cell:
        """A rate with its numerator and denominator, shown as :func:`fmt_rate` does (``0.500 (3/6)``)."""
        return cls(text=fmt_rate(value, num, den), value=value, num=num, den=den)


class Column(BaseModel):
    """A column: its header, alignment (``l``/``r``) and, where it means something, which way is better."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    align: Align = "l"
    lower_is_better: bool | None = None


def _column(name: str, align: str) -> Column:
    """A column from an alignment letter (validated: ``l`` or ``r``)."""
    return Column.model_validate({"name": name, "align": align})


class Table(BaseModel):
    """A table: ``caption`` printed before it, ``notes`` (paragraphs, each may hold several lines) after it;
    ``empty`` is the one line printed instead of everything when the table has no rows (None: an empty
    table is printed as its header). ``name`` is the file stem it is logged under, ``label`` its LaTeX
    ``\\label``. A table without caption and notes is a bare pipe table, to be embedded in other text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    caption: str = ""
    label: str | None = None
    columns: tuple[Column, ...] = ()
    rows: tuple[tuple[Cell, ...], ...] = ()
    notes: tuple[str, ...] = ()
    empty: str | None = None

    @model_validator(mode="after")
    def _rows_fit(self) -> Table:
        # a ragged row would print as a shifted Markdown row and a broken tabular: refuse it when built
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(
                    f"table {self.name or self.caption[:40]!r}: row {i} has {len(row)} cells for "
                    f"{len(self.columns)} columns: {[c.text for c in row]!r}"
                )
        return self

    @classmethod
    def of(
        cls, header: Sequence[str], align: str, rows: Iterable[Sequence[Any]], *, none: str = NONE_TEXT,
        **fields: Any,
    ) -> Table:  # fmt: skip
        """A table from a header, one alignment letter per column (``l`` or ``r``) and rows of values or
        :class:`Cell` s (a None value shows as ``none``); ``fields`` are the other :class:`Table` fields."""
        if len(align) != len(header) or set(align) - {"l", "r"}:
            raise ValueError(f"align {align!r} needs one letter l or r for each of {len(header)} columns")
        columns = tuple(_column(h, a) for h, a in zip(header, align, strict=True))
        body = tuple(tuple(Cell.of(v, none) for v in row) for row in rows)
        return cls(columns=columns, rows=body, **fields)

    @property
    def is_empty(self) -> bool:
        """Shown as its ``empty`` line alone."""
        return self.empty is not None and not self.rows


class Document(BaseModel):
    """Tables shown one after the other as one document (one file, one LaTeX float)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = ""
    tables: tuple[Table, ...] = Field(min_length=1)  # the LaTeX float takes the first one's label


def from_json(text: str) -> Table | Document:
    """A :class:`Table` or :class:`Document` from its ``model_dump_json``."""
    data = json.loads(text)
    return Document.model_validate(data) if "tables" in data else Table.model_validate(data)


def _tables(x: Table | Document) -> tuple[Table, ...]:
    return x.tables if isinstance(x, Document) else (x,)


# -- Markdown --------------------------------------------------------------------------------------------
def _shown(cell: Cell) -> str:
    """A cell's text as both renderers print it: a ``|`` would end the Markdown cell, so it becomes ``/``."""
    return cell.text.replace("|", "/")


def _pipe(t: Table) -> str:
    lines = [
        "| " + " | ".join(c.name for c in t.columns) + " |",
        "|" + "|".join("---:" if c.align == "r" else "---" for c in t.columns) + "|",
    ]
    lines += ["| " + " | ".join(_shown(c) for c in row) + " |" for row in t.rows]
    return "\n".join(lines)


def _table_markdown(t: Table) -> str:
    if t.is_empty:
        return f"{t.empty}\n"
    blocks = [t.caption] if t.caption else []
    text = "\n\n".join([*blocks, _pipe(t), *t.notes])
    # a table with text around it is a document of its own and ends its last line; a bare pipe table
    # is embedded by its caller (the benchmarks' sections, the campaign's ops table) and does not
    return text + "\n" if t.caption or t.notes else text


def to_markdown(x: Table | Document) -> str:
    """The Markdown: caption, blank line, pipe table, blank line, each note; a document's tables one
    after the other, a blank line apart."""
    return "\n".join(_table_markdown(t) for t in _tables(x))


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


def _tabular(t: Table) -> list[str]:
    out = [f"\\begin{{tabular}}{{{''.join(c.align for c in t.columns)}}}", "\\hline"]
    out.append(" & ".join(tex_escape(c.name.strip()) for c in t.columns) + " \\\\")
    out.append("\\hline")
    out += [" & ".join(tex_escape(_shown(c).strip()) for c in row) + " \\\\" for row in t.rows]
    out += ["\\hline", "\\end{tabular}"]
    return out


def to_latex(x: Table | Document) -> str:
    """One ``table`` float: the first text (the first table's caption) is the ``\\caption`` (with the
    first table's ``\\label``), each table a ``tabular``, and the text between two tabulars (notes, the
    next table's caption, an empty table's line) one footnote-size paragraph, lines joined by spaces. A
    document with no rows anywhere is its text alone (commented Markdown, then one paragraph)."""
    tables = _tables(x)
    blocks: list[list[str] | Table] = []  # text lines, or a table whose tabular goes there

    def text(s: str) -> None:
        if blocks and isinstance(blocks[-1], list):
            blocks[-1].extend(s.splitlines())
        else:
            blocks.append(s.splitlines())

    for t in tables:
        if t.is_empty:
            text(t.empty or "")
            continue
        if t.caption:
            text(t.caption)
        blocks.append(t)
        for note in t.notes:
            text(note)
    if not any(isinstance(b, Table) for b in blocks):
        lines = to_markdown(x).splitlines()
        return "% " + "\n% ".join(lines) + "\n" + tex_escape(" ".join(s for s in lines if s.strip())) + "\n"
    label = tables[0].label
    out = ["\\begin{table}[t]", "\\centering", "\\small"]
    caption_done = False
    for b in blocks:
        if isinstance(b, Table):
            caption_done = True  # a table before any text: no caption
            out += _tabular(b)
            continue
        joined = " ".join(s.strip() for s in b if s.strip())
        if not joined:
            continue
        if not caption_done:
            out.append(f"\\caption{{{tex_escape(joined)}}}")
            if label:
                out.append(f"\\label{{{label}}}")
            caption_done = True
        else:
            out.append(f"\\par\\medskip{{\\footnotesize {tex_escape(joined)}}}\\par\\medskip")
    out.append("\\end{table}")
    return "\n".join(out) + "\n"


# -- Markdown read back ------------------------------------------------------------------------------
_RULE_RE = re.compile(r"\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?")


def _split_row(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _paragraphs(lines: list[str]) -> list[str]:
    """Blank-line separated paragraphs, each its lines joined by newlines."""
    out: list[list[str]] = [[]]
    for s in lines:
        if s.strip():
            out[-1].append(s)
        elif out[-1]:
            out.append([])
    return ["\n".join(p) for p in out if p]


def parse_markdown(md: str, name: str = "", label: str | None = None) -> Document:
    """A document read back from Markdown that has no model behind it (a table logged as text before
    ``tables/*.json`` existed, or text handed to the tracker): pipe tables (a header line, then a rule of
    ``---``/``---:``) with their alignment and text-only cells, the text before the first table its
    caption, and between two tables the last paragraph the next one's caption, the rest notes. Markdown
    with no table is one empty-table line. ``to_latex`` of the result is what ``md_to_latex`` gave."""
    lines = md.splitlines()
    pending: list[str] = []  # text lines since the last table
    found: list[tuple[list[str], list[str], list[list[str]]]] = []  # (text before, header+rule, rows)
    i = 0
    while i < len(lines):
        is_head = lines[i].lstrip().startswith("|") and i + 1 < len(lines)
        if is_head and _RULE_RE.fullmatch(lines[i + 1].strip()):
            j = i + 2
            while j < len(lines) and lines[j].lstrip().startswith("|"):
                j += 1
            found.append((pending, lines[i : i + 2], [_split_row(r) for r in lines[i + 2 : j]]))
            pending, i = [], j
        else:
            pending.append(lines[i])
            i += 1
    if not found:
        return Document(name=name, tables=(Table(name=name, label=label, empty=md.rstrip("\n")),))
    tables: list[Table] = []
    for k, (before, (head, rule), rows) in enumerate(found):
        paras = _paragraphs(before)
        if k == 0:
            caption = "\n\n".join(paras)
        else:  # the text between two tables: the previous one's notes, then this one's caption
            caption = paras.pop() if paras else ""
            tables[-1] = tables[-1].model_copy(update={"notes": tuple(paras)})
        header = _split_row(head)
        aligns = ["r" if r.endswith(":") else "l" for r in _split_row(rule)]
        aligns = (aligns + ["l"] * len(header))[: len(header)]
        body = [tuple(Cell(text=c) for c in (r + [""] * len(header))[: len(header)]) for r in rows]
        columns = tuple(_column(h, a) for h, a in zip(header, aligns, strict=True))
        tables.append(Table(name=name, caption=caption, label=label, columns=columns, rows=tuple(body)))
    tables[-1] = tables[-1].model_copy(update={"notes": tuple(_paragraphs(pending))})
    return Document(name=name, tables=tuple(tables))
