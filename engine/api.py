"""The engine's public surface: everything a caller outside ``engine/`` may use, in one place.

``models/``, ``pipeline/`` and ``reports/`` import the engine only through this module; an import-linter
contract (``pyproject.toml``, checked by ``tests/test_layering.py``) fails the build when they reach
past it. Inside ``engine/`` modules import each other directly.

The surface, by task:

==================  ========================================================================================
task                names
==================  ========================================================================================
build a store       :func:`build_store` (a dataset load), :func:`load_dataset`, :func:`generate_synthetic`,
                    :data:`DATASETS`
open, write, read   :class:`Store` (``create``/``open``/``write``/``digest``/``stats``), :class:`BatchResult`,
                    :class:`ScanFilter`, :func:`parse_batch`, :data:`BACKENDS`
log and replay      :func:`replay`, :func:`check_store`, :func:`read_log`, :class:`LoggedBatch`,
                    :data:`LOG_NAME`
call an operator    :func:`call` (envelope dict), :func:`run_call` (with timings), :class:`OpContext`,
                    :func:`get_operator`, :func:`all_operators`, :func:`load_all`, :data:`REGISTRY`
generated docs      :func:`operator_schemas`, :func:`tool_definitions`, :func:`planner_manual`,
                    :func:`schema_json`
oracles             :data:`ORACLES`, :class:`OracleStore`, :func:`oracle_page`
plans               :func:`build_plan`, :class:`Plan`, :class:`Step`, :class:`Ref`, :func:`resolve_ref`,
                    :func:`verify_plan`, :class:`VerifierConfig`, :data:`CHECKS`, :func:`execute`,
                    :class:`ExecConfig`, :class:`Trace`, :func:`trace_from_dict`, :class:`ResultStore`
claims              :func:`parse_answer`, :func:`verify_claims`, :class:`VerifyConfig`, :func:`gate`,
                    :class:`GateConfig`, :func:`coverage`, :func:`mechanical_answer`, :func:`typed_value`
errors              :class:`TGMSError` and its subclasses (one tree: see :mod:`engine.errors`)
canonical form      :func:`canonical_json`, :func:`canonicalize`, :func:`digest`, :func:`sha256_hex`
==================  ========================================================================================
"""

from __future__ import annotations

from engine.canonical import canon_float, canonicalize, digest, sha256_hex
from engine.canonical import dumps as canonical_json
from engine.canonical import dumps_canonical as canonical_json_of_canonical
from engine.claims.answer import Answer, Claim, parse_answer
from engine.claims.evidence import as_interval, is_number, same_number, uid_of, uids_in
from engine.claims.gate import GateConfig, coverage, gate
from engine.claims.reporter import mechanical_answer, typed_value
from engine.claims.verifier import Verdict, VerifyConfig, verify_claims
from engine.errors import (
    BackendError,
    ConflictError,
    CorruptError,
    CostError,
    GroundingError,
    InvalidArgError,
    LimitError,
    NotFoundError,
    SchemaError,
    TGMSError,
    UpstreamError,
    error_from_dict,
)
from engine.execute.executor import ExecConfig, Trace, execute, trace_from_dict
from engine.execute.results import MemoryResults, ResultStore
from engine.ingest.snap import load_dataset
from engine.ingest.synthetic import generate as generate_synthetic
from engine.operators.base import parse_args
from engine.operators.compute import LIST_FNS, allen_relation
from engine.operators.context import OpContext
from engine.operators.cost import profile
from engine.operators.envelope import CallResult, call, run_call
from engine.operators.oracle import ORACLES, OracleStore
from engine.operators.oracle import page as oracle_page
from engine.operators.registry import (
    OPERATOR_ORDER,
    REGISTRY,
    OperatorSpec,
    all_operators,
    get_operator,
    load_all,
)
from engine.operators.schemas import dumps_json as schema_json
from engine.operators.schemas import operator_schemas, planner_manual, tool_definitions
from engine.plan.model import ANSWER_KINDS, Plan, Step, build_plan
from engine.plan.refs import Ref, RefSyntaxError, set_at
from engine.plan.refs import resolve as resolve_ref
from engine.plan.verifier import CHECKS, Report, VerifierConfig
from engine.plan.verifier import verify as verify_plan
from engine.store import BatchResult, ScanFilter, Store, replay
from engine.store.backends import BACKENDS
from engine.store.eventlog import LOG_NAME, LoggedBatch, read_log
from engine.store.ops import parse_batch
from engine.timeutil import OPEN_END, us_to_iso

__all__ = [
    "ANSWER_KINDS",
    "BACKENDS",
    "CHECKS",
    "LIST_FNS",
    "LOG_NAME",
    "OPEN_END",
    "OPERATOR_ORDER",
    "ORACLES",
    "REGISTRY",
    "Answer",
    "BackendError",
    "BatchResult",
    "CallResult",
    "Claim",
    "ConflictError",
    "CorruptError",
    "CostError",
    "ExecConfig",
    "GateConfig",
    "GroundingError",
    "InvalidArgError",
    "LimitError",
    "LoggedBatch",
    "MemoryResults",
    "NotFoundError",
    "OpContext",
    "OperatorSpec",
    "OracleStore",
    "Plan",
    "Ref",
    "RefSyntaxError",
    "Report",
    "ResultStore",
    "ScanFilter",
    "SchemaError",
    "Step",
    "Store",
    "TGMSError",
    "Trace",
    "UpstreamError",
    "Verdict",
    "VerifierConfig",
    "VerifyConfig",
    "all_operators",
    "allen_relation",
    "as_interval",
    "build_plan",
    "call",
    "canon_float",
    "canonical_json",
    "canonical_json_of_canonical",
    "canonicalize",
    "coverage",
    "digest",
    "error_from_dict",
    "execute",
    "gate",
    "generate_synthetic",
    "get_operator",
    "is_number",
    "load_all",
    "load_dataset",
    "mechanical_answer",
    "operator_schemas",
    "oracle_page",
    "parse_answer",
    "parse_args",
    "parse_batch",
    "planner_manual",
    "profile",
    "read_log",
    "replay",
    "resolve_ref",
    "run_call",
    "same_number",
    "schema_json",
    "set_at",
    "sha256_hex",
    "tool_definitions",
    "trace_from_dict",
    "typed_value",
    "uid_of",
    "uids_in",
    "us_to_iso",
    "verify_claims",
    "verify_plan",
]
