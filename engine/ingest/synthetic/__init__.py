"""A seeded synthetic temporal graph with known gold (DESIGN §4 "Datasets").

``generate(n_nodes, n_events, seed, **knobs)`` returns a :class:`SyntheticDataset`: two event frames, a
JSON-able ``manifest`` (the gold of pattern-mining tasks) and ``corrections`` (write batches for a second
belief epoch). The same seed and knobs give the same bytes on every run (numpy ``Generator`` streams spawned
from one ``SeedSequence``, one per component, consumed in a fixed order).

Content
- Nodes ``s0 .. s<n-1>`` (label ``user``) in contiguous communities (``manifest["communities"]["offsets"]``:
  community ``c`` holds ``s<k>`` for ``offsets[c] <= k < offsets[c+1]``). A share ``p_intra`` of events
  pick their target inside the source's community.
- Heavy-tailed activity: node weights are Pareto(``activity_alpha``) + 1; sources and targets are drawn in
  proportion to them.
- ``msg`` events (instantaneous, whole seconds, props ``{"w": 1..5}``) over ``days`` days from ``start_us``,
  at a flat hourly rate except in ``n_bursts`` global burst windows of ``burst_hours`` hours where the rate
  is ``burst_multiplier`` times higher (burst windows start on hour boundaries).
- ``follows`` edges are interval-valued: ``[t, t_end)`` lasting days (exponential, mean
  ``follows_mean_days``, at least one hour), a share ``follows_open_fraction`` open-ended
  (``t_end = OPEN_END``). Each (src, dst) pair has at most one follows interval, so none overlap.
- Planted cyclic triangles (``M_triangle_cyclic``: u→v, v→w, w→u) and ping-pongs (``M_2node_pingpong``:
  u→v, v→u, u→v) as ``msg`` events at whole seconds, strictly increasing, last minus first ``<= delta``.
  Every planted pattern has its own nodes, and no other event (of any rel type) joins two of its nodes
  inside its ``isolation_window`` ``[t_first - delta, t_last + delta + 1)``: restricted to its nodes and
  that window the planted instance is the only one. Corrections never touch planted nodes.

``n_events`` counts all rows: ``msg`` rows (planted included) plus ``follows`` rows.

Corrections (three batches, in the store's write-op JSON): ``correct`` of a follows interval over
``[a, b)`` strictly inside it (3 fragments) and of single msg events' props over ``[t, t+1)``; ``retract``
of follows intervals at a ``t`` strictly inside; ``assert_edge`` of late-arriving msg events and follows
intervals that overlap no existing version of their identity.
"""

from tgms.engine.ingest.synthetic.config import GENERATOR_VERSION, SyntheticConfig, validate_config
from tgms.engine.ingest.synthetic.generator import SyntheticDataset, generate, generate_from_config

__all__ = [
    "GENERATOR_VERSION",
    "SyntheticConfig",
    "SyntheticDataset",
    "generate",
    "generate_from_config",
    "validate_config",
]
