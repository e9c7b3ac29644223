"""The typed task suite: :class:`Task`, :class:`Splits`, :class:`TemplateInfo` and :class:`Suite`.

It lives in ``scoring``, the lowest pipeline layer that every user of a task may import: the generator
(``tasks``), the systems (``systems``, the sibling of ``tasks``, which may not import it), the campaign and
the benchmarks all take these types (import-linter's ``pipeline-layers`` contract).

A suite file (``suite.json``) is validated into a :class:`Suite` when it is read, so a missing or misspelt key
fails there, naming the field, not deep inside a system or in scoring. Every model is frozen (a task is shared
by threads and Ray actors) and forbids unknown keys.

The byte form is the one the generator has always written: :meth:`Suite.to_json` dumps only the fields that
were set (a task without a probe pair has no ``probe_pair`` key, a template of version 1 no ``version``) and
:func:`~engine.api.canonical_json` sorts the keys, so a suite read and written again keeps its bytes and its
SHA-256 (tested).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from tgms.engine.api import CorruptError, NotFoundError, SchemaError, canonical_json, sha256_hex
from tgms.pipeline.boundary import validation_problems

#: the engine's answer kinds (``engine.api.ANSWER_KINDS``; a test checks the two agree: a Literal must be
#: spelt out for the type checker)
AnswerKind = Literal["count", "value", "boolean", "entity", "entity_set", "interval", "relation", "rows"]
SUITE_FORMAT = "tgms-suite"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Task(_Frozen):
    """One question with its gold: what a system is asked and what it is scored against.

    A generated task sets every field up to ``gold_answer_object``; ``probe_pair``/``probe_half`` mark a
    correction probe's halves, ``refused`` the error of a draw whose oracle plan the engine refused (those
    are kept in :attr:`Suite.refused`, never run). A user's question (``tgms ask``) sets only ``id``,
    ``question``, ``input_uids`` and ``answer_kind``: it has no gold and is not scored (:attr:`scored`)."""

    id: str
    template: str | None = None
    family: str | None = None
    paraphrase: int | None = None
    question: str
    input_uids: tuple[str, ...]
    oracle_plan: dict[str, Any] | None = None  # a plan document (engine.api.build_plan validates it)
    answer_kind: AnswerKind | None
    gold: Any = None  # the answer kind's JSON value
    gold_answer_object: dict[str, Any] | None = None
    probe_pair: str | None = None
    probe_half: Literal["before", "current"] | None = None
    refused: dict[str, Any] | None = None  # the structured error (E_COST / E_LIMIT)

    @property
    def scored(self) -> bool:
        """Whether the task carries a gold to score against (a generated task's gold may be any JSON value,
        so it is the field's presence that counts, not its value)."""
        return "gold" in self.model_fields_set

    def to_dict(self) -> dict[str, Any]:
        """The task as the suite file holds it (only the fields that were set)."""
        return self.model_dump(exclude_unset=True)


class Splits(_Frozen):
    """A suite's three splits, each ordered by task id: ``dev`` (20 % per family) and ``test`` are scored;
    ``train`` holds the worked plans a planner may retrieve (absent from suites made before it existed)."""

    dev: tuple[Task, ...]
    test: tuple[Task, ...]
    train: tuple[Task, ...] = ()


class TemplateInfo(_Frozen):
    """What a suite records of each template it drew from. ``version`` is written only once a template
    bumps it past 1, so suites of unchanged templates keep their bytes."""

    family: str
    kind: AnswerKind
    paraphrases: tuple[str, str, str]
    ops: tuple[str, ...]
    version: int = 1


class Suite(_Frozen):
    """A generated task suite (``suite.json``)."""

    format: Literal["tgms-suite"]
    generator_version: str
    dataset: str
    seed: int
    store_digest: str
    templates: dict[str, TemplateInfo]
    operators_used: tuple[str, ...]
    splits: Splits
    test_sha256: str
    refused: tuple[Task, ...]
    dropped: dict[str, dict[str, int]]

    def to_dict(self) -> dict[str, Any]:
        """The suite as a JSON object, only the fields that were set (the file's form)."""
        return self.model_dump(exclude_unset=True)

    def to_json(self) -> str:
        """The file's text: canonical JSON plus a newline."""
        return canonical_json(self.to_dict()) + "\n"


def split_sha256(tasks: tuple[Task, ...] | list[Task]) -> str:
    """The SHA-256 of the canonical JSON of a split (``test_sha256`` is the test split's)."""
    return sha256_hex(canonical_json([t.to_dict() for t in tasks]))


def parse_suite(data: Any, source: str) -> Suite:
    """``data`` (a decoded ``suite.json``) as a :class:`Suite`; ``E_SCHEMA`` naming every field that is
    missing, unknown or ill-typed (at most 20), ``source`` saying where the suite came from."""
    try:
        return Suite.model_validate(data)
    except ValidationError as err:
        problems = validation_problems(err, root="$")
        raise SchemaError(
            f"{source} is not a task suite: {problems[0]}", path=source, problems=problems[:20]
        ) from None


def read_suite(path: str | Path) -> Suite:
    """The suite file ``path``, validated; ``E_NOT_FOUND`` without it, ``E_CORRUPT`` when it is not JSON,
    ``E_SCHEMA`` when it is not a suite."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise NotFoundError(f"no suite file {path}", path=str(path)) from exc
    try:
        data = json.loads(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CorruptError(f"{path} is not valid JSON: {exc}", path=str(path)) from exc
    return parse_suite(data, str(path))
