"""The bulk path (``Store.ingest_events``) has the semantics of the general path, event by event."""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import collegemsg_file
from tgms.engine.store import ScanFilter, Store
from tgms.engine.timeutil import OPEN_END

from ._support import EVERY, disjointness_violations

EXAMPLES = max(1, int(os.environ.get("TGMS_HYPOTHESIS_EXAMPLES", "40")) // 2)


def frame(events, rel_type="M", label="user"):
    """``{"columns", "rel_type", "label"}`` from (src, dst, t[, t_end[, props]]) tuples."""
    cols = {
        "src": [e[0] for e in events],
        "dst": [e[1] for e in events],
        "t": pa.array([e[2] for e in events], pa.int64()),
    }
    if any(len(e) > 3 and e[3] is not None for e in events):
        cols["t_end"] = pa.array([e[3] if len(e) > 3 else None for e in events], pa.int64())
    if any(len(e) > 4 and e[4] is not None for e in events):
        cols["props"] = [json.dumps(e[4], sort_keys=True) if len(e) > 4 and e[4] else None for e in events]
    return {"columns": cols, "rel_type": rel_type, "label": label}


def general_ops(store, events, rel_type="M", label="user"):
    """The same facts as general-path ops: nodes for new uids from their first event, then one
    ``assert_edge`` per event, the k-th exact repeat of (src, dst, t) getting disc str(k)."""
    known = set(store.entity_ids())
    first: dict[str, int] = {}
    for e in events:
        for u in e[:2]:
            first[u] = min(first.get(u, e[2]), e[2])
    ops = [
        {"op": "assert_node", "uid": u, "label": label, "vt_s": t} for u, t in first.items() if u not in known
    ]
    seen: Counter = Counter()
    for e in events:
        k = seen[e[:3]]
        seen[e[:3]] += 1
        op = {
            "op": "assert_edge",
            "src": e[0],
            "dst": e[1],
            "rel_type": rel_type,
            "disc": "" if k == 0 else str(k),
        }
        op["vt_s"] = e[2]
        op["vt_e"] = e[3] if len(e) > 3 and e[3] is not None else e[2] + 1
        if len(e) > 4 and e[4]:
            op["props"] = e[4]
        ops.append(op)
    return ops


def current_rows(store):
    """Current belief without vids and tt.

    Nodes as (uid, label, vt_s, vt_e, props), edges as (src, dst, rel_type, disc, vt_s, vt_e, props).
    """
    nodes, edges = store.public_rows(ScanFilter())
    n = Counter(
        (r["uid"], r["label"], r["vt_s"], r["vt_e"], json.dumps(r["props"], sort_keys=True)) for r in nodes
    )
    e = Counter(
        (
            r["src"],
            r["dst"],
            r["rel_type"],
            r["disc"],
            r["vt_s"],
            r["vt_e"],
            json.dumps(r["props"], sort_keys=True),
        )
        for r in edges
    )
    return n, e


EVENTS = [  # unsorted, with exact duplicates, interval events, an overlap inside the op, props, self-loop
    ("a", "b", 50),
    ("b", "a", 10),
    ("a", "b", 50),
    ("c", "a", 30, None, {"w": 1}),
    ("a", "b", 50),
    ("a", "b", 20, 60),  # overlaps the first (a, b, 50): same identity (disc ""), carved
    ("d", "d", 5, 8, {"w": 2.5}),
    ("b", "a", 10, 12),  # exact repeat of (b, a, 10) with another end: disc "1"
    ("e", "a", 70),
]


# -- bulk == general ---------------------------------------------------------------------------------------
def test_bulk_equals_one_assert_per_batch(make_store):
    bulk, general = make_store("bulk"), make_store("general")
    results = bulk.ingest_events(frame(EVENTS))
    assert [r.status for r in results] == ["committed"]
    for op in general_ops(general, EVENTS):
        general.write([op])
    assert current_rows(bulk) == current_rows(general)
    assert disjointness_violations(bulk) == []


def test_bulk_equals_one_general_batch(make_store):
    bulk, general = make_store("bulk"), make_store("general")
    bulk.ingest_events(frame(EVENTS))
    general.write(general_ops(general, EVENTS))
    assert current_rows(bulk) == current_rows(general)
    # in one batch a carved version is dropped, not closed: both paths keep no closed rows
    assert bulk.public_rows(EVERY)[1] == bulk.public_rows(ScanFilter())[1]
    assert len(general.public_rows(EVERY)[1]) == len(general.public_rows(ScanFilter())[1])


def test_bulk_on_top_of_stored_belief_equals_general(make_store):
    pre = [{"op": "assert_node", "uid": u, "vt_s": 0, "label": "old"} for u in ("a", "b")] + [
        {
            "op": "assert_edge",
            "src": "a",
            "dst": "b",
            "rel_type": "M",
            "vt_s": 40,
            "vt_e": 55,
            "props": {"p": 0},
        }
    ]
    bulk, general = make_store("bulk"), make_store("general")
    for s in (bulk, general):
        s.write(pre)
    bulk.ingest_events(frame(EVENTS))
    general.write(general_ops(general, EVENTS))
    assert current_rows(bulk) == current_rows(general)
    # a and b were known: no new node versions for them, their label stays
    nodes = {r["uid"]: r for r in bulk.public_rows(ScanFilter())[0]}
    assert (nodes["a"]["label"], nodes["a"]["vt_s"]) == ("old", 0)
    assert disjointness_violations(bulk) == []


def test_bulk_after_general_ops_in_the_same_batch(make_store):
    """An ingest op after an assert of the same identity in one batch carves it, as the general path does."""
    ingest = {
        **{"op": "ingest_events", "rel_type": "M", "label": "user", "src": ["a", "a"], "dst": ["b", "b"]},
        **{"t": [10, 30], "t_end": [20, None]},
    }
    setup = [{"op": "assert_node", "uid": u, "vt_s": 0} for u in ("a", "b")]
    edge = {"op": "assert_edge", "src": "a", "dst": "b", "rel_type": "M", "vt_s": 0, "vt_e": 100}
    bulk, general = make_store("bulk"), make_store("general")
    bulk.write([*setup, edge, ingest])
    general.write([*setup, edge, {**edge, "vt_s": 10, "vt_e": 20}, {**edge, "vt_s": 30, "vt_e": 31}])
    assert current_rows(bulk) == current_rows(general)
    assert sorted(r[4:6] for r in current_rows(bulk)[1]) == [(0, 10), (10, 20), (20, 30), (30, 31), (31, 100)]


event_st = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["a", "b", "d"]),
    st.integers(0, 8),
    st.none() | st.integers(1, 6),
    st.none() | st.fixed_dictionaries({"w": st.integers(0, 2)}),
).map(lambda e: (e[0], e[1], e[2], None if e[3] is None else e[2] + e[3], e[4]))


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(events=st.lists(event_st, min_size=1, max_size=12), pre=st.lists(event_st, max_size=4))
def test_bulk_equals_general_on_random_events(backend, fake_clock, scratch_dir, events, pre):
    with tempfile.TemporaryDirectory(dir=scratch_dir) as tmp:
        bulk = Store.create(Path(tmp) / "bulk", backend, now=fake_clock())
        general = Store.create(Path(tmp) / "general", backend, now=fake_clock())
        try:
            if pre:  # some stored belief the events may overlap
                for s in (bulk, general):
                    s.write(general_ops(s, pre))
            bulk.ingest_events(frame(events))
            general.write(general_ops(general, events))
            assert current_rows(bulk) == current_rows(general)
            assert disjointness_violations(bulk) == []
        finally:
            bulk.close()
            general.close()


# -- discriminators, carving, nodes ------------------------------------------------------------------------
def test_exact_duplicates_get_discriminators_in_order(make_store):
    store = make_store()
    store.ingest_events(frame([("a", "b", 5, None, {"k": i}) for i in range(3)] + [("a", "b", 6)]))
    edges = store.public_rows(ScanFilter())[1]
    by_disc = {(e["vt_s"], e["disc"]): e for e in edges}
    assert sorted(by_disc) == [(5, ""), (5, "1"), (5, "2"), (6, "")]
    assert [by_disc[(5, d)]["props"]["k"] for d in ("", "1", "2")] == [0, 1, 2]  # order of appearance
    assert len({e["eid"] for e in edges}) == 3  # (5, "") and (6, "") are one identity
    assert all(e["vt_e"] == e["vt_s"] + 1 for e in edges)  # instantaneous: [t, t + 1)


def test_reingesting_the_same_events_goes_through_carving(make_store):
    store = make_store()
    first_tt = store.ingest_events(frame(EVENTS))[0].tt
    before = current_rows(store)
    pinned = store.public_rows(ScanFilter(as_of_tt=first_tt))
    second = store.ingest_events(frame(EVENTS))[0]
    assert current_rows(store) == before  # the same facts, believed again
    assert second.stats["versions_closed"] == sum(before[1].values())
    assert disjointness_violations(store) == []
    closed = [e for e in store.public_rows(EVERY)[1] if e["tt_e"] != OPEN_END]
    assert {e["tt_e"] for e in closed} == {second.tt}
    assert store.public_rows(ScanFilter(as_of_tt=first_tt)) == pinned
    assert store.stats()["node_versions"] == 5  # no node versions for uids already known


def test_reingesting_overlapping_interval_events_carves_stored_belief(make_store):
    store = make_store()
    store.ingest_events(frame([("a", "b", 0, 100, {"v": 1}), ("a", "b", 200, 300, {"v": 1})]))
    store.ingest_events(frame([("a", "b", 50, 250, {"v": 2})]))
    edges = sorted((e["vt_s"], e["vt_e"], e["props"]["v"]) for e in store.public_rows(ScanFilter())[1])
    assert edges == [(0, 50, 1), (50, 250, 2), (250, 300, 1)]
    assert disjointness_violations(store) == []
    assert store.stats()["edge_versions"] == 5  # 2 closed + 3 believed


def test_overlapping_interval_events_in_one_op_are_carved(make_store):
    store = make_store()
    store.ingest_events(
        frame([("a", "b", 0, 10, {"v": 1}), ("a", "b", 5, 15, {"v": 2}), ("a", "b", 2, 3, {"v": 3})])
    )
    edges = sorted((e["vt_s"], e["vt_e"], e["props"]["v"]) for e in store.public_rows(ScanFilter())[1])
    assert edges == [(0, 2, 1), (2, 3, 3), (3, 5, 1), (5, 15, 2)]
    assert len(store.public_rows(EVERY)[1]) == 4  # same batch: carved versions dropped, not closed
    assert disjointness_violations(store) == []


def test_new_uids_get_node_versions_from_their_first_event(make_store):
    store = make_store()
    store.assert_node("old", 0, label="person")
    store.ingest_events(frame([("x", "old", 40), ("y", "x", 7), ("old", "z", 99)], label="user"))
    nodes = {r["uid"]: r for r in store.public_rows(EVERY)[0]}
    assert {u: (r["label"], r["vt_s"], r["vt_e"]) for u, r in nodes.items()} == {
        "old": ("person", 0, OPEN_END),
        "x": ("user", 7, OPEN_END),  # first event at 7 although it comes second
        "y": ("user", 7, OPEN_END),
        "z": ("user", 99, OPEN_END),
    }


def test_chunked_ingest_keeps_exact_duplicates_apart(make_store):
    """Splitting one frame into several logged batches must not change what is believed: an exact
    repeat in a later chunk is still a distinct fact (disc "1"), not a re-assertion of the first."""
    events = [("a", "b", 5), ("b", "c", 6), ("a", "b", 5)]
    whole, chunked = make_store("whole"), make_store("chunked")
    whole.ingest_events(frame(events))
    assert len(chunked.ingest_events(frame(events), chunk=2)) == 2
    assert current_rows(chunked)[1] == current_rows(whole)[1]


def test_chunked_ingest_starts_nodes_at_their_first_event(make_store):
    """A uid's node version starts at its earliest event in the frame, whichever chunk holds it."""
    events = [("late", "b", 90), ("b", "c", 95), ("late", "c", 1)]
    whole, chunked = make_store("whole"), make_store("chunked")
    whole.ingest_events(frame(events))
    chunked.ingest_events(frame(events), chunk=2)
    assert current_rows(chunked)[0] == current_rows(whole)[0]


def test_chunked_ingest_of_distinct_sorted_events_equals_one_op(make_store):
    events = sorted({(e[0], e[1], e[2]) for e in EVENTS}, key=lambda e: e[2])
    whole, chunked = make_store("whole"), make_store("chunked")
    whole.ingest_events(frame(events))
    assert len(chunked.ingest_events(frame(events), chunk=4)) == 2
    assert current_rows(chunked) == current_rows(whole)


def test_empty_frame_commits_nothing(make_store):
    store = make_store()
    digest = store.digest()
    results = store.ingest_events(
        {"columns": {"src": [], "dst": [], "t": pa.array([], pa.int64())}, "rel_type": "M"}
    )
    assert [r.status for r in results] == ["committed"]
    assert store.digest() == digest


# -- CollegeMsg --------------------------------------------------------------------------------------------
def test_collegemsg_ingests_to_the_published_counts(make_store):
    path = collegemsg_file()  # the shared copy, else the packaged one (pyarrow reads .gz by its name)
    raw = pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(column_names=["src", "dst", "t"]),
        parse_options=pacsv.ParseOptions(delimiter=" "),
        convert_options=pacsv.ConvertOptions(
            column_types={"src": pa.string(), "dst": pa.string(), "t": pa.int64()}
        ),
    )
    columns = {
        "src": pc.binary_join_element_wise("n", raw["src"], ""),
        "dst": pc.binary_join_element_wise("n", raw["dst"], ""),
        "t": pc.multiply(raw["t"], 1_000_000),
    }
    store = make_store()
    results = store.ingest_events({"columns": columns, "rel_type": "MESSAGED", "label": "user"})
    assert [r.status for r in results] == ["committed"]
    stats = store.stats()
    assert stats["edge_versions"] == stats["edge_versions_current"] == 59_835
    assert stats["entities"] == stats["node_versions"] == stats["nodes_current"] == 1_899
    assert stats["rel_types"] == {"MESSAGED": 59_835}
    assert stats["extent"]["vt_min"] == pc.min(columns["t"]).as_py()
    keys = Counter(zip(raw["src"].to_pylist(), raw["dst"].to_pylist(), raw["t"].to_pylist(), strict=True))
    repeats = sum(c - 1 for c in keys.values())
    discs = pc.value_counts(store.scan_edges()["disc"]).to_pylist()
    assert sum(d["counts"] for d in discs if d["values"] != "") == repeats > 0
