"""The mutation classes of the experiment, in Table 5's order.

Each class registers itself next to its generator (:func:`pipeline.mutations.base.mutation_class`) with
its row, what it applies to and its notes; importing the generator modules here registers them all.
"""

from __future__ import annotations

from tgms.pipeline.mutations import classes, variants  # noqa: F401  (registers on import)
from tgms.pipeline.mutations.base import MUTATION_CLASSES, MutationClass


def all_classes() -> tuple[MutationClass, ...]:
    """Every registered class, by Table 5 row (classes registered after import included)."""
    return tuple(sorted(MUTATION_CLASSES.values(), key=lambda c: c.row))


#: the built-in classes, by Table 5 row
CLASSES: tuple[MutationClass, ...] = all_classes()
