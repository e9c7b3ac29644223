"""The fixed inputs of the malformed-input generator (:mod:`tests.pipeline.cli._malformed`): valid
arguments per operator, bad values, number tokens and the argv tables of the commands that take no store
argument first."""

from __future__ import annotations

from typing import Any

W = {"t_a": 0, "t_b": 1000}
#: valid arguments per operator on the small store, and the type of each field (to break it surely)
BASE_ARGS: dict[str, tuple[dict[str, Any], dict[str, str]]] = {
    "temporal_reachability": (
        {"src": "n0", "window": W},
        {"src": "uid", "window": "window", "delta_max_wait": "time", "limit": "limit", "as_of_tt": "time"},
    ),
    "entity_history": ({"uid": "n1"}, {"uid": "uid", "include_edges": "bool", "limit": "limit"}),
    "snapshot_subgraph": (
        {"seeds": ["n1"], "t_valid": 50},
        {"seeds": "uids", "t_valid": "time", "hops": "small", "limit": "limit"},
    ),
    "count_temporal_motifs": (
        {"motif": "M_2node_pingpong", "delta": 100, "window": W},
        {"motif": "enum", "delta": "time", "window": "window"},
    ),
    "resolve_entities": ({"query": "n"}, {"query": "str", "limit": "limit"}),
    "compute": ({"fn": "sum", "input": [1, 2]}, {"fn": "enum", "input": "list", "k": "small"}),
    "graph_metric_timeseries": (
        {"metric": "node_count", "window": W, "stride": 100},
        {"metric": "enum", "window": "window", "stride": "time"},
    ),
    "diff_snapshots": ({"t1": 0, "t2": 100}, {"t1": "time", "t2": "time", "limit": "limit"}),
}

BAD_VALUES: dict[str, list[Any]] = {
    "uid": [5, 1.5, [], {}, True, None],
    "uids": ["n1", {}, [1], [None], 7, None, [[]]],
    "time": ["5", 1.5, 1.0, 1e3, -1, 2**70, True, [], None, {"t": 1}],
    "limit": [0, 10_001, -5, 1.0, "5", True, 2**64],
    "small": [-1, 99, 1.0, "2", [], True],
    "bool": ["yes", 1, 0.0, [], {}],
    "str": [5, [], {}, True],
    "enum": ["no_such_value", 3, [], "", "\u0000"],
    "list": ["x", 5, {}, True],
    "window": [
        [0, 10],
        {"t_a": 10, "t_b": 5},
        {"t_a": 1.0, "t_b": 5},
        {"t_a": 0},
        "w",
        {"t_a": -1, "t_b": 5},
    ],
}
NUMBER_TOKENS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" * 400, "0x10", "01", "+1", ".5"]


LOCAL_CASES: list[list[str]] = [
    ["local"],
    ["local", "setup"],
    ["local", "setup", "ollama"],
    ["local", "serve", "llamacpp", "--port", "x"],
    ["local", "serve", "llamacpp", "--port", "0"],
    ["local", "serve", "vllm", "--port", "70000"],
    ["local", "serve", "vllm", "--bogus"],
    ["local", "setup", "vllm", "--check", "--python", "/nonexistent/python"],
]

#: ``tgms serve``: refused before the server listens or reads stdin (``{store}`` is a real store, ``{work}``
#: a scratch directory)
SERVE_CASES: list[list[str]] = [
    ["serve"],
    ["serve", "--store", "{work}/no-store-here"],
    ["serve", "--store", "{store}", "--http", "70000"],
    ["serve", "--store", "{store}", "--http", "x"],
    ["serve", "--store", "{store}", "--workers", "0"],
    ["serve", "--store", "{store}", "--budget-s", "nan"],
    ["serve", "--store", "{store}", "--bogus"],
]

#: ``tgms ask`` / ``tgms systems``: refused before any model server starts or any request is sent (``{store}``
#: and ``{suite}`` are filled in; a remote URL on a closed port is never reached)
REMOTE = ["--model", "m", "--api-base", "http://127.0.0.1:9"]
RUN = ["systems", "run", "--suite", "{suite}", "--store", "{store}", "--out", "{out}", *REMOTE]
MODEL_CASES: list[list[str]] = [
    ["ask", "", "--store", "{store}", *REMOTE],
    ["ask", "q", "--store", "{store}", "--model", "m"],
    ["ask", "q", "--store", "{store}", "--api-base", "http://127.0.0.1:9"],
    ["ask", "q", "--store", "{store}", *REMOTE, "--config", "{bad"],
    ["ask", "q", "--store", "{store}", *REMOTE, "--config", '{"gating": "maybe"}'],
    ["ask", "q", "--store", "{store}", *REMOTE, "--config", '{"nope": 1}'],
    ["ask", "q", "--store", "{store}", *REMOTE, "--max-tokens", "0"],
    ["ask", "q", "--store", "{store}", *REMOTE, "--timeout", "NaN"],
    ["ask", "q", "--store", "{store}", "--model", "local", "--local-engine", "ollama"],
    ["systems"],
    [*RUN, "--system", "nope"],
    [*RUN, "--system", "tgms", "--concurrency", "0"],
    [*RUN, "--system", "vector_rag", "--config", '{"k": "many"}'],
    [*RUN, "--system", "tgms", "--split", "train"],
    [*RUN, "--system", "tgms"],  # the suite is not a suite file
]
