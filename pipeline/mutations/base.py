"""What a mutation is: a seeded generator turning one pool claim into a wrong claim (or declining).

Each class is a named function ``(item, rng) -> Mutant | None`` so the experiment can sample, count and
reproduce it; the :class:`Mutant` says which claim changed and which trace (and, for classes with a
"without mechanism" column, which trace and verifier configuration) it must be checked against.

A class registers with :func:`mutation_class` on its generator, next to it, carrying its own parts: its
Table 5 row, what it applies to (words and a predicate), whether it is expected to be detected and why
not, and whether it has a "without mechanism" run. :mod:`pipeline.mutations.registry` lists them.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tgms.engine.api import Trace, VerifyConfig
from tgms.pipeline.mutations.pool import PoolItem


@dataclass
class Mutant:
    answer: dict[str, Any]  # the whole answer object, one claim changed
    claim_id: str
    trace: Trace  # what the mutated claim is verified against
    without: tuple[Trace, VerifyConfig] | None = None  # the run with the mechanism switched off

    @property
    def claim(self) -> dict[str, Any]:
        return next(c for c in self.answer["claims"] if c["id"] == self.claim_id)


Generator = Callable[[PoolItem, random.Random], "Mutant | None"]


@dataclass(frozen=True)
class MutationClass:
    name: str
    generate: Generator
    applies_to: str  # which pool claims the class can mutate
    applies: Callable[[PoolItem], bool]
    expect_detected: bool = True
    note: str | None = None  # why trace grounding cannot catch it, for the deliberate negatives
    has_without: bool = False
    row: int = 0  # its place in Table 5


#: every registered class by name (import :mod:`pipeline.mutations.registry` to have them all)
MUTATION_CLASSES: dict[str, MutationClass] = {}


def mutation_class(
    name: str,
    *,
    row: int,
    applies_to: str,
    applies: Callable[[PoolItem], bool],
    expect_detected: bool = True,
    note: str | None = None,
    has_without: bool = False,
) -> Callable[[Generator], Generator]:
    """Register the decorated generator as the mutation class ``name`` (Table 5 row ``row``)."""

    def register(fn: Generator) -> Generator:
        if name in MUTATION_CLASSES:
            raise RuntimeError(f"mutation class {name!r} registered twice")
        if any(c.row == row for c in MUTATION_CLASSES.values()):
            raise RuntimeError(f"mutation class {name!r}: Table 5 row {row} is taken")
        MUTATION_CLASSES[name] = MutationClass(
            name, fn, applies_to, applies, expect_detected, note, has_without, row
        )
        return fn

    return register


def claim_types(*types: str) -> Callable[[PoolItem], bool]:
    """A predicate: the item's claim is of one of ``types``."""

    def applies(item: PoolItem) -> bool:
        return item.claim["type"] in types

    return applies


def with_claim(item: PoolItem, new: dict[str, Any], text: str | None = None) -> dict[str, Any]:
    """A deep copy of the item's answer with its target claim replaced by ``new`` (and the text)."""
    ans = copy.deepcopy(item.answer)
    ans["claims"] = [copy.deepcopy(new) if c["id"] == item.claim_id else c for c in ans["claims"]]
    if text is not None:
        ans["text"] = text
    return ans


def mutant(item: PoolItem, new: dict[str, Any], text: str | None = None, **kw: Any) -> Mutant:
    return Mutant(with_claim(item, new, text), item.claim_id, kw.pop("trace", item.trace), **kw)
