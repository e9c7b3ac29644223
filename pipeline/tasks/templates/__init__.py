"""The task templates; importing this package registers them all (see :mod:`pipeline.tasks.model`)."""

from tgms.pipeline.tasks.templates import (
    t1,
    t2,
    t3_t4,
    t5,
    t5_compute,
    t5_extra,
    t5_filters,
    t5_predicates,
    t5_reach,
    t5_sequences,
    t5_spans,
    t5_static,
    t5_windows,
)

__all__ = [
    "t1",
    "t2",
    "t3_t4",
    "t5",
    "t5_compute",
    "t5_extra",
    "t5_filters",
    "t5_predicates",
    "t5_reach",
    "t5_sequences",
    "t5_spans",
    "t5_static",
    "t5_windows",
]
