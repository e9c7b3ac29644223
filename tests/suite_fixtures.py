"""Hand-made tasks and suites for tests: a :class:`Task` with every field a test does not care about filled
in, and a :class:`Suite` around given splits (validated like a generated one)."""

from __future__ import annotations

from typing import Any

from tgms.pipeline.campaign.bundle import BundleOptions, BundleSource, Manifest
from tgms.pipeline.scoring.suite import SUITE_FORMAT, Splits, Suite, Task, split_sha256


def task(**fields: Any) -> Task:
    """A generated-looking task; ``fields`` override the defaults (``id`` and ``family`` usually)."""
    base: dict[str, Any] = {
        "id": "s/T1.t0/00",
        "template": None,
        "family": "T1",
        "paraphrase": 0,
        "question": "How many?",
        "input_uids": (),
        "oracle_plan": None,
        "answer_kind": "count",
        "gold": 0,
        "gold_answer_object": None,
    }
    base.update(fields)
    if base["template"] is None:
        base["template"] = base["id"].split("/")[1] if base["id"].count("/") == 2 else f"{base['family']}.t"
    return Task(**base)


def suite_of(
    dev: list[Task] | tuple[Task, ...],
    test: list[Task] | tuple[Task, ...] = (),
    train: list[Task] | tuple[Task, ...] = (),
    **fields: Any,
) -> Suite:
    """A suite holding the given splits (defaults for the rest)."""
    base: dict[str, Any] = {
        "format": SUITE_FORMAT,
        "generator_version": "2",
        "dataset": "tiny",
        "seed": 0,
        "store_digest": "0" * 64,
        "templates": {},
        "operators_used": (),
        "splits": Splits(dev=tuple(dev), test=tuple(test), train=tuple(train)),
        "test_sha256": split_sha256(list(test)),
        "refused": (),
        "dropped": {},
    }
    base.update(fields)
    return Suite(**base)


def manifest(**fields: Any) -> Manifest:
    """A bundle manifest with made-up hashes (a collegemsg bundle of seed 0 unless fields say otherwise)."""
    base: dict[str, Any] = {
        "format": "tgms-bundle",
        "version": 1,
        "bundle_version": 1,
        "dataset": "collegemsg",
        "source": BundleSource(name="SNAP collegemsg", sha256="f" * 64),
        "seed": 0,
        "options": BundleOptions(crosscheck=False, probes=True),
        "clock": "canonical",
        "store_digest": "0" * 64,
        "suite_sha256": "1" * 64,
        "test_sha256": "2" * 64,
        "eventlog_sha256": "e" * 64,
        "generator_version": "2",
        "planted": None,
    }
    base.update(fields)
    return Manifest(**base)
