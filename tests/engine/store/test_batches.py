"""``engine.store.batches.committed_batches``: labelled batches read back from the log, committed only."""

from __future__ import annotations

import pytest

from tests.conftest import MakeStore
from tgms.engine.errors import TGMSError
from tgms.engine.store.batches import committed_batches


def test_committed_batches_by_prefix_in_log_order(make_store: MakeStore) -> None:
    store = make_store()
    store.write([{"op": "assert_node", "uid": "a", "vt_s": 0}], batch_id="base")
    first = store.write([{"op": "assert_node", "uid": "b", "vt_s": 5}], batch_id="probe:0:0:x")
    with pytest.raises(TGMSError):  # logged as failed: it changed nothing and is not returned
        store.write([{"op": "retract", "ref": {"uid": "zz"}, "t": 9}], batch_id="probe:0:1:x")
    second = store.write([{"op": "assert_node", "uid": "c", "vt_s": 7}], batch_id="probe:0:2:y")
    got = committed_batches(store.root, "probe:")
    assert [(b.batch_id, b.tt) for b in got] == [("probe:0:0:x", first.tt), ("probe:0:2:y", second.tt)]
    assert got[1].ops[0]["uid"] == "c"
    assert [b.batch_id for b in committed_batches(store.root)] == ["base", "probe:0:0:x", "probe:0:2:y"]
    assert committed_batches(store.root, "nothing:") == []
