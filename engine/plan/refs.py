"""The ``$ref`` language: how one plan step reads another step's result (DESIGN §3.5).

::

    ref     := STEP "." FIELD segment*
    segment := "." NAME | "[" INT "]" | "[*]"        (at most one "[*]")

``{"$ref": "s2.rows[*].uid"}`` may stand for any argument value, at any depth of a step's ``args``. A ref
names a *declared output* of the step's operator (the payload fields, DESIGN §3.4), then walks into it:
``.name`` takes an object's field (after ``[*]``: of every element), ``[i]`` an element, ``[*]`` projects
a list. There are no expressions; combining values is ``compute``'s job.

A :class:`Ref` is parsed once and is immutable; a malformed ref raises :class:`RefSyntaxError` when it
is built. :func:`resolve` reads a ref out of a payload and reports whether what it read is *complete*:
reading a list that the producer's page cut (``len(L) < L_total``), whole or through ``[*]``, is a
truncated read; ``[i]`` inside the page, or a scalar such as ``rows_total``, is not (rows are in contract
order and totals are computed over the whole result).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TypeGuard

from tgms.engine.errors import InvalidArgError, LimitError, UpstreamError

STEP_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_REF = re.compile(rf"({_NAME})\.({_NAME})((?:\.{_NAME}|\[[0-9]+\]|\[\*\])*)")
_SEG = re.compile(rf"\.({_NAME})|\[([0-9]+)\]|\[(\*)\]")


class RefSyntaxError(ValueError):
    """A ``$ref`` string that is not in the ref language."""


@dataclass(frozen=True)
class Field:
    name: str

    def __str__(self) -> str:
        return f".{self.name}"


@dataclass(frozen=True)
class Index:
    i: int

    def __str__(self) -> str:
        return f"[{self.i}]"


@dataclass(frozen=True)
class Star:
    def __str__(self) -> str:
        return "[*]"


Segment = Field | Index | Star


@dataclass(frozen=True)
class Ref:
    """A parsed reference ``step.field<path>``."""

    step: str
    field: str
    path: tuple[Segment, ...] = ()

    @classmethod
    def parse(cls, text: Any) -> Ref:
        if not isinstance(text, str):
            raise RefSyntaxError(f"a $ref must be a string, not {type(text).__name__}")
        m = _REF.fullmatch(text)
        if m is None:
            raise RefSyntaxError(
                f"{text!r} is not a ref: expected step.field followed by .name, [i] or one [*]"
            )
        path: list[Segment] = []
        for name, idx, _star in _SEG.findall(m.group(3)):
            path.append(Field(name) if name else Index(int(idx)) if idx else Star())
        if sum(isinstance(s, Star) for s in path) > 1:
            raise RefSyntaxError(f"{text!r}: at most one [*] projection per ref")
        return cls(m.group(1), m.group(2), tuple(path))

    @property
    def projects(self) -> bool:
        return any(isinstance(s, Star) for s in self.path)

    def __str__(self) -> str:
        return f"{self.step}.{self.field}" + "".join(str(s) for s in self.path)


def is_ref(value: Any) -> TypeGuard[dict[str, Any]]:
    """Whether an argument value is a ref object ``{"$ref": ...}`` (exactly that one key)."""
    return isinstance(value, dict) and "$ref" in value


def find_refs(value: Any, loc: tuple[str | int, ...] = ()) -> list[tuple[tuple[str | int, ...], Any]]:
    """Every ``{"$ref": X}`` in an argument tree, with its location (the raw X, unparsed)."""
    if is_ref(value):
        return [(loc, value)]
    if isinstance(value, dict):
        return [r for k, v in value.items() for r in find_refs(v, (*loc, k))]
    if isinstance(value, list):
        return [r for i, v in enumerate(value) for r in find_refs(v, (*loc, i))]
    return []


def set_at(args: Any, loc: tuple[str | int, ...], value: Any) -> None:
    """Put ``value`` where a ref stood in an argument tree (``loc`` as :func:`find_refs` gives it)."""
    parent: Any = args
    for part in loc[:-1]:
        parent = parent[part]
    parent[loc[-1]] = value


def loc_str(loc: tuple[str | int, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# -- reading a ref out of a payload ------------------------------------------------------------------------


def list_cut(payload: dict[str, Any], name: str) -> bool:
    """Whether the producer's page cut its list ``name`` (fewer elements returned than ``name_total``)."""
    total = payload.get(f"{name}_total")
    value = payload.get(name)
    return isinstance(total, int) and isinstance(value, list) and len(value) < total


@dataclass(frozen=True)
class Resolved:
    value: Any
    #: the read touched a list the producer's page cut (whole, or through ``[*]``)
    truncated: bool
    #: ``value`` as the int64 column it was read from, when it was (a whole read of event times): the
    #: executor hands it on, so that the value's dump and a median read the column (``numpy.ndarray``)
    column: Any = None


def _fail(ref: Ref, message: str, **details: Any) -> UpstreamError:
    return UpstreamError(f"{ref}: {message}", ref=str(ref), **details)


def _walk(ref: Ref, value: Any, path: tuple[Segment, ...], where: str) -> Any:
    for k, seg in enumerate(path):
        here = where + "".join(str(s) for s in path[:k])
        if isinstance(seg, Star):
            if not isinstance(value, list):
                raise _fail(ref, f"[*] needs a list at {here}, found {type(value).__name__}")
            rest = path[k + 1 :]
            return [_walk(ref, v, rest, f"{here}[{i}]") for i, v in enumerate(value)]
        if isinstance(seg, Index):
            if not isinstance(value, list):
                raise _fail(ref, f"[{seg.i}] needs a list at {here}, found {type(value).__name__}")
            if seg.i >= len(value):
                raise _fail(ref, f"index {seg.i} is out of range at {here} (length {len(value)})")
            value = value[seg.i]
        else:
            if not isinstance(value, dict) or seg.name not in value:
                have = sorted(value) if isinstance(value, dict) else type(value).__name__
                raise _fail(ref, f"no field {seg.name!r} at {here}", legal=have)
            value = value[seg.name]
    return value


def element_part(ref: Ref, element: Any) -> Any:
    """What a ``field[*]...`` ref reads of one element of its list (the element itself for ``field[*]``);
    ``E_UPSTREAM`` when the element lacks the path."""
    if not ref.path or not isinstance(ref.path[0], Star):
        raise ValueError(f"{ref} does not read each element of a list")
    return _walk(ref, element, ref.path[1:], f"{ref.step}.{ref.field}[0]")


def resolve(ref: Ref, payload: dict[str, Any]) -> Resolved:
    """The value ``ref`` names in ``payload`` (a producer's paged payload) and whether the read is complete.

    Raises ``E_UPSTREAM`` when the path does not exist in this result, and ``E_LIMIT`` for an index past
    the end of a cut page (the element exists but was not returned: raise the producer's ``limit``)."""
    if ref.field not in payload:
        raise _fail(ref, f"the result has no field {ref.field!r}", legal=sorted(payload))
    top = payload[ref.field]
    cut = list_cut(payload, ref.field)
    first = ref.path[0] if ref.path else None
    total = payload.get(f"{ref.field}_total")
    # a cut list has an int total (list_cut)
    if (
        cut
        and isinstance(first, Index)
        and isinstance(top, list)
        and isinstance(total, int)
        and len(top) <= first.i < total
    ):
        raise LimitError(
            f"{ref}: element {first.i} is beyond the returned page ({len(top)} of "
            f"{payload[f'{ref.field}_total']}); raise the producing step's limit",
            ref=str(ref),
            page=len(top),
            total=payload[f"{ref.field}_total"],
            suggestions=[f"use limit >= {first.i + 1} on step {ref.step}"],
        )
    value = _walk(ref, top, ref.path, f"{ref.step}.{ref.field}")
    # an element picked by index is exact even on a cut page; the list (or its projection) is not
    truncated = cut and not isinstance(first, Index)
    return Resolved(value, truncated)


def check_step_id(value: str) -> None:
    if not STEP_ID.fullmatch(value):
        raise InvalidArgError(f"step id {value!r} must match {STEP_ID.pattern}", field="id", value=value)
