"""The oracle's input model and its argument checks: a plain list of every version, nothing indexed.

``OracleStore`` holds the full bi-temporal history (closed versions included) as dicts and answers one
question: which versions are believed at ``as_of_tt``. Everything else is done by the oracle functions by
scanning those lists. The argument helpers below are the reference for what is a schema error
(``E_SCHEMA``: missing/unknown key, wrong JSON type) and what is an invalid value (``E_INVALID_ARG``:
out of bounds, inconsistent), see ``docs/operators.md`` §1.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, overload

from tgms.engine.errors import InvalidArgError, NotFoundError, SchemaError
from tgms.engine.timeutil import OPEN_END

NODE_KEYS = ("vid", "uid", "label", "props", "vt_s", "vt_e", "tt_s", "tt_e", "source", "provenance_ref")
EDGE_KEYS = (
    "vid",
    "eid",
    "src",
    "dst",
    "rel_type",
    "disc",
    "props",
    "vt_s",
    "vt_e",
    "tt_s",
    "tt_e",
    "source",
    "provenance_ref",
)
#: keys every operator accepts besides its own (limit/cursor belong to the envelope layer)
COMMON_KEYS = frozenset({"as_of_tt", "limit", "cursor"})
MAX_LIST = 10_000
MAX_BUCKETS = 2_000


def _version(raw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in keys:
        if k in ("source", "provenance_ref"):
            out[k] = raw.get(k)
        elif k == "props":
            p = raw.get("props")
            out[k] = json.loads(p) if isinstance(p, str) else dict(p or {})
        elif k == "disc":
            out[k] = raw.get("disc", "")
        else:
            out[k] = raw[k]
    return out


class OracleStore:
    """Every node and edge version of a store, in memory, as plain dicts."""

    def __init__(
        self, nodes: list[dict[str, Any]], edges: list[dict[str, Any]], extent: dict[str, Any] | None = None
    ) -> None:
        self.nodes: list[dict[str, Any]] = [_version(n, NODE_KEYS) for n in nodes]
        self.edges: list[dict[str, Any]] = [_version(e, EDGE_KEYS) for e in edges]
        self.extent: dict[str, Any] = dict(extent) if extent is not None else self._computed_extent()

    def _computed_extent(self) -> dict[str, Any]:
        vs = [v for v in self.nodes + self.edges]
        if not vs:
            return {"vt_min": None, "vt_max": None, "tt_min": None, "tt_max": None}
        return {
            "vt_min": min(v["vt_s"] for v in vs),
            "vt_max": max(v["vt_e"] if v["vt_e"] < OPEN_END else v["vt_s"] + 1 for v in vs),
            "tt_min": min(v["tt_s"] for v in vs),
            "tt_max": max(v["tt_s"] for v in vs),
        }

    @staticmethod
    def _believed(versions: list[dict[str, Any]], a: int | None) -> list[dict[str, Any]]:
        out = []
        for v in versions:
            if a is None:
                if v["tt_e"] != OPEN_END:
                    continue
            elif not (v["tt_s"] <= a < v["tt_e"]):
                continue
            c = dict(v)
            c["props"] = dict(v["props"])
            if a is not None and c["tt_e"] > a:
                c["tt_e"] = OPEN_END  # invariant 2: hide closures that happen after a
            out.append(c)
        return out

    def believed(self, as_of_tt: int | None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(node versions, edge versions) believed at ``as_of_tt`` (None = current belief), as copies."""
        return self._believed(self.nodes, as_of_tt), self._believed(self.edges, as_of_tt)

    def believed_nodes(self, as_of_tt: int | None) -> list[dict[str, Any]]:
        return self._believed(self.nodes, as_of_tt)

    def believed_edges(self, as_of_tt: int | None) -> list[dict[str, Any]]:
        return self._believed(self.edges, as_of_tt)

    def known_uids(self, as_of_tt: int | None) -> set[str]:
        """uids named by a believed node version or as an endpoint of a believed edge version."""
        nodes, edges = self.believed(as_of_tt)
        known = {n["uid"] for n in nodes}
        for e in edges:
            known.add(e["src"])
            known.add(e["dst"])
        return known


# ---------------------------------------------------------------------------------------------------
# argument checks (reference semantics of E_SCHEMA vs E_INVALID_ARG)


def check_keys(args: dict[str, Any], required: Iterable[str], optional: Iterable[str], op: str) -> None:
    if not isinstance(args, dict):
        raise SchemaError(f"{op}: args must be an object", op=op)
    required = tuple(required)
    allowed = set(required) | set(optional) | COMMON_KEYS
    unknown = sorted(set(args) - allowed)
    if unknown:
        raise SchemaError(
            f"{op}: unknown argument(s) {unknown}", op=op, unknown=unknown, legal=sorted(allowed)
        )
    missing = [k for k in required if args.get(k) is None]
    if missing:
        raise SchemaError(f"{op}: missing required argument(s) {missing}", op=op, missing=missing)


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def time_arg(x: Any, name: str, *, allow_open_end: bool = False) -> int:
    if not is_int(x):
        raise SchemaError(f"{name} must be an integer number of microseconds", field=name, value=x)
    hi = OPEN_END if allow_open_end else OPEN_END - 1
    if not 0 <= x <= hi:
        raise InvalidArgError(f"{name} must lie in [0, {hi}]", field=name, value=x)
    return x


def as_of_arg(args: dict[str, Any]) -> int | None:
    a = args.get("as_of_tt")
    return None if a is None else time_arg(a, "as_of_tt")


@overload
def int_arg(args: dict[str, Any], name: str, default: int, lo: int, hi: int | None) -> int: ...
@overload
def int_arg(args: dict[str, Any], name: str, default: int | None, lo: int, hi: int | None) -> int | None: ...
def int_arg(args: dict[str, Any], name: str, default: int | None, lo: int, hi: int | None) -> int | None:
    x = args.get(name)
    if x is None:
        return default
    if not is_int(x):
        raise SchemaError(f"{name} must be an integer", field=name, value=x)
    if x < lo or (hi is not None and x > hi):
        raise InvalidArgError(
            f"{name} must lie in [{lo}, {hi if hi is not None else 'inf'}]", field=name, value=x
        )
    return x


@overload
def str_arg(args: dict[str, Any], name: str, default: str) -> str: ...
@overload
def str_arg(args: dict[str, Any], name: str, default: str | None = None) -> str | None: ...
def str_arg(args: dict[str, Any], name: str, default: str | None = None) -> str | None:
    x = args.get(name)
    if x is None:
        return default
    if not isinstance(x, str):
        raise SchemaError(f"{name} must be a string", field=name, value=x)
    return x


def bool_arg(args: dict[str, Any], name: str, default: bool = False) -> bool:
    x = args.get(name)
    if x is None:
        return default
    if not isinstance(x, bool):
        raise SchemaError(f"{name} must be a boolean", field=name, value=x)
    return x


def choice_arg(args: dict[str, Any], name: str, choices: Iterable[str], default: str | None) -> str:
    x = str_arg(args, name, default)
    choices = tuple(choices)
    if x not in choices:
        raise InvalidArgError(
            f"{name} must be one of {list(choices)}", field=name, value=x, legal=list(choices)
        )
    return x


def str_list_arg(args: dict[str, Any], name: str, *, allow_single: bool = False) -> list[str] | None:
    """A list of strings (deduplicated, order kept); None when absent."""
    x = args.get(name)
    if x is None:
        return None
    if allow_single and isinstance(x, str):
        x = [x]
    if not isinstance(x, list) or not all(isinstance(s, str) for s in x):
        raise SchemaError(f"{name} must be a list of strings", field=name)
    if len(x) > MAX_LIST:
        raise InvalidArgError(f"{name} has more than {MAX_LIST} entries", field=name, n=len(x))
    return list(dict.fromkeys(x))


def window_arg(w: Any, name: str = "window") -> tuple[int, int]:
    if not isinstance(w, dict):
        raise SchemaError(f"{name} must be an object {{t_a, t_b}}", field=name)
    unknown = sorted(set(w) - {"t_a", "t_b"})
    if unknown or "t_a" not in w or "t_b" not in w:
        raise SchemaError(f"{name} must have exactly the keys t_a and t_b", field=name, unknown=unknown)
    t_a = time_arg(w["t_a"], f"{name}.t_a")
    t_b = time_arg(w["t_b"], f"{name}.t_b", allow_open_end=True)
    if t_a >= t_b:
        raise InvalidArgError(f"{name}.t_a must be < {name}.t_b (half-open)", field=name, t_a=t_a, t_b=t_b)
    return t_a, t_b


def t1_t2_args(args: dict[str, Any]) -> tuple[int, int]:
    t1 = time_arg(args["t1"], "t1")
    t2 = time_arg(args["t2"], "t2")
    if t1 >= t2:
        raise InvalidArgError("t1 must be < t2", field="t1", t1=t1, t2=t2)
    return t1, t2


def require_known(uids: Iterable[str], known: set[str], field: str) -> None:
    missing = sorted(u for u in set(uids) if u not in known)
    if missing:
        raise NotFoundError(f"unknown uid(s) in {field}: {missing[:10]}", field=field, uids=missing[:100])


def buckets(t_a: int, t_b: int, stride: int) -> list[tuple[int, int]]:
    """Buckets ``[t_a + i*stride, min(t_a + (i+1)*stride, t_b))`` covering ``[t_a, t_b)``; ≤ 2,000."""
    n = -(-(t_b - t_a) // stride)
    if n > MAX_BUCKETS:
        min_stride = -(-(t_b - t_a) // MAX_BUCKETS)
        raise InvalidArgError(
            f"{n} buckets exceed the limit of {MAX_BUCKETS}; use stride >= {min_stride}",
            field="stride",
            n_buckets=n,
            max_buckets=MAX_BUCKETS,
            min_stride=min_stride,
        )
    out = []
    s = t_a
    while s < t_b:
        out.append((s, min(s + stride, t_b)))
        s += stride
    return out


def valid_at(v: dict[str, Any], t: int) -> bool:
    return v["vt_s"] <= t < v["vt_e"]


def overlaps(v: dict[str, Any], a: int, b: int) -> bool:
    """The version's valid interval overlaps ``[a, b)``."""
    return v["vt_s"] < b and a < v["vt_e"]


def node_row(v: dict[str, Any]) -> dict[str, Any]:
    return {k: v[k] for k in NODE_KEYS}


def edge_row(v: dict[str, Any]) -> dict[str, Any]:
    return {k: v[k] for k in EDGE_KEYS}


def edge_key(v: dict[str, Any]) -> tuple[int, int, int]:
    """The one order of edge-version lists: (vt_s, eid, vid)."""
    return (v["vt_s"], v["eid"], v["vid"])
