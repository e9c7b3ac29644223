"""The tool layer of the MCP server, with no SDK in it: the tool list and ``call(name, arguments)``.

:class:`ToolServer` serves one store directory. :meth:`ToolServer.tools` is the tool list
(:func:`engine.mcp.definitions.tool_list`); :meth:`ToolServer.call` runs one tool and returns a
:class:`ToolResult` whose ``value`` is JSON: an operator's result envelope, a plan tool's result, or — for
*every* failure, whatever raised it — the one structured error ``{"error", "message", "details"}``. A
transport binding (``pipeline/serve``) only converts between its protocol and these two methods.

``call`` is thread-safe and blocking: a binding runs it on worker threads, each call on a store session
of its own (:class:`engine.mcp.pool.StorePool`), so a slow call does not hold up the others. The cost
guard applies to every operator call and to every plan step (``budget_s``, default the engine's).

Limits come before work (:func:`check_limits`): a call's arguments larger than :data:`MAX_ARGUMENT_BYTES`
of JSON, or a plan with more steps than the plan IR allows, is refused with ``E_LIMIT`` before anything is
parsed, verified or run (a 20,000-step ``run_plan`` used to cost 14–18 s of CPU and a 10.6 MB reply of
violations before the 12-step limit refused it).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tgms.engine.canonical import check_depth
from tgms.engine.claims.answer import parse_answer
from tgms.engine.claims.check import check_answer, require_trace_store
from tgms.engine.claims.reporter import mechanical_answer
from tgms.engine.errors import (
    ConflictError,
    InvalidArgError,
    LimitError,
    NotFoundError,
    TGMSError,
    error_from_dict,
)
from tgms.engine.execute.executor import ExecConfig, execute, trace_from_dict
from tgms.engine.execute.results import MemoryResults, ResultStore
from tgms.engine.execute.trace_check import answer_object, trace_object
from tgms.engine.mcp.definitions import (
    EXTRA_TOOL_NAMES,
    RUN_PLAN,
    VERIFY_ANSWER,
    VERIFY_PLAN,
    WRITE_BATCH,
    RunPlanArgs,
    VerifyAnswerArgs,
    VerifyPlanArgs,
    WriteBatchArgs,
    tool_list,
)
from tgms.engine.mcp.pool import Session, StorePool
from tgms.engine.operators.base import parse_args
from tgms.engine.operators.envelope import call as call_operator
from tgms.engine.operators.registry import REGISTRY, load_all
from tgms.engine.plan.model import MAX_STEPS, build_plan
from tgms.engine.plan.verifier import Report, VerifierConfig
from tgms.engine.plan.verifier import verify as verify_plan
from tgms.engine.store.ops import parse_batch

log = logging.getLogger("tgms.mcp")


@dataclass(frozen=True)
class ToolResult:
    """What one tool call gives back.

    ``value`` is the whole JSON result (or the structured error when ``is_error``); ``structured`` is the
    part an MCP client validates against the tool's ``outputSchema``: an operator's ``payload``, else the
    value itself."""

    value: dict[str, Any]
    is_error: bool = False
    structured: dict[str, Any] | None = None

    @property
    def structured_content(self) -> dict[str, Any]:
        return self.value if self.structured is None else self.structured

    def text(self) -> str:
        return json.dumps(self.value, sort_keys=True, ensure_ascii=False)


def _internal(exc: BaseException) -> dict[str, Any]:
    """An exception that is not one of ours: a defect, reported in the one shape (traceback to the log)."""
    if isinstance(exc, RecursionError):
        return LimitError("input is nested too deeply to process").to_dict()
    if isinstance(exc, MemoryError):
        return LimitError("the request is too large to process in memory").to_dict()
    log.exception("tool call failed with an internal error")
    return {
        "error": "E_INTERNAL",
        "message": f"internal error: {type(exc).__name__}: {exc}",
        "details": {"type": type(exc).__name__},
    }


#: the largest arguments object a tool call takes, as compact JSON (a write batch of ~10,000 ops fits)
MAX_ARGUMENT_BYTES = 4 * 1024 * 1024


def check_limits(name: str, arguments: Any) -> None:
    """``E_LIMIT`` for arguments too large to take, or a plan with too many steps, before any work."""
    size = len(json.dumps(arguments, separators=(",", ":"), default=str).encode())
    if size > MAX_ARGUMENT_BYTES:
        raise LimitError(
            f"{name}: the arguments are {size} bytes of JSON; the limit is {MAX_ARGUMENT_BYTES}",
            field="arguments",
            size=size,
            limit=MAX_ARGUMENT_BYTES,
        )
    plan = arguments.get("plan") if isinstance(arguments, dict) else None
    steps = plan.get("steps") if isinstance(plan, dict) else None
    if isinstance(steps, list) and len(steps) > MAX_STEPS:
        raise LimitError(
            f"{name}: the plan has {len(steps)} steps; a plan has at most {MAX_STEPS}",
            field="plan.steps",
            steps=len(steps),
            limit=MAX_STEPS,
        )


class ToolServer:
    """Every operator as a tool, plus the plan, claim and (optionally) write tools, over one store.

    ``results`` keeps what ``run_plan`` computes (by digest), where ``verify_answer`` finds it: the same
    directory ``tgms plan run`` uses lets the CLI verify an MCP trace too (default: kept in memory).
    ``on_write`` receives an audit record of every write tool call (default: the ``tgms.mcp`` logger)."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        allow_writes: bool = False,
        budget_s: float | None = None,
        workers: int = 8,
        results: ResultStore | None = None,
        on_write: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        load_all()
        self.allow_writes = allow_writes
        self.budget_s = budget_s
        self.results = results if results is not None else MemoryResults()
        self.on_write = on_write or (lambda rec: log.info("write %s", json.dumps(rec, sort_keys=True)))
        self._tools = tool_list(allow_writes=allow_writes)
        self._names = frozenset(t["name"] for t in self._tools)
        self.pool = StorePool(root, size=workers)
        self._handlers: dict[str, Callable[[Any], ToolResult]] = {
            VERIFY_PLAN: self._verify_plan,
            RUN_PLAN: self._run_plan,
            VERIFY_ANSWER: self._verify_answer,
            WRITE_BATCH: self._write_batch,
        }

    @property
    def workers(self) -> int:
        """How many calls run at once (one store session each); more wait for a free session."""
        return self.pool.size

    def tools(self) -> list[dict[str, Any]]:
        """The tool definitions ``[{name, description, inputSchema, outputSchema?}]`` (fresh copies)."""
        return json.loads(json.dumps(self._tools))

    def close(self) -> None:
        self.pool.close()

    # -- dispatch -------------------------------------------------------------------------------------
    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one tool; never raises (every failure is a ToolResult with the structured error)."""
        try:
            if arguments is None:
                arguments = {}
            check_depth(arguments, f"{name} arguments")
            check_limits(name, arguments)
            if name in REGISTRY:
                return self._operator(name, arguments)
            if name in self._handlers and name in self._names:
                return self._handlers[name](arguments)
            if name in EXTRA_TOOL_NAMES:  # a write tool on a read-only server
                raise ConflictError(
                    f"{name} is disabled: the server is read-only (start it with --allow-writes)", tool=name
                )
            raise NotFoundError(f"unknown tool {name!r}", tool=name, tools=sorted(self._names))
        except TGMSError as exc:
            return ToolResult(exc.to_dict(), is_error=True)
        except Exception as exc:
            return ToolResult(_internal(exc), is_error=True)

    def _operator(self, name: str, arguments: Any) -> ToolResult:
        with self.pool.reader() as s:
            envelope = call_operator(s.ctx, name, arguments, budget_s=self.budget_s)
        return ToolResult(envelope, structured=envelope["payload"])

    # -- plans and claims -----------------------------------------------------------------------------
    def _verifier_config(self, a: VerifyPlanArgs) -> VerifierConfig:
        kw: dict[str, Any] = {}
        if a.task_uids is not None:
            kw["task_uids"] = frozenset(a.task_uids)
        if self.budget_s is not None:
            kw["budget_s"] = self.budget_s
        return VerifierConfig.without(*a.without, **kw)

    def _verify(self, a: VerifyPlanArgs, s: Session) -> Report:
        return verify_plan(a.plan, s.ctx, self._verifier_config(a))

    def _verify_plan(self, arguments: Any) -> ToolResult:
        a = parse_args(VerifyPlanArgs, arguments, VERIFY_PLAN)
        with self.pool.reader() as s:
            return ToolResult(self._verify(a, s).to_dict())

    def _run_plan(self, arguments: Any) -> ToolResult:
        a = parse_args(RunPlanArgs, arguments, RUN_PLAN)
        with self.pool.reader() as s:
            report = self._verify(a, s)
            if not report.valid and not a.no_verify:
                v = report.violations
                raise InvalidArgError(
                    f"the plan failed static verification ({len(v)} violation(s)); the first: {v[0].message}",
                    field="plan",
                    verification=report.to_dict(),
                )
            plan = build_plan(a.plan)
            config = ExecConfig() if self.budget_s is None else ExecConfig(budget_s=self.budget_s)
            trace = execute(plan, s.ctx, self.results, config, store_digest=self.pool.store_digest(s))
        return ToolResult(
            {
                "status": trace.status,
                "trace_digest": trace.digest,
                "answer": mechanical_answer(trace),
                "verification": report.to_dict(),
                "trace": trace.to_dict(envelopes=a.embed),
            }
        )

    def _verify_answer(self, arguments: Any) -> ToolResult:
        a = parse_args(VerifyAnswerArgs, arguments, VERIFY_ANSWER)
        answer = parse_answer(answer_object(a.answer))
        trace = trace_from_dict(trace_object(a.trace, "trace"), self.results)
        with self.pool.reader() as s:
            if not a.any_store:
                require_trace_store(trace, self.pool.store_digest(s), "any_store")
            checked = check_answer(
                answer, trace, s.ctx, taint=not a.no_taint, gated_types=tuple(a.gated_types)
            )
        return ToolResult(checked)

    # -- writes ---------------------------------------------------------------------------------------
    def _write_batch(self, arguments: Any) -> ToolResult:
        a = parse_args(WriteBatchArgs, arguments, WRITE_BATCH)
        parse_batch(a.ops)  # a malformed batch is refused before the store is taken for writing
        with self.pool.writer() as store:
            r = store.try_write(a.ops)
        record = {"tool": WRITE_BATCH, "seq": r.seq, "tt": r.tt, "status": r.status, "ops": len(a.ops)}
        if r.error is not None:
            record["error"] = r.error.get("error")
        self.on_write(record)
        if r.error is not None:
            err = error_from_dict(r.error)
            err.details.update(seq=r.seq, logged="the batch is recorded in the event log as failed")
            raise err
        return ToolResult({"seq": r.seq, "tt": r.tt, "status": r.status, "stats": dict(r.stats)})
