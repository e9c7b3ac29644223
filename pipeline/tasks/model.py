"""Task templates and the drafts they produce.

A :class:`Template` is one semantic question with three hand-written paraphrases and a ``draw`` function
that samples its parameters from a store (through a :class:`~pipeline.tasks.sampler.Sampler`) and returns
a :class:`Draft`: the parameters the paraphrases are formatted with, the uids the task input names, and the
oracle plan whose execution is the gold. Templates register with :func:`template`; the generator looks
them up in :data:`TEMPLATES` (one registry, like the operators').

Families: ``T1`` single-operator, ``T2`` planted-pattern mining (synthetic only, gold from the manifest),
``T3`` evolution, ``T4`` multi-step, ``T5`` analyst questions (event aggregates, belief history), ``probe``
correction probes (before/current pairs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tgms.pipeline.tasks.sampler import Sampler

FAMILIES = ("T1", "T2", "T3", "T4", "T5", "probe")
Key = tuple[Any, ...]  # identifies a draw: a template skips a draw whose key it has drawn before


@dataclass(frozen=True)
class Draft:
    """One sampled instance of a template, before its gold is computed."""

    params: dict[str, Any]  # paraphrase fields (times already rendered as "UTC (µs)")
    input_uids: tuple[str, ...]
    steps: list[dict[str, Any]]  # the oracle plan's steps
    answer_from: str  # answer_spec.from
    key: Key = ()  # identifies the draw (duplicate draws are skipped)
    manifest_gold: Any = None  # T2: the generator's gold, the independent path
    probe_pair: str | None = None
    probe_half: str | None = None  # "before" | "current"


@dataclass(frozen=True)
class Template:
    name: str
    family: str
    kind: str  # the answer kind (engine.plan.model.ANSWER_KINDS)
    paraphrases: tuple[str, str, str]
    draw: Callable[[Sampler], Draft | None]
    datasets: tuple[str, ...] | None = None  # None: every dataset
    ops: tuple[str, ...] = field(default=())  # operators of the oracle plan (documentation and checks)
    # bumped by hand when a template's meaning changes (paraphrases, draw, plan); recorded in the suite past 1
    version: int = 1

    def applies(self, dataset: str) -> bool:
        return self.datasets is None or dataset in self.datasets


TEMPLATES: dict[str, Template] = {}


def template(
    name: str,
    *,
    kind: str,
    paraphrases: tuple[str, str, str],
    ops: tuple[str, ...],
    datasets: tuple[str, ...] | None = None,
    family: str | None = None,
    version: int = 1,
) -> Callable[[Callable[[Sampler], Draft | None]], Callable[[Sampler], Draft | None]]:
    """Register the decorated draw as the template ``name``; its family is the name's prefix (``T1.x``: T1)
    unless given; ``version`` (an integer >= 1) is bumped when the template's meaning changes."""
    family = family or name.split(".", 1)[0]
    if family not in FAMILIES:
        raise ValueError(f"template {name}: unknown family {family!r}")
    if len(paraphrases) != 3 or len(set(paraphrases)) != 3:
        raise ValueError(f"template {name}: three distinct paraphrases are required")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"template {name}: version must be an integer >= 1, got {version!r}")

    def register(fn: Callable[[Sampler], Draft | None]) -> Callable[[Sampler], Draft | None]:
        if name in TEMPLATES:
            raise RuntimeError(f"template {name!r} registered twice")
        TEMPLATES[name] = Template(name, family, kind, paraphrases, fn, datasets, ops, version)
        return fn

    return register


def all_templates() -> list[Template]:
    from tgms.pipeline.tasks import templates  # noqa: F401  (registers on import)

    return [TEMPLATES[k] for k in sorted(TEMPLATES)]


def ref(text: str) -> dict[str, str]:
    return {"$ref": text}


def step(sid: str, op: str, args: dict[str, Any], *deps: str) -> dict[str, Any]:
    return {"id": sid, "op": op, "args": args, "depends_on": list(deps)}


def one_step(
    op: str,
    args: dict[str, Any],
    answer: str,
    params: dict[str, Any],
    uids: tuple[str, ...] = (),
    *,
    key: Key,
) -> Draft:
    """A draft whose oracle plan is the one call ``s1`` of ``op``, answered from ``s1.<answer>``."""
    return Draft(params, uids, [step("s1", op, args)], f"s1.{answer}", key=key)
