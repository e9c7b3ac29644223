"""How compute combines units (issue 24): the unit rule compute declares (``Traits(units=...)``).

Per fn, over the units of its operands (:class:`~engine.operators.units.UnitEnv` gives the tree of the
value at each argument position; a literal is unknown, and an unknown unit is never refused):

- reducers (:func:`~engine.operators.units.reduce_unit`): ``count`` is a count; ``sum`` keeps a count,
  duration, ratio or score (a sum of time points or identifiers is refused); ``mean`` of time points is a
  time point, of counts a ratio; ``min``, ``max``, ``median`` keep the unit;
- pairwise (:func:`~engine.operators.units.arith`): ``diff`` is sub (time − time = duration), ``ratio``
  is div (count ÷ count = ratio, duration ÷ count = duration), ``mul`` is mul; ``percent`` and
  ``pct_change`` compare like with like and give a ratio;
- ``topk``, ``filter``, the set ops: rows with the input's element units, ``value`` a count; a filter's
  ``value`` and a set op's operands must measure the same thing;
- ``join``: a's fields then b's (renamed ``b_<name>`` on collision, b's key fields dropped), keys of the
  same unit; ``derive``: the input's fields plus ``as``, whose unit is ``expr``'s;
- ``quantile`` keeps the unit (one of the values, as ``median``); ``distinct``: rows of the element's unit;
- ``group``: the key fields keep their units; ``count``/``count_distinct`` are counts; ``sum``, ``mean``,
  ``min``, ``max``, ``median`` as the reducers; ``quantile``, ``first``, ``last`` keep the field's unit;
  ``rolling``: the input's fields plus its aggregates, each as group's;
- ``interval_relation``: operands that are intervals or time points.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tgms.engine.operators.compute_fields import join_keys, joined_b_names
from tgms.engine.operators.compute_group import aggregate_names, group_fields
from tgms.engine.operators.compute_rows import ARITH_OPS, COMPARE_OPS, OTHER_OPS
from tgms.engine.operators.units import (
    NUMERIC,
    SPOKEN,
    UNKNOWN,
    Unit,
    UnitClash,
    UnitEnv,
    UnitResult,
    UnitTree,
    arith,
    compared,
    list_of,
    obj,
    reduce_unit,
    scalar,
)

_PAIRWISE_OP = {"diff": "sub", "ratio": "div", "mul": "mul", "add": "add"}
_COUNT = scalar(Unit.COUNT)


def _operand(args: Mapping[str, Any], env: UnitEnv, name: str) -> tuple[tuple[str | int, ...], UnitTree]:
    """Where operand ``a`` or ``b`` stands (``a``, or ``input[0]``) and its tree."""
    if args.get(name) is not None:
        return (name,), env.at((name,))
    loc: tuple[str | int, ...] = ("input", 0 if name == "a" else 1)
    return loc, env.at(loc)


def _elements(args: Mapping[str, Any], env: UnitEnv, loc: tuple[str | int, ...]) -> UnitTree:
    """The tree of each element of the list at ``loc``: a ref to a list gives its item; a literal list
    gives its elements' common tree (unknown when they differ or are literals)."""
    value = args.get(loc[0]) if len(loc) == 1 and isinstance(loc[0], str) else None
    if env.is_ref(loc):
        tree = env.at(loc)
        return tree.item if tree.item is not None else UNKNOWN
    if isinstance(value, list):
        trees = [env.at((*loc, i)) if env.is_ref((*loc, i)) else UNKNOWN for i in range(len(value))]
        units = {t.unit for t in trees if t.unit is not None}
        if len(units) > 1 and not units <= NUMERIC - {Unit.TIME, Unit.DURATION}:
            raise UnitClash(
                f"{loc[0]} mixes {' and '.join(sorted(SPOKEN[u] for u in units))}",
                found=", ".join(sorted(u.value for u in units)),
                wanted=("one unit for every element",),
            )
        known = [t for t in trees if t.known]
        return known[0] if len(known) == len(trees) and known and len(set(known)) == 1 else UNKNOWN
    return UNKNOWN


def _field_unit(elem: UnitTree, field: str | None) -> UnitTree:
    return elem if field is None else elem.member(field)


def _reducer(fn: str, args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    field = args.get("field")
    elem = _elements(args, env, ("input",))
    value = _field_unit(elem, field if isinstance(field, str) else None)
    try:
        unit = reduce_unit(fn, value.unit)
    except UnitClash as clash:
        return UnitResult(_result(None), [("field" if field else "input", _with_alternatives(clash, elem))])
    return UnitResult(_result(unit))


def _with_alternatives(clash: UnitClash, elem: UnitTree) -> UnitClash:
    """The clash, with the element fields that a sum or mean would accept."""
    ok = [name for name, sub in elem.fields or () if sub.unit in (Unit.COUNT, Unit.DURATION, Unit.RATIO)]
    use = (*clash.use, *(f"field {n!r} ({elem.member(n).unit})" for n in ok))
    return UnitClash(clash.message, clash.found, clash.wanted, use)


def _result(unit: Unit | None, rows: UnitTree | None = None) -> UnitTree:
    return obj(value=scalar(unit), rows=rows or list_of(UNKNOWN), rows_total=_COUNT)


def _pairwise(fn: str, args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    (_, a), (lb, b) = _operand(args, env, "a"), _operand(args, env, "b")
    blame = ".".join(map(str, lb))
    try:
        if fn in _PAIRWISE_OP:
            return UnitResult(_result(arith(_PAIRWISE_OP[fn], a.unit, b.unit)))
        # percent, pct_change: a and b measure the same thing; the result is a ratio
        arith("sub", a.unit, b.unit)
        if a.unit is Unit.TIME or b.unit is Unit.TIME:
            raise UnitClash(
                f"a {fn} of time points has no meaning (the epoch is arbitrary)",
                found="time",
                wanted=("count", "duration", "ratio"),
                use=("diff of two time points (a duration)",),
            )
        return UnitResult(_result(Unit.RATIO))
    except UnitClash as clash:
        return UnitResult(_result(None), [(blame, clash)])


def _compare(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    (_, a), (lb, b) = _operand(args, env, "a"), _operand(args, env, "b")
    try:
        compared(str(args.get("cmp")), a.unit, b.unit)
    except UnitClash as clash:
        return UnitResult(_result(Unit.BOOLEAN), [(".".join(map(str, lb)), clash)])
    return UnitResult(_result(Unit.BOOLEAN))


def _same_units(fn: str, where: str, x: UnitTree, y: UnitTree) -> list[tuple[str, UnitClash]]:
    if x.unit is None or y.unit is None or x.unit == y.unit or Unit.VALUE in (x.unit, y.unit):
        return []
    clash = UnitClash(
        f"compute {fn} compares {SPOKEN[x.unit]} with {SPOKEN[y.unit]}",
        found=y.unit.value,
        wanted=(x.unit.value,),
    )
    return [(where, clash)]


def _selector(fn: str, args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    elem = _elements(args, env, ("input",))
    field = args.get("field")
    clashes: list[tuple[str, UnitClash]] = []
    if fn == "filter" and env.is_ref(("value",)):
        have = _field_unit(elem, field if isinstance(field, str) else None)
        clashes = _same_units(fn, "value", have, env.at(("value",)))
    other = args.get("other")
    if fn == "filter" and isinstance(other, str) and isinstance(field, str):
        clashes = _same_units(fn, "other", _field_unit(elem, field), _field_unit(elem, other))
    return UnitResult(_result(Unit.COUNT, list_of(elem)), clashes)


def _set_op(fn: str, args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    field = args.get("field")
    name = field if isinstance(field, str) else None
    (_, a), (lb, b) = _operand(args, env, "a"), _operand(args, env, "b")
    ea = _field_unit(a.item or UNKNOWN, name)
    eb = _field_unit(b.item or UNKNOWN, name)
    clashes = _same_units(fn, ".".join(map(str, lb)), ea, eb)
    return UnitResult(_result(Unit.COUNT, list_of(ea if ea.known else eb)), clashes)


def _join(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    a, b = _operand(args, env, "a")[1], _operand(args, env, "b")[1]
    ia, ib = a.item or UNKNOWN, b.item or UNKNOWN
    keys = join_keys(args.get("on")) or []  # a malformed key: the args check's to report
    clashes = [c for ka, kb in keys for c in _same_units("join", "on", ia.member(ka), ib.member(kb))]
    anti = args.get("how") == "anti"  # a's rows without a match in b: a's fields only
    if ia.fields is None or (ib.fields is None and not anti):
        return UnitResult(_result(Unit.COUNT), clashes)
    fields = dict(ia.fields)
    b_units = dict(ib.fields or ())
    for out, name in [] if anti else joined_b_names(args, keys, list(fields), list(b_units)):
        fields[out] = b_units[name]
    return UnitResult(_result(Unit.COUNT, list_of(UnitTree(fields=tuple(fields.items())))), clashes)


def _expr_unit(e: Any, row: UnitTree) -> Unit | None:
    if isinstance(e, str):
        return row.member(e).unit
    if not isinstance(e, dict):
        return None  # a literal number: takes the other operand's unit
    op = e.get("op")
    if op in ("abs", "floor", "ceil"):
        return _expr_unit(e.get("arg"), row)
    if op in ("number", "sqrt"):  # a square root of a variance or any number: a free number
        return Unit.VALUE  # an id's number: a free number, compared with any other
    if op in ("not", "and", "or"):
        return Unit.BOOLEAN
    if op not in (*ARITH_OPS, *OTHER_OPS, *COMPARE_OPS):
        return None
    x, y = _expr_unit(e.get("left"), row), _expr_unit(e.get("right"), row)
    if op == "mod":  # a time point's remainder (t mod one day: the time of day) is a duration
        return Unit.DURATION if x == Unit.TIME else x
    if op == "coalesce":
        return compared("min", x, y)
    if op == "when":
        return y
    if op in ("add", "sub", "mul", "div"):
        return arith(op, x, y)
    unit = compared(op, x, y)
    return unit if op in ("min", "max") else Unit.BOOLEAN


def _derive(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    row = _elements(args, env, ("input",))
    name = args.get("as")
    try:
        unit = _expr_unit(args.get("expr"), row)
    except UnitClash as clash:
        return UnitResult(_result(Unit.COUNT), [("expr", clash)])
    if row.fields is None or not isinstance(name, str):
        return UnitResult(_result(Unit.COUNT))
    return UnitResult(_result(Unit.COUNT, list_of(row.with_field(name, scalar(unit)))))


def _interval_relation(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    clashes = []
    for name in ("a", "b"):
        loc, tree = _operand(args, env, name)
        if tree.unit is not None and tree.unit not in (Unit.TIME, Unit.INTERVAL, Unit.VALUE):
            clashes.append(
                (
                    ".".join(map(str, loc)),
                    UnitClash(
                        f"interval_relation relates intervals or time points, not {SPOKEN[tree.unit]}",
                        found=tree.unit.value,
                        wanted=("interval", "time"),
                        use=("a row with vt_s and vt_e", "[s, e] from two time points"),
                    ),
                )
            )
    return UnitResult(_result(Unit.VALUE), clashes)


def compute_units(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    """compute's output units for one call, and the clashes its operands cause."""
    try:
        return _by_fn(args.get("fn"), args, env)
    except UnitClash as clash:  # a literal input list whose elements clash
        return UnitResult(UNKNOWN, [("input", clash)])


def _by_fn(fn: Any, args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    if fn in ("count", "sum", "min", "max", "mean", "median"):
        return _reducer(fn, args, env)
    if fn == "quantile":  # one of the values, as the median is
        return _reducer("median", args, env)
    if fn == "distinct":
        field = args.get("field")
        elem = _field_unit(_elements(args, env, ("input",)), field if isinstance(field, str) else None)
        return UnitResult(_result(Unit.COUNT, list_of(elem)))
    if fn == "group":
        return _group(args, env)
    if fn == "rolling":
        return _rolling(args, env)
    if fn in ("ratio", "diff", "mul", "percent", "pct_change", "add"):
        return _pairwise(fn, args, env)
    if fn == "compare":
        return _compare(args, env)
    if fn in ("topk", "filter"):
        return _selector(fn, args, env)
    if fn in ("union", "intersection", "difference"):
        return _set_op(fn, args, env)
    if fn == "join":
        return _join(args, env)
    if fn == "derive":
        return _derive(args, env)
    if fn == "interval_relation":
        return _interval_relation(args, env)
    if fn == "record":
        return _record(args, env)
    return UnitResult(UNKNOWN)


#: a group aggregate whose unit is the field's reducer's (quantile, first, last: one of the values)
_AGG_REDUCER = {"quantile": "median", "first": "median", "last": "median"}


def _aggregate_units(
    specs: list[Any], names: tuple[str, ...], row: UnitTree
) -> tuple[list[tuple[str, UnitTree]], list[tuple[str, UnitClash]]]:
    """Each aggregate's (name, unit): count and count_distinct counts, the others their field's reducer (a
    sum or mean of time points is a clash at the aggregate's field)."""
    fields, clashes = [], []
    for i, (spec, name) in enumerate(zip(specs, names, strict=True)):
        fn, field = spec["fn"], spec.get("field")
        have = row.member(field) if isinstance(field, str) else UNKNOWN
        try:
            unit = reduce_unit(_AGG_REDUCER.get(fn, fn), have.unit)
        except UnitClash as clash:
            clashes.append((f"aggregates.{i}.field", _with_alternatives(clash, row)))
            unit = None
        fields.append((name, scalar(unit)))
    return fields, clashes


def _group(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    """Rows of the keys (their fields' units) then the aggregates."""
    names = group_fields(args)
    if names is None:
        return UnitResult(_result(Unit.COUNT))
    row = _elements(args, env, ("input",))
    specs = args.get("aggregates") or [{"fn": "count"}]
    keys = names[: len(names) - len(specs)]
    made, clashes = _aggregate_units(specs, names[len(keys) :], row)
    fields = [(k, row.member(k)) for k in keys] + made
    return UnitResult(_result(Unit.COUNT, list_of(UnitTree(fields=tuple(fields)))), clashes)


def _rolling(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    """The input's rows plus the aggregates (named as group names them)."""
    names = aggregate_names(args)
    if names is None:
        return UnitResult(_result(Unit.COUNT))
    row = _elements(args, env, ("input",))
    made, clashes = _aggregate_units(args.get("aggregates") or [{"fn": "count"}], names, row)
    if row.fields is None:
        return UnitResult(_result(Unit.COUNT), clashes)
    for name, unit in made:
        row = row.with_field(name, unit)
    return UnitResult(_result(Unit.COUNT, list_of(row)), clashes)


def _record(args: Mapping[str, Any], env: UnitEnv) -> UnitResult:
    """One row whose parts keep the units of the values they hold (a literal part: unknown)."""
    fields = args.get("fields")
    if not isinstance(fields, dict):
        return UnitResult(_result(Unit.COUNT))
    row = tuple((str(k), env.at(("fields", k)) if env.is_ref(("fields", k)) else UNKNOWN) for k in fields)
    return UnitResult(_result(Unit.COUNT, list_of(UnitTree(fields=row))))
