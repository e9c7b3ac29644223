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


def test_an_interrupt_mid_scan_goes_on_as_itself(make_store, monkeypatch):
    """A SIGTERM turned KeyboardInterrupt while the mapped log is scanned (seen in a campaign stopped during
    its bundle build) must reach the caller as the interrupt: a view into the map left alive on the way out
    used to make the map's close raise BufferError in its place, and the campaign ended as E_INTERNAL."""
    from tgms.engine.store import eventlog

    store = make_store()
    store.assert_node("a", 0)
    log = store.log_path
    store.close()
    calls = []

    def interrupted(raw):
        calls.append(1)
        if len(calls) == 2:  # mid-scan: the second line's slice of the map is alive
            raise KeyboardInterrupt
        return real(raw)

    real = eventlog._head
    monkeypatch.setattr(eventlog, "_head", interrupted)
    with pytest.raises(KeyboardInterrupt):
        eventlog.read_log(log)
    monkeypatch.setattr(eventlog, "_head", real)
    assert eventlog.read_log(log).batches  # the file is untouched and reads again
