"""Oracles of the bucketed-statistics family: graph_metric_timeseries, burst_detection.

Buckets are ``[t_a + i*stride, min(t_a + (i+1)*stride, t_b))`` (the last one may be shorter), at most 2,000.
Arithmetic is exact (``fractions.Fraction``); a non-integral result becomes a float rounded to 9 decimals.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from tgms.engine.canonical import canon_float, canonicalize
from tgms.engine.errors import InvalidArgError, SchemaError
from tgms.engine.operators.oracle.store import (
    OracleStore,
    as_of_arg,
    buckets,
    check_keys,
    choice_arg,
    int_arg,
    is_number,
    overlaps,
    require_known,
    str_arg,
    str_list_arg,
    valid_at,
    window_arg,
)

METRICS = (
    "node_count",
    "active_edge_count",
    "mean_out_degree",
    "edge_event_count",
    "new_node_rate",
    "reciprocity",
    "peak_active_edge_count",
)
#: the metrics whose edge versions ``rel_types`` chooses
REL_METRICS = ("active_edge_count", "edge_event_count", "peak_active_edge_count")


def exact(q: Fraction) -> int | float:
    """An exact rational as a payload number: int when integral, else the canonical float."""
    if q.denominator == 1:
        return int(q)
    return canon_float(float(q))


def _ratio(num: int, den: int) -> int | float:
    return 0 if den == 0 else exact(Fraction(num, den))


def oracle_graph_metric_timeseries(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["metric", "window", "stride"], ["rel_types"], "graph_metric_timeseries")
    a = as_of_arg(args)
    metric = choice_arg(args, "metric", METRICS, None)
    t_a, t_b = window_arg(args["window"])
    stride = int_arg(args, "stride", None, 1, None)
    assert stride is not None
    rel_types = str_list_arg(args, "rel_types")
    if rel_types is not None and any(not r for r in rel_types):
        raise InvalidArgError("rel_types entries must be non-empty", field="rel_types")
    grid = buckets(t_a, t_b, stride)
    if rel_types is not None and metric not in REL_METRICS:
        raise InvalidArgError(f"rel_types is not an argument of {metric}", field="rel_types")
    nodes, edges = store.believed(a)
    # the edge versions the edge metrics count (every one unless rel_types names their types)
    counted = edges if rel_types is None else [e for e in edges if e["rel_type"] in rel_types]

    first_seen: dict[str, int] = {}
    for v in nodes:
        first_seen[v["uid"]] = min(first_seen.get(v["uid"], v["vt_s"]), v["vt_s"])
    for e in edges:
        for u in (e["src"], e["dst"]):
            first_seen[u] = min(first_seen.get(u, e["vt_s"]), e["vt_s"])

    rows = []
    for bs, be in grid:
        n_nodes = len({v["uid"] for v in nodes if valid_at(v, bs)})
        n_edges = len([e for e in counted if valid_at(e, bs)])
        in_bucket = [e for e in edges if bs <= e["vt_s"] < be]
        value: int | float
        if metric == "peak_active_edge_count":
            # every instant of the bucket where the count can change, earliest first: the start, and
            # each moment a version begins or ends inside it
            moments = sorted({bs} | {t for e in counted for t in (e["vt_s"], e["vt_e"]) if bs < t < be})
            live = [e for e in counted if overlaps(e, bs, be)]  # the only ones valid at some moment
            counts = [len([e for e in live if valid_at(e, t)]) for t in moments]
            value = max(counts)
            rows.append({"t_a": bs, "t_b": be, "value": value, "at": moments[counts.index(value)]})
            continue
        if metric == "node_count":
            value = n_nodes
        elif metric == "active_edge_count":
            value = n_edges
        elif metric == "mean_out_degree":
            # directed non-loop pairs of versions overlapping the bucket, over the uids they connect
            active = {(e["src"], e["dst"]) for e in edges if e["src"] != e["dst"] and overlaps(e, bs, be)}
            value = _ratio(len(active), len({u for pair in active for u in pair}))
        elif metric == "edge_event_count":
            value = len([e for e in counted if bs <= e["vt_s"] < be])
        elif metric == "new_node_rate":
            value = len([u for u, t in first_seen.items() if bs <= t < be])
        else:  # reciprocity
            pairs = {(e["src"], e["dst"]) for e in in_bucket if e["src"] != e["dst"]}
            value = _ratio(len([p for p in pairs if (p[1], p[0]) in pairs]), len(pairs))
        rows.append({"t_a": bs, "t_b": be, "value": value})
    return canonicalize({"rows": rows, "rows_total": len(rows), "n_buckets": len(grid)})


def _params(raw: Any) -> tuple[int, Fraction, int]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise SchemaError("params must be an object {w, threshold, min_history}", field="params")
    unknown = sorted(set(raw) - {"w", "threshold", "min_history"})
    if unknown:
        raise SchemaError(f"unknown params {unknown}", field="params", unknown=unknown)
    w = int_arg(raw, "w", 7, 2, 1000)
    assert w is not None
    min_history = int_arg(raw, "min_history", min(3, w), 2, 1000)
    assert min_history is not None
    if min_history > w:
        raise InvalidArgError(
            "params.min_history must be <= params.w", field="params", w=w, min_history=min_history
        )
    thr = raw.get("threshold", 3)
    if thr is None:
        thr = 3
    if not is_number(thr):
        raise SchemaError("params.threshold must be a number", field="params")
    thr_c = canon_float(float(thr))
    if not thr_c > 0:
        raise InvalidArgError("params.threshold must be > 0", field="params", threshold=thr)
    return w, Fraction(str(thr_c)), min_history


def _median(xs: list[int]) -> Fraction:
    s = sorted(xs)
    n = len(s)
    if n % 2 == 1:
        return Fraction(s[n // 2])
    return Fraction(s[n // 2 - 1] + s[n // 2], 2)


def _score(method: str, x: int, hist: list[int]) -> tuple[int | float, int | float] | None:
    """(score, baseline) of x against its history, or None when the bucket cannot be scored."""
    if method == "zscore":
        n = len(hist)
        mu = Fraction(sum(hist), n)
        var = sum(((h - mu) ** 2 for h in hist), Fraction(0)) / n  # population variance
        if var == 0:
            return None  # zero-variance history: not scored, never flagged
        z2 = (x - mu) ** 2 / var  # exact z², so z = sign·sqrt(z²) is one correctly rounded sqrt
        z = math.copysign(math.sqrt(float(z2)), float(x - mu)) if x != mu else 0.0
        return canon_float(z), exact(mu)
    med = _median(hist)
    if med == 0:
        return None  # ratio to a zero median is undefined: not scored
    return exact(Fraction(x) / med), exact(med)


def oracle_burst_detection(store: OracleStore, args: dict[str, Any]) -> dict[str, Any]:
    check_keys(args, ["target", "window", "stride"], ["method", "params"], "burst_detection")
    a = as_of_arg(args)
    target = str_arg(args, "target")
    assert target is not None
    t_a, t_b = window_arg(args["window"])
    stride = int_arg(args, "stride", None, 1, None)
    assert stride is not None
    method = choice_arg(args, "method", ("zscore", "ratio"), "zscore")
    w, threshold, min_history = _params(args.get("params"))
    if target != "global":
        require_known([target], store.known_uids(a), "target")
    grid = buckets(t_a, t_b, stride)
    edges = store.believed_edges(a)
    if target != "global":
        edges = [e for e in edges if target in (e["src"], e["dst"])]
    series = [len([e for e in edges if bs <= e["vt_s"] < be]) for bs, be in grid]

    rows = []
    n_scored = 0
    for i, (bs, be) in enumerate(grid):
        hist = series[max(0, i - w) : i]
        if len(hist) < min_history:
            continue
        scored = _score(method, series[i], hist)
        if scored is None:
            continue
        n_scored += 1
        score, baseline = scored
        if Fraction(str(score)) >= threshold:
            rows.append({"t_a": bs, "t_b": be, "value": series[i], "score": score, "baseline": baseline})
    return canonicalize({"rows": rows, "rows_total": len(rows), "n_buckets": len(grid), "n_scored": n_scored})
