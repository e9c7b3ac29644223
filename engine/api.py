"""The engine's public surface: everything a caller outside ``engine/`` may use, in one place.

``models/``, ``pipeline/`` and ``reports/`` import the engine only through this module; an import-linter
contract (``pyproject.toml``, checked by ``tests/test_layering.py``) fails the build when they reach
past it. Inside ``engine/`` modules import each other directly.

The surface, by task: only what ``models/``, ``pipeline/`` and ``reports/`` use (tests reach the
rest in its own module), and ``__all__`` is exactly this table (``tests/engine/test_api_surface.py``):

==================  ========================================================================================
task                names
==================  ========================================================================================
build a store       :func:`build_store` (a dataset load: SNAP file, packaged copy or synthetic),
                    :data:`DATASETS`, :func:`source_path`, :func:`source_sha256`, :func:`load_data`,
                    :func:`ingest_data` (the two halves of a build, timed apart by the store benchmark)
open, write, read   :class:`Store` (``create``/``open``/``write``/``digest``/``stats``), :class:`ScanFilter`,
                    :func:`parse_batch`, :data:`BACKENDS`, :func:`backend_class` (a backend by name),
                    :data:`OPEN_END` (an open valid-time end), :func:`us_to_iso`
log and replay      :func:`replay`, :func:`check_store` (``tgms check``), :func:`committed_batches`,
                    :data:`LOG_NAME`, :class:`StoreWarning`
call an operator    :func:`call` (envelope dict), :func:`run_call` (with timings), :class:`OpContext`,
                    :func:`parse_args` (an operator's arguments, validated), :func:`get_operator`,
                    :func:`all_operators`, :func:`load_all`, :data:`REGISTRY` of :class:`OperatorSpec`,
                    :data:`OPERATOR_ORDER` (the manual's order)
generated docs      :func:`operator_schemas`, :func:`tool_definitions`, :func:`planner_manual`,
                    :func:`schema_json`, :func:`units_legend` (the units' naming conventions),
                    :class:`Unit` and :data:`ARG_UNITS` (what an argument or output measures)
vocabulary          :data:`METRICS`, :data:`MOTIF_NAMES`, :data:`ALLEN_RELATIONS`, :func:`allen_relation`
                    (of two intervals), :data:`DEFAULT_LIMIT`, :data:`ANSWER_KINDS`, :data:`MAX_BUCKETS`
                    (the most buckets of a metric time series)
oracles             :data:`ORACLES`, :class:`OracleStore`, :func:`oracle_page` (the brute-force paths)
cost model          :func:`profile`, :data:`COST_COEFFICIENTS` (the shipped ones; ``TGMS_COST_MODEL`` names
                    a calibrated file over them), :data:`COST_MODEL_PATH` (the shipped JSON file, what
                    ``tgms bench calibrate --write-source`` rewrites in a checkout), :func:`motif_selection`,
                    :func:`motif_exact_estimate` (the motif operators' event selection and exact work terms,
                    timed by the benchmarks)
plans               :func:`build_plan`, :class:`Plan`, :class:`Step`, :class:`Ref` (a bad one:
                    :class:`RefSyntaxError`), :func:`resolve_ref`, :func:`set_at`, :func:`verify_plan`,
                    :class:`VerifierConfig`, :data:`CHECKS`, :func:`execute`, :class:`ExecConfig`,
                    :class:`Trace`, :func:`trace_from_dict`, :class:`ResultStore`, :class:`MemoryResults`
                    (one in memory)
claims              :func:`parse_answer`, :func:`verify_claims`, :class:`VerifyConfig`, :func:`gate`,
                    :class:`GateConfig`, :func:`check_answer`, :func:`require_trace_store`,
                    :func:`mechanical_answer`, :func:`typed_value`,
                    :func:`trace_object` and :func:`answer_object` (an outside trace or answer, checked);
                    the evidence helpers :func:`as_interval`, :func:`uid_of`, :func:`uids_in`,
                    :func:`is_number`, :func:`same_number`
MCP tool layer      :class:`ToolServer` (tool list + thread-safe ``call``), :class:`ToolResult` (the SDK
                    binding is ``pipeline/serve``)
errors              :class:`TGMSError` and the subclasses outside code catches (the whole tree:
                    :mod:`engine.errors`): :class:`SchemaError`, :class:`InvalidArgError`,
                    :class:`NotFoundError`, :class:`LimitError`, :class:`ConflictError`,
                    :class:`CorruptError`, :class:`BackendError`, :class:`UpstreamError`;
                    :func:`error_from_dict` (one back from its JSON shape)
files               :func:`write_atomic` (a file's content replaced all at once or not at all, streamed or
                    checked before the rename), :func:`atomic_dir` (a directory built aside, renamed whole)
canonical form      :func:`canonical_json`, :func:`canonical_json_of_canonical` (of a value already
                    canonical), :func:`canonicalize`, :func:`canon_float`, :func:`digest`, :func:`sha256_hex`,
                    :func:`check_depth` and :data:`MAX_JSON_DEPTH` (the nesting bound of every JSON input)
==================  ========================================================================================
"""

from __future__ import annotations

from tgms.engine.canonical import MAX_JSON_DEPTH, canon_float, canonicalize, check_depth, digest, sha256_hex
from tgms.engine.canonical import dumps as canonical_json
from tgms.engine.canonical import dumps_canonical as canonical_json_of_canonical
from tgms.engine.claims.answer import parse_answer
from tgms.engine.claims.check import check_answer, require_trace_store
from tgms.engine.claims.evidence import as_interval, is_number, same_number, uid_of, uids_in
from tgms.engine.claims.gate import GateConfig, gate
from tgms.engine.claims.reporter import mechanical_answer, typed_value
from tgms.engine.claims.verifier import VerifyConfig, verify_claims
from tgms.engine.errors import (
    BackendError,
    ConflictError,
    CorruptError,
    InvalidArgError,
    LimitError,
    NotFoundError,
    SchemaError,
    StoreWarning,
    TGMSError,
    UpstreamError,
    error_from_dict,
)
from tgms.engine.execute.executor import ExecConfig, Trace, execute, trace_from_dict
from tgms.engine.execute.results import MemoryResults, ResultStore
from tgms.engine.execute.trace_check import answer_object, trace_object
from tgms.engine.fileio import atomic_dir, write_atomic
from tgms.engine.ingest.build import DATASETS, build_store, ingest_data, load_data
from tgms.engine.ingest.snap import source_path, source_sha256
from tgms.engine.mcp import ToolResult, ToolServer
from tgms.engine.operators import cost as _cost
from tgms.engine.operators.base import MAX_BUCKETS, parse_args
from tgms.engine.operators.compute import allen_relation
from tgms.engine.operators.context import OpContext
from tgms.engine.operators.cost import COEFFICIENTS as COST_COEFFICIENTS
from tgms.engine.operators.cost import profile
from tgms.engine.operators.envelope import call, run_call
from tgms.engine.operators.evolution import ALLEN_RELATIONS
from tgms.engine.operators.metrics import METRICS
from tgms.engine.operators.motifs import MOTIF_NAMES
from tgms.engine.operators.motifs import exact_estimate as motif_exact_estimate
from tgms.engine.operators.motifs import selection as motif_selection
from tgms.engine.operators.oracle import ORACLES, OracleStore
from tgms.engine.operators.oracle import page as oracle_page
from tgms.engine.operators.oracle.paging import DEFAULT_LIMIT
from tgms.engine.operators.registry import (
    OPERATOR_ORDER,
    REGISTRY,
    OperatorSpec,
    all_operators,
    get_operator,
    load_all,
)
from tgms.engine.operators.schemas import dumps_json as schema_json
from tgms.engine.operators.schemas import operator_schemas, planner_manual, tool_definitions
from tgms.engine.operators.units import ARG_UNITS, Unit, units_legend
from tgms.engine.plan.model import ANSWER_KINDS, Plan, Step, build_plan
from tgms.engine.plan.refs import Ref, RefSyntaxError, set_at
from tgms.engine.plan.refs import resolve as resolve_ref
from tgms.engine.plan.verifier import CHECKS, VerifierConfig
from tgms.engine.plan.verifier import verify as verify_plan
from tgms.engine.store import ScanFilter, Store, replay
from tgms.engine.store.backends import BACKENDS, backend_class
from tgms.engine.store.batches import committed_batches
from tgms.engine.store.check import check_store
from tgms.engine.store.eventlog import LOG_NAME
from tgms.engine.store.ops import parse_batch
from tgms.engine.timeutil import OPEN_END, us_to_iso

#: the shipped cost model, package data (``tgms bench calibrate --write-source`` rewrites it in a checkout)
COST_MODEL_PATH = _cost.SHIPPED_COST_MODEL

__all__ = [
    "ALLEN_RELATIONS",
    "ANSWER_KINDS",
    "ARG_UNITS",
    "BACKENDS",
    "CHECKS",
    "COST_COEFFICIENTS",
    "COST_MODEL_PATH",
    "DATASETS",
    "DEFAULT_LIMIT",
    "LOG_NAME",
    "MAX_BUCKETS",
    "MAX_JSON_DEPTH",
    "METRICS",
    "MOTIF_NAMES",
    "OPEN_END",
    "OPERATOR_ORDER",
    "ORACLES",
    "REGISTRY",
    "BackendError",
    "ConflictError",
    "CorruptError",
    "ExecConfig",
    "GateConfig",
    "InvalidArgError",
    "LimitError",
    "MemoryResults",
    "NotFoundError",
    "OpContext",
    "OperatorSpec",
    "OracleStore",
    "Plan",
    "Ref",
    "RefSyntaxError",
    "ResultStore",
    "ScanFilter",
    "SchemaError",
    "Step",
    "Store",
    "StoreWarning",
    "TGMSError",
    "ToolResult",
    "ToolServer",
    "Trace",
    "Unit",
    "UpstreamError",
    "VerifierConfig",
    "VerifyConfig",
    "all_operators",
    "allen_relation",
    "answer_object",
    "as_interval",
    "atomic_dir",
    "backend_class",
    "build_plan",
    "build_store",
    "call",
    "canon_float",
    "canonical_json",
    "canonical_json_of_canonical",
    "canonicalize",
    "check_answer",
    "check_depth",
    "check_store",
    "committed_batches",
    "digest",
    "error_from_dict",
    "execute",
    "gate",
    "get_operator",
    "ingest_data",
    "is_number",
    "load_all",
    "load_data",
    "mechanical_answer",
    "motif_exact_estimate",
    "motif_selection",
    "operator_schemas",
    "oracle_page",
    "parse_answer",
    "parse_args",
    "parse_batch",
    "planner_manual",
    "profile",
    "replay",
    "require_trace_store",
    "resolve_ref",
    "run_call",
    "same_number",
    "schema_json",
    "set_at",
    "sha256_hex",
    "source_path",
    "source_sha256",
    "tool_definitions",
    "trace_from_dict",
    "trace_object",
    "typed_value",
    "uid_of",
    "uids_in",
    "units_legend",
    "us_to_iso",
    "verify_claims",
    "verify_plan",
    "write_atomic",
]
