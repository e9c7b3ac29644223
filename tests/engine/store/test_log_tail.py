"""A complete final log line whose seal is wrong is damage (refuse), not a torn append (trim)."""

from __future__ import annotations

import pytest

from tgms.engine.errors import CorruptError
from tgms.engine.store import Store


def test_damaged_complete_final_line_refuses_to_open(make_store):
    store = make_store()
    store.assert_node("a", 0)
    root, log = store.root, store.log_path
    store.close()
    data = bytearray(log.read_bytes())
    assert data.endswith(b"\n")
    last = data.rstrip(b"\n").rfind(b"\n") + 1
    data[last + 5] ^= 0x01  # flip one bit inside the final, complete outcome record
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptError) as err:
        Store.open(root)
    assert err.value.details["line"] == data.count(b"\n")
    assert log.read_bytes() == bytes(data)  # nothing trimmed
