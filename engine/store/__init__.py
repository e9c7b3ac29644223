"""The bi-temporal store: versions, writes, event log, replay, digest, backends."""

from tgms.engine.store.model import ScanFilter
from tgms.engine.store.store import BatchResult, Store, replay

__all__ = ["BatchResult", "ScanFilter", "Store", "replay"]
