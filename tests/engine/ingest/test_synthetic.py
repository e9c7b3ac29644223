"""The synthetic generator: determinism, planted gold, bursts, structure and the correction batches."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import time
from collections import Counter
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tgms.engine.canonical import dumps
from tgms.engine.errors import InvalidArgError
from tgms.engine.ingest.events import EventFrame
from tgms.engine.ingest.synthetic import SyntheticDataset, generate
from tgms.engine.ingest.synthetic.world import Endpoints
from tgms.engine.timeutil import OPEN_END

N_NODES, N_EVENTS, SEED = 400, 20_000, 7
HOUR = 3_600_000_000


@pytest.fixture(scope="module")
def ds() -> SyntheticDataset:
    return generate(N_NODES, N_EVENTS, SEED)


def _ipc_sha(frame: EventFrame) -> str:
    sink = pa.BufferOutputStream()
    table = frame.table.combine_chunks()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def _rows(frame: EventFrame) -> list[dict[str, Any]]:
    return frame.table.to_pylist()


def _motif_instances(
    events: list[tuple[str, str, int]], motif: str, delta: int
) -> list[tuple[int, int, int]]:
    """Brute force over ordered triples (events sorted by t; ties kept in list order)."""
    out = []
    for i, j, k in itertools.combinations(range(len(events)), 3):
        (a, b, t1), (c, d, _), (e, f, t3) = events[i], events[j], events[k]
        if t3 - t1 > delta:
            continue
        if motif == "M_triangle_cyclic":
            ok = b == c and d == e and f == a and len({a, b, d}) == 3
        else:
            ok = (c, d) == (b, a) and (e, f) == (a, b) and a != b
        if ok:
            out.append((i, j, k))
    return out


# ---- shape and determinism ---------------------------------------------------------------------------------
def test_frames_shape_and_validity(ds: SyntheticDataset) -> None:
    assert ds.num_rows == N_EVENTS == ds.manifest["n_events"]
    assert [f.rel_type for f in ds.frames] == ["msg", "follows"]
    assert ds.follows.num_rows == round(0.05 * N_EVENTS)
    for f in ds.frames:
        assert f.check() is None
        assert (f.label, f.name) == ("user", "synthetic")
        t = f.table.column("t").to_numpy()
        assert (np.diff(t) >= 0).all()  # time order
        assert (t % 1_000_000 == 0).all()  # whole seconds
        uids = set(f.table.column("src").to_pylist()) | set(f.table.column("dst").to_pylist())
        assert all(re.fullmatch(r"s\d+", u) and int(u[1:]) < N_NODES for u in uids)
        assert pc.sum(pc.equal(f.table.column("src"), f.table.column("dst"))).as_py() == 0
    assert ds.events.is_instantaneous
    fol = ds.follows.table
    assert fol.column("t_end").null_count == 0
    t_end, t = fol.column("t_end").to_numpy(), fol.column("t").to_numpy()
    assert (t_end > t).all()
    assert 0 < int((t_end == OPEN_END).sum()) < fol.num_rows
    bounded = t_end[t_end != OPEN_END] - t[t_end != OPEN_END]
    assert bounded.min() >= HOUR and np.median(bounded) > 24 * HOUR  # "follows" last days
    pairs = set(zip(fol.column("src").to_pylist(), fol.column("dst").to_pylist(), strict=True))
    assert len(pairs) == fol.num_rows  # one interval per (src, dst): no two overlap
    props = set(ds.events.table.column("props").to_pylist())
    assert props == {f'{{"w":{k}}}' for k in range(1, 6)}


def test_same_seed_same_bytes_different_seed_differs(ds: SyntheticDataset) -> None:
    again = generate(N_NODES, N_EVENTS, SEED)
    for a, b in zip(ds.frames, again.frames, strict=True):
        assert a.table.equals(b.table)
        assert a.digest() == b.digest()
        assert _ipc_sha(a) == _ipc_sha(b)
    assert again.manifest_json() == ds.manifest_json()
    assert again.corrections == ds.corrections
    other = generate(N_NODES, N_EVENTS, SEED + 1)
    assert other.events.digest() != ds.events.digest()
    assert _ipc_sha(other.events) != _ipc_sha(ds.events)
    assert other.manifest["planted"] != ds.manifest["planted"]
    assert ds.manifest["frames"]["msg"]["digest"] == ds.events.digest()


def test_chunk_size_does_not_change_content(ds: SyntheticDataset) -> None:
    small = generate(N_NODES, N_EVENTS, SEED, chunk_rows=1024)
    assert len(small.events.table.column("t").chunks) == -(-ds.events.num_rows // 1024)
    assert len(ds.events.table.column("t").chunks) == 1
    for a, b in zip(small.frames, ds.frames, strict=True):
        assert a.digest() == b.digest()  # chunk_rows only bounds memory and table chunking
        assert a.table.equals(b.table)
    assert small.corrections == ds.corrections
    assert small.manifest["params"]["chunk_rows"] == 1024
    assert small.manifest["planted"] == ds.manifest["planted"]


def test_manifest_is_json(ds: SyntheticDataset) -> None:
    text = ds.manifest_json()
    back = json.loads(text)
    assert dumps(back) == text
    m = ds.manifest
    assert m["seed"] == SEED and m["params"]["n_nodes"] == N_NODES and m["params"]["n_events"] == N_EVENTS
    assert set(m) >= {"planted", "bursts", "corrections", "communities", "frames", "time", "rates"}
    assert m["corrections"]["batches"] == ds.corrections


# ---- planted gold ------------------------------------------------------------------------------------------
def test_planted_patterns_are_in_the_events_and_isolated(ds: SyntheticDataset) -> None:
    msg = _rows(ds.events)
    keys = Counter((r["src"], r["dst"], r["t"]) for r in msg)
    every = [(r["src"], r["dst"], r["t"]) for f in ds.frames for r in _rows(f)]
    planted = ds.manifest["planted"]
    assert len(planted["rings"]) == 8 and len(planted["pingpongs"]) == 8
    all_nodes = [u for p in planted["rings"] + planted["pingpongs"] for u in p["nodes"]]
    assert len(all_nodes) == len(set(all_nodes))  # every pattern has its own nodes
    for p in planted["rings"] + planted["pingpongs"]:
        evs = [(e["src"], e["dst"], e["t"]) for e in p["events"]]
        assert all(keys[e] >= 1 for e in evs), p["id"]
        times = [e[2] for e in evs]
        assert times[0] < times[1] < times[2] and times[2] - times[0] <= p["delta"] == planted["delta"]
        assert (p["t_first"], p["t_last"]) == (times[0], times[2])
        if p["motif"] == "M_triangle_cyclic":
            u, v, w = p["nodes"]
            assert [e[:2] for e in evs] == [(u, v), (v, w), (w, u)]
        else:
            u, v = p["nodes"]
            assert [e[:2] for e in evs] == [(u, v), (v, u), (u, v)]
        lo, hi = p["isolation_window"]
        assert lo == times[0] - p["delta"] and hi == times[2] + p["delta"] + 1
        ns = set(p["nodes"])
        inside = [e for e in every if e[0] in ns and e[1] in ns and lo <= e[2] < hi]
        assert sorted(inside, key=lambda e: e[2]) == evs
        assert _motif_instances(evs, p["motif"], p["delta"]) == [(0, 1, 2)]


def test_planted_events_found_by_brute_force_motif_search(ds: SyntheticDataset) -> None:
    ring = ds.manifest["planted"]["rings"][0]
    lo, hi = ring["isolation_window"]
    ns = set(ring["nodes"])
    window = [(r["src"], r["dst"], r["t"]) for r in _rows(ds.events) if lo <= r["t"] < hi]
    found = _motif_instances([e for e in window if e[0] in ns and e[1] in ns], ring["motif"], ring["delta"])
    assert len(found) == 1
    assert len(window) > 3  # background traffic surrounds the planted instance


# ---- structure: bursts, communities, skew ------------------------------------------------------------------
def test_bursts_are_elevated_counts(ds: SyntheticDataset) -> None:
    t = ds.events.table.column("t").to_numpy()
    start = ds.manifest["time"]["start"]
    hourly = np.bincount((t - start) // HOUR, minlength=ds.manifest["time"]["days"] * 24)
    median = float(np.median(hourly))
    bursts = ds.manifest["bursts"]
    assert len(bursts) == 2
    flagged = set()
    for b in bursts:
        assert b["t_e"] - b["t_s"] == b["hours"] * HOUR and (b["t_s"] - start) % HOUR == 0
        count = int(((t >= b["t_s"]) & (t < b["t_e"])).sum())
        assert count == b["events_in_window"]
        rate = count / b["hours"]
        assert rate > 4 * median, (rate, median)
        assert abs(rate - b["expected_events_per_hour"]) < 0.35 * b["expected_events_per_hour"]
        flagged |= set(range((b["t_s"] - start) // HOUR, (b["t_e"] - start) // HOUR))
    # outside the bursts no hour comes close to the burst rate
    calm = np.delete(hourly, sorted(flagged))
    assert calm.max() < min(b["events_in_window"] / b["hours"] for b in bursts) / 2
    assert abs(median - ds.manifest["rates"]["base_events_per_hour"]) < 0.3 * median


def test_community_structure_and_heavy_tailed_activity(ds: SyntheticDataset) -> None:
    offsets = np.asarray(ds.manifest["communities"]["offsets"])
    assert offsets[0] == 0 and offsets[-1] == N_NODES and (np.diff(offsets) >= 2).all()

    def comm(col: str) -> np.ndarray:
        ids = np.array([int(u[1:]) for u in ds.events.table.column(col).to_pylist()])
        return np.searchsorted(offsets, ids, side="right") - 1

    intra = float(np.mean(comm("src") == comm("dst")))
    assert intra > 0.75
    assert abs(intra - ds.manifest["communities"]["msg_intra_fraction"]) < 1e-6
    out_deg = np.array(sorted(Counter(ds.events.table.column("src").to_pylist()).values(), reverse=True))
    top = out_deg[: N_NODES // 100].sum() / out_deg.sum()
    assert top > 0.05  # the top 1% of nodes send > 5x their uniform share
    assert out_deg[0] > 10 * np.median(out_deg)


# ---- corrections -------------------------------------------------------------------------------------------
def test_corrections_well_formed_and_reference_existing_intervals(ds: SyntheticDataset) -> None:
    msg = _rows(ds.events)
    fol = {(r["src"], r["dst"]): r for r in _rows(ds.follows)}
    msg_at = Counter((r["src"], r["dst"], r["t"]) for r in msg)
    msg_props = {(r["src"], r["dst"], r["t"]): r["props"] for r in msg}
    planted_nodes = {
        u for p in ds.manifest["planted"]["rings"] + ds.manifest["planted"]["pingpongs"] for u in p["nodes"]
    }
    ref_keys = {"src", "dst", "rel_type", "disc"}
    kinds: Counter[str] = Counter()
    touched: dict[tuple[str, str, str], str] = {}
    assert len(ds.corrections) == 3 and all(isinstance(b, list) and b for b in ds.corrections)
    for batch in ds.corrections:
        for op in batch:
            assert json.loads(dumps(op)) == json.loads(json.dumps(op))  # plain canonical-able JSON
            if op["op"] == "correct":
                assert set(op) == {"op", "ref", "props", "vt_s", "vt_e"} and set(op["ref"]) == ref_keys
                r = op["ref"]
                if r["rel_type"] == "follows":
                    row = fol[(r["src"], r["dst"])]
                    assert row["t"] < op["vt_s"] < op["vt_e"] < row["t_end"]  # 3 fragments
                    assert dumps(op["props"]) != row["props"]
                    kinds["interval"] += 1
                else:
                    key = (r["src"], r["dst"], op["vt_s"])
                    assert msg_at[key] == 1 and op["vt_e"] == op["vt_s"] + 1
                    assert dumps(op["props"]) != msg_props[key]
                    kinds["event"] += 1
                ident = (r["src"], r["dst"], r["rel_type"])
            elif op["op"] == "retract":
                assert set(op) == {"op", "ref", "t"} and set(op["ref"]) == ref_keys
                r = op["ref"]
                assert r["rel_type"] == "follows"
                row = fol[(r["src"], r["dst"])]
                assert row["t"] < op["t"] < row["t_end"]
                kinds["retract"] += 1
                ident = (r["src"], r["dst"], r["rel_type"])
            else:
                assert op["op"] == "assert_edge"
                assert set(op) == {"op", "src", "dst", "rel_type", "disc", "props", "vt_s", "vt_e"}
                assert op["vt_s"] < op["vt_e"] and op["props"]
                if op["rel_type"] == "follows":
                    assert (op["src"], op["dst"]) not in fol
                else:
                    assert op["vt_e"] == op["vt_s"] + 1 and msg_at[(op["src"], op["dst"], op["vt_s"])] == 0
                kinds["late"] += 1
                ident = (op["src"], op["dst"], op["rel_type"])
                r = op
            assert r["disc"] == ""
            assert r["src"] not in planted_nodes and r["dst"] not in planted_nodes
            if ident[2] == "follows":  # one write per follows identity: no op invalidates another's target
                assert ident not in touched, (ident, touched.get(ident), op["op"])
                touched[ident] = op["op"]
    assert kinds == Counter(interval=6, event=6, retract=4, late=4)
    targets = ds.manifest["corrections"]["targets"]
    assert [len(t) for t in targets] == [len(b) for b in ds.corrections]
    frag = next(t for t in targets[0] if t["kind"] == "interval_correction")
    assert len(frag["fragments"]) == 3
    assert (
        frag["fragments"][0]["vt_s"] == frag["edge"]["t"]
        and frag["fragments"][2]["vt_e"] == frag["edge"]["t_end"]
    )


def test_guide_table_search_equals_searchsorted() -> None:
    rng = np.random.default_rng(5)
    for n in (4, 37, 5000):
        weights = rng.pareto(1.1, n) + 1.0
        ep = Endpoints(weights, np.array([0, n // 2, n]), 0.5)
        x = np.concatenate([rng.random(20_000) * ep.total, ep.cum, [0.0, np.nextafter(ep.total, 0.0)]])
        expected = np.minimum(np.searchsorted(ep.cum, x, side="right"), n - 1)
        assert np.array_equal(ep._search(x.copy()), expected)
        src, dst = ep.pairs(rng, 10_000)
        assert (src != dst).all() and src.max() < n and dst.min() >= 0


# ---- parameters and scale ----------------------------------------------------------------------------------
def test_bad_parameters_are_structured_errors() -> None:
    with pytest.raises(InvalidArgError) as exc:
        generate(n_nodes=20, n_events=1000)
    assert exc.value.details["field"] == "n_rings"
    with pytest.raises(InvalidArgError) as exc:
        generate(200, 40, 1)
    assert exc.value.details["field"] == "n_events"
    with pytest.raises(InvalidArgError) as exc:
        generate(200, 100, 1)
    assert exc.value.details["field"] == "n_interval_corrections"
    with pytest.raises(InvalidArgError) as exc:
        generate(200, 5000, 1, burstiness=3)
    assert exc.value.details["unknown"] == ["burstiness"]
    with pytest.raises(InvalidArgError):
        generate(200, 5000, -1)
    with pytest.raises(InvalidArgError):
        generate(200, 5000, 1, p_intra=1.5)
    minimal = generate(50, 500, 3, n_rings=1, n_pingpongs=1, n_bursts=0, follows_fraction=0.1)
    assert minimal.num_rows == 500 and minimal.manifest["bursts"] == []


@pytest.mark.slow
def test_one_million_events_in_seconds() -> None:
    t0 = time.perf_counter()
    big = generate(100_000, 1_000_000, 11)
    elapsed = time.perf_counter() - t0
    assert big.num_rows == 1_000_000
    assert big.events.check(check_props=True) is None
    assert elapsed < 6.0, f"10^6 events took {elapsed:.2f}s (target < 3 s)"
