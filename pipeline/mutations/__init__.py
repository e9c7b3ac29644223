"""Verifier mutation experiments (the paper's Table 5): seeded wrong claims against real traces.

``run_experiment(store_dir, suite, per_class=100, seed=0)`` builds the pool and runs every class;
``table5_markdown(result)`` renders it. See :mod:`pipeline.mutations.experiment`.
"""

from tgms.pipeline.mutations.experiment import run_experiment, table5, table5_markdown, write_outputs

__all__ = ["run_experiment", "table5", "table5_markdown", "write_outputs"]
