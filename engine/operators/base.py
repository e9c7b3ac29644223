"""Argument and output building blocks shared by the operator families.

Args models are strict pydantic models (no coercion: ``"5"`` is not an int, ``true`` is not a number)
that forbid unknown fields, so a malformed call fails when its args are built. Validation errors map to
the error tree in :func:`validation_error`: shape problems (missing, unknown, wrong type) are
``E_SCHEMA``; a well-typed value out of bounds or inconsistent is ``E_INVALID_ARG``.

An explicit ``null`` for an argument that has a default means "use the default" (as if absent), at the
top level and inside nested argument objects (``window``, ``scope``, ``params``, ...): planners that fill
every field of a strict tool schema send ``null`` for what they leave out. A ``null`` for a required
argument is a missing argument (``E_SCHEMA``).
"""

from __future__ import annotations

import re
import types
import typing
from typing import Annotated, Any, NoReturn

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    ValidationError,
    ValidationInfo,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import InitErrorDetails, PydanticCustomError, core_schema

from tgms.engine.errors import InvalidArgError, SchemaError, TGMSError
from tgms.engine.timeutil import OPEN_END

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 100
MAX_LIST = 10_000
MAX_BUCKETS = 2_000

Time = Annotated[int, Field(ge=0, lt=OPEN_END, description="epoch microseconds, UTC")]
TimeEnd = Annotated[int, Field(ge=0, le=OPEN_END, description="epoch microseconds, UTC; 2**62 = open end")]


class UidArg:
    """Marks an argument that names a node uid (``Annotated[str, UidArg()]``): the plan verifier's grounding
    rule finds uid arguments by this marker, so a new operator's uid arguments are grounded without a table.
    ``keywords`` are literal values of the same argument that are not uids (burst's ``"global"``)."""

    def __init__(self, keywords: tuple[str, ...] = ()) -> None:
        self.keywords = keywords

    def __repr__(self) -> str:
        return f"UidArg(keywords={self.keywords!r})"


# No length bounds: a uid is only ever looked up, so "" or a long string is simply unknown (E_NOT_FOUND).
Uid = Annotated[str, UidArg()]
UidList = Annotated[list[Uid], Field(max_length=MAX_LIST)]


def invalid(message: str) -> PydanticCustomError:
    """A value error raised inside a validator; maps to ``E_INVALID_ARG``."""
    return PydanticCustomError("invalid_arg", message)


def invalid_at(op: str, loc: tuple[str | int, ...], message: str, value: Any) -> NoReturn:
    """``E_INVALID_ARG`` located at ``loc`` inside ``op``'s args (a model validator's own errors have no
    location), so a repair can name the argument."""
    line: InitErrorDetails = {"type": invalid(message), "loc": loc, "input": value}
    raise ValidationError.from_exception_data(op, [line])


class OneOf:
    """A string argument that must be one of ``choices`` (``Annotated[str, OneOf(METRICS)]``): the JSON
    Schema lists them as an ``enum``, and another string is ``E_INVALID_ARG`` naming the field and the
    choices (a non-string stays a type error, ``E_SCHEMA``). Not a ``Literal``: a ``Literal`` miss would
    be a schema error, and a planner's misspelt choice is a value to correct, not a malformed call."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = tuple(choices)

    def __repr__(self) -> str:
        return f"OneOf({self.choices!r})"

    def _check(self, value: str, info: ValidationInfo) -> str:
        if value not in self.choices:
            raise invalid(f"{info.field_name} must be one of {list(self.choices)} (got {value!r})")
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def __get_pydantic_json_schema__(self, schema: Any, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        out = handler(schema)
        out["enum"] = list(self.choices)
        return out


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Window(Model):
    t_a: Time
    t_b: TimeEnd

    @model_validator(mode="after")
    def _ordered(self) -> Window:
        if self.t_a >= self.t_b:
            raise invalid(f"window t_a must be < t_b (got t_a={self.t_a}, t_b={self.t_b})")
        return self


class OpArgs(Model):
    """Every operator accepts ``as_of_tt`` (null = current belief) and the paging arguments. An empty
    ``window`` object is no window, as null is (an operator whose window is optional reads the whole time
    line; one that needs a window still says so): a planner told to leave the window out wrote
    ``"window": {}`` in 3 of 11 analyst questions (Qwen2.5-Coder-1.5B, 2026-12-05)."""

    as_of_tt: Time | None = None
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT
    cursor: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _empty_window_is_none(cls, data: Any) -> Any:
        return empty_window_is_none(data)


def empty_window_is_none(data: Any) -> Any:
    """Raw arguments with ``"window": {}`` read as no window (see :class:`OpArgs`)."""
    if isinstance(data, dict) and data.get("window") == {}:
        return {**data, "window": None}
    return data


class PagedOutput(Model):
    """Completeness fields of every list-returning operator."""

    truncated: bool
    cursor: str | None


def dedupe(values: list[str]) -> list[str]:
    """Drop repeated entries, keeping the first (uid and rel-type list arguments)."""
    return list(dict.fromkeys(values))


_SCHEMA_TYPES = {
    "missing",
    "extra_forbidden",
    "model_type",
    "model_attributes_type",
    "dict_type",
    "list_type",
}


#: pydantic's names of a union's branches in an error's location (``src.list[str]``, ``src.str``), which
#: are no argument's name (an operator's own locations, ``input[0]``, are kept)
_BRANCH = re.compile(
    r"(str|int|float|bool|none|bytes|list|dict|tuple|set|frozenset)"
    r"|(list|dict|tuple|set|frozenset|literal|union|nullable|is-instance|function-[a-z]+|tagged-union"
    r"|json-or-python|lax-or-strict|constrained-[a-z]+)(\[.*\])?"
)


def _argument_path(loc: tuple[int | str, ...]) -> str:
    """An error's location as the argument path a call spells (``src``, ``where.0.value``): the union
    branch names pydantic inserts are left out."""
    return ".".join(str(p) for p in loc if isinstance(p, int) or not _BRANCH.fullmatch(p))


def validation_error(exc: ValidationError, op: str) -> TGMSError:
    """Map a pydantic error to E_SCHEMA / E_INVALID_ARG, naming every offending field once (a value no
    branch of a union takes, a uid or a list of uids, is one problem whose message names what each wanted)."""
    problems: list[dict[str, Any]] = []
    by_field: dict[str, dict[str, Any]] = {}
    schema = False
    for err in exc.errors(include_url=False):
        loc = _argument_path(err["loc"])
        typ = err["type"]
        is_schema = typ in _SCHEMA_TYPES or typ.endswith("_type")
        schema = schema or is_schema
        if loc in by_field:  # another branch of one union argument
            seen = by_field[loc]
            if err["msg"] not in seen["problem"]:
                seen["problem"] += f"; or {err['msg'][0].lower()}{err['msg'][1:]}"
            continue
        by_field[loc] = {"field": loc, "problem": err["msg"], "kind": typ}
        problems.append(by_field[loc])
    first = problems[0]
    msg = f"{op}: {first['field'] or 'args'}: {first['problem']}"
    cls = SchemaError if schema else InvalidArgError
    return cls(msg, op=op, field=first["field"], problems=problems)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The argument-object models an annotation admits (``Window | None`` -> ``[Window]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType or origin is Annotated:
        return [m for a in typing.get_args(annotation) for m in _models_in(a)]
    return []


def drop_null_defaults(model: type[BaseModel], raw: dict[str, Any]) -> dict[str, Any]:
    """``raw`` without the ``null`` values of defaulted fields, recursing into nested argument objects."""
    out: dict[str, Any] = {}
    for key, value in raw.items():
        field = model.model_fields.get(key)
        if field is None:
            out[key] = value  # unknown: left for validation to refuse
        elif value is None and not field.is_required():
            continue
        elif isinstance(value, dict) and len(sub := _models_in(field.annotation)) == 1:
            out[key] = drop_null_defaults(sub[0], value)
        else:
            out[key] = value
    return out


def parse_args(model: type[BaseModel], raw: Any, op: str) -> Any:
    if not isinstance(raw, dict):
        raise SchemaError(f"{op}: args must be a JSON object", op=op)
    try:
        return model.model_validate(drop_null_defaults(model, raw))
    except ValidationError as exc:
        raise validation_error(exc, op) from None
