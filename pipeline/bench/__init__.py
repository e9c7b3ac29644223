"""Benchmarks (not tests), run as ``tgms bench NAME`` (or ``python -m tgms.pipeline.bench NAME``).

Each benchmark module defines ``HELP``, ``add_arguments(parser)`` and ``main(args, progress) ->
BenchResult`` (:mod:`pipeline.bench.report`); the stores they run on come from :mod:`pipeline.latency.stores`.
"""

#: subcommand -> module under pipeline.bench
BENCHES: dict[str, str] = {
    "ops": "ops_bench",
    "peers": "peers_bench",
    "store": "store_bench",
    "cold": "cold_bench",
    "metrics": "metrics_bench",
    "motifs": "motifs_bench",
    "traversal": "traversal_bench",
    "calibrate": "calibrate",
    "campaign": "campaign_bench",
    "planner": "planner_bench",
    "prompt": "prompt_bench",
}

__all__ = ["BENCHES"]
