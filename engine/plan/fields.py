"""The fields each step's rows hold, and the field names a step reads from the rows it is given (verifier
group ``output_contracts``, code ``output_field``).

A step's rows' fields are known when its operator fixes them from the call (``Traits.row_fields``:
compute and aggregate_events, given the fields of the rows each operand reads), or, for an operator
without the rule, from its declared row model (``rows: list[M]`` with ``M`` a closed model: every row
holds M's fields, no other; tested against real rows of every operator). They flow through the plan in
topological order: a ``derive`` over a ``group`` holds the group's fields and its own ``as``.

A call whose rows would hold one name twice (``Traits.clashes``: a join's renamed b field that a's rows
already have) is refused too: the run would stop there.

A call that names a field its operand's rows are known to lack (``Traits.reads_fields``: compute's
``field``, ``by``, a derive's operands, a join's keys) is refused with the fields there are: at run time
it would be a null (derive), a skipped value (group's numeric aggregates) or an error, and a misspelt
field name is the commonest slip of a planner.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from functools import cache
from typing import Annotated

from pydantic import BaseModel

from tgms.engine.operators.registry import OperatorSpec
from tgms.engine.plan.model import Parsed, Step, Violation, topo_order
from tgms.engine.plan.refs import Ref

Fields = tuple[str, ...] | None


@cache
def model_row_fields(output: type[BaseModel]) -> Fields:
    """The fields of each element of an output model's ``rows``, when it is a list of a closed model (the
    names a row's JSON uses: serialization aliases first)."""
    info = output.model_fields.get("rows")
    if info is None:
        return None
    ann = info.annotation
    while typing.get_origin(ann) is Annotated:
        ann = typing.get_args(ann)[0]
    if typing.get_origin(ann) is not list:
        return None
    (item,) = typing.get_args(ann)
    if not (isinstance(item, type) and issubclass(item, BaseModel)):
        return None
    if item.model_config.get("extra") != "forbid":  # a row may hold more than the model declares
        return None
    return tuple(f.serialization_alias or f.alias or name for name, f in item.model_fields.items())


def _whole_rows(s: Step) -> dict[str, Ref]:
    """The operand arguments of ``s`` that are a ref to a step's whole ``rows`` (``{"$ref": "s1.rows"}``)."""
    return {
        str(r.loc[0]): r.ref
        for r in s.refs
        if len(r.loc) == 1 and isinstance(r.loc[0], str) and r.ref.field == "rows" and not r.ref.path
    }


def _operand_fields(s: Step, fields: Mapping[str, Fields]) -> dict[str, Fields]:
    """The fields of the rows each whole-rows operand argument of ``s`` reads (None: not known)."""
    return {name: fields.get(ref.step) for name, ref in _whole_rows(s).items()}


def step_fields(parsed: Parsed, specs: Mapping[str, OperatorSpec]) -> dict[str, Fields]:
    """Each step's rows' fields (None: not known), in topological order."""
    out: dict[str, Fields] = {}
    for s in topo_order(parsed.steps):
        spec = specs.get(s.id)
        if spec is None:
            continue
        if spec.traits.row_fields is None:
            out[s.id] = model_row_fields(spec.output)
        else:
            out[s.id] = spec.traits.rows_fields(s.args, _operand_fields(s, out))
    return out


def field_violations(
    parsed: Parsed, specs: Mapping[str, OperatorSpec], fields: Mapping[str, Fields]
) -> list[Violation]:
    """A name a step reads from an operand's rows that those rows are known to lack."""
    out = []
    for s in parsed.steps:
        spec = specs.get(s.id)
        if spec is None:
            continue
        operands = _whole_rows(s)
        for where, message in spec.traits.field_clashes(s.args, _operand_fields(s, fields)):
            fn = str(s.args.get("fn") or "")
            message = f"step {s.id}: {spec.name} {fn}: {message}"
            out.append(Violation("output_field", message, s.id, f"args.{where}"))
        for where, operand, name, path in spec.traits.fields_read(s.args):
            ref = operands.get(operand)
            have = fields.get(ref.step) if ref is not None else None
            head = name.partition(".")[0]
            if have is None or name in have or (path and head in have):
                continue
            # a path into an object field where only a derive reads one: say how to take the value out
            inner = ""
            if "." in name and head in have:
                inner = f"; {head} is a field: take {name} out first with a compute derive (expr {name!r}, "
                inner += "as a name of your own) and read that"
            elif head == "prop" and "props" in have:  # the event selection's prop.<name>, in rows' terms
                inner = f"; a row's properties are its props object: props.{name.partition('.')[2]}"
            call = " ".join(x for x in (spec.name, str(s.args.get("fn") or "")) if x)
            out.append(
                Violation(
                    "output_field",
                    f"step {s.id}: {call}: {where} names the field {name!r}, which the rows of {ref} do not "
                    f"have (they have {', '.join(have)}){inner}",
                    s.id,
                    f"args.{where}",
                    list(have),
                )
            )
    return out
