"""The latest state the baselines read: currently believed edge versions only, in a fixed order."""

from __future__ import annotations

import json

from tests.conftest import MakeStore
from tests.suite_fixtures import task
from tgms.engine.api import ScanFilter
from tgms.pipeline.systems.latest import LATEST_COLUMNS, read_latest, task_entities


def test_latest_state_is_current_belief_in_time_order(make_store: MakeStore) -> None:
    st = make_store()
    st.write([{"op": "assert_node", "uid": u, "vt_s": 0} for u in ("n1", "n2", "n3")])
    st.assert_edge("n1", "n2", "msg", 100, 101, props={"w": 1})
    st.assert_edge("n2", "n3", "msg", 50, 51)
    st.assert_edge("n3", "n1", "like", 200, 260)
    st.correct({"src": "n1", "dst": "n2", "rel_type": "msg"}, {"w": 5}, 100, 101)  # we were wrong
    assert st.scan_edges(ScanFilter(all_beliefs=True)).num_rows == 4  # the superseded belief is kept...
    latest = read_latest(st)
    rows = latest.edges.to_pylist()
    assert tuple(latest.edges.column_names) == LATEST_COLUMNS
    assert [(r["src"], r["dst"], r["rel_type"], r["t"], r["t_end"]) for r in rows] == [
        ("n2", "n3", "msg", 50, 51),
        ("n1", "n2", "msg", 100, 101),
        ("n3", "n1", "like", 200, 260),
    ]  # ...but only the current one is seen, with its corrected props
    assert [json.loads(r["props"]) for r in rows] == [{}, {"w": 5}, {}]
    assert latest.digest == st.digest() and latest.rel_types == ["like", "msg"]
    card = latest.describe()
    assert "3 directed edge events between 3 nodes" in card and "50 µs" in card
    assert "µs" not in latest.describe(with_times=False)


def test_task_entities_come_from_input_uids_else_from_the_question() -> None:
    assert task_entities(task(input_uids=("n9", "n1"), question="n5?")) == ["n9", "n1"]
    q = "How many events between n12 and n4, and n12 again (not n12x or an12)?"
    assert task_entities(task(input_uids=(), question=q)) == ["n12", "n4"]
