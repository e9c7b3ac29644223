"""A bundle of the analyst questions (``tgms bench planner --questions N``, issue 25 item 6).

The analyst question set (``tests/analyst/questions.yaml``, docs/analyst_questions.md) is questions people
ask, each with an oracle answer by plain DuckDB SQL over the raw file. This module turns a stratified
sample of them into a campaign bundle, so the systems are measured on them exactly as on a suite:

- **questions**: those of the suite's data set that run on the plain store (belief-history questions
  need the corrected one) and whose answer has a typed kind: ``int``/``float``/``value`` → ``value``
  (exact to 1e-9; a count told as a value is still scored exactly), ``uid`` → ``entity``, ``uid_list`` →
  ``entity_set``. Ordered lists and tables have no typed answer kind and are left out. The sample takes
  the classes in turn (ids in order inside a class), so N questions span every class the set has.
- **gold**: the question's SQL result, computed when the bundle is built. The question's own plan is
  **never** put in the bundle (a task's ``oracle_plan`` is null): nothing a system sees can come from it.
- **input uids**: the entities the question names as such ("user 9", "account 35", "users 9 and 569"),
  as SNAP uids (:func:`named_uids`). Not every integer: the harness grounds its own plans on every number
  of the question, but a planner shown "n20, n2004, n26" as the input uids of "How many messages were sent
  during the week of 20 to 26 April 2004?" wrote them into its plans (the 1.5B model, 2026-12-05).
- **store**: the data set loaded on the canonical clock, as the analyst harness builds it; its event log
  is the bundle's, so the actors replay it and prove its digest like any bundle.
- **splits**: the questions are the ``test`` split (held out: never tuned on); ``train`` is the generated
  suite's train split (template draws, worked plans for retrieval), never an analyst question.

The questions and their SQL machinery live with the tests (``tests/analyst/harness.py``), so this runs
from a checkout; elsewhere it says so.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from tgms.engine.api import InvalidArgError
from tgms.pipeline.campaign.bundle import (
    BUNDLE_FORMAT,
    BUNDLE_VERSION,
    EVENTLOG,
    LOG_NAME,
    MANIFEST,
    SUITE,
    BundleOptions,
    BundleSource,
    Manifest,
    file_sha256,
    read_manifest,
)
from tgms.pipeline.scoring.suite import SUITE_FORMAT, AnswerKind, Splits, Suite, Task, split_sha256

#: the analyst answer kinds with a typed counterpart (pipeline.scoring), and that counterpart
KIND_MAP: dict[str, AnswerKind] = {
    "int": "value",
    "float": "value",
    "value": "value",
    "uid": "entity",
    "uid_list": "entity_set",
}
#: suite names of conf/suite/ → the analyst set's data set names
DATASETS = {"collegemsg": "collegemsg", "bitcoin_otc": "bitcoin-otc"}
GENERATOR = "analyst-1"


def _harness() -> Any:
    # an editable install runs from the checkout, but only the packages are importable from another
    # directory: put the checkout's root on the path when it holds the questions
    root = Path(__file__).resolve().parents[2]
    if (root / "tests" / "analyst" / "harness.py").is_file() and str(root) not in sys.path:
        sys.path.append(str(root))
    try:
        from tests.analyst import harness
    except ImportError as err:  # an installed package has no tests/
        raise InvalidArgError(
            "--questions reads tests/analyst/questions.yaml: run it from a checkout of the repository",
            missing="tests.analyst",
        ) from err
    return harness


#: "user 9", "account 35's", "users 9 and 569", "nodes 3, 4 or 5": the entity noun, then its numbers
_NAMED = re.compile(r"\b(?:users?|accounts?|nodes?)\s+(\d+(?:\s*(?:,|and|or)\s*\d+)*)", re.I)


def named_uids(question: str) -> frozenset[str]:
    """The uids a question names as entities (SNAP uids: ``user 9`` -> ``n9``); see the module docstring."""
    return frozenset(f"n{d}" for m in _NAMED.finditer(question) for d in re.findall(r"\d+", m.group(1)))


def eligible(questions: list[dict[str, Any]], dataset: str) -> list[dict[str, Any]]:
    return [
        q
        for q in questions
        if q["dataset"] == dataset and q.get("store") != "corrected" and q["answer_kind"] in KIND_MAP
    ]


def stratified(questions: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` questions, the classes taking turns (classes and ids in sorted order)."""
    by_class: dict[str, list[dict[str, Any]]] = {}
    for q in sorted(questions, key=lambda q: q["id"]):
        by_class.setdefault(q["class"], []).append(q)
    picked: list[dict[str, Any]] = []
    depth = 0
    while len(picked) < n and any(len(v) > depth for v in by_class.values()):
        for cls in sorted(by_class):
            if len(picked) < n and len(by_class[cls]) > depth:
                picked.append(by_class[cls][depth])
        depth += 1
    return sorted(picked, key=lambda q: q["id"])


def _task(q: dict[str, Any], gold: Any, uids: frozenset[str]) -> Task:
    return Task(
        id=f"analyst/{q['id']}",
        template=f"analyst.{q['class']}",
        family=q["class"],
        paraphrase=0,
        question=q["question"],
        input_uids=tuple(sorted(uids)),
        oracle_plan=None,  # the question's plan never leaves tests/analyst
        answer_kind=KIND_MAP[q["answer_kind"]],
        gold=gold,
        gold_answer_object=None,
    )


def build_analyst_bundle(
    suite_name: str, n: int, out: Path, train: list[Task], progress: Any
) -> tuple[Path, Manifest]:
    """The bundle of ``n`` analyst questions of ``suite_name``'s data set at ``out`` (built once: an
    existing one is returned as it is; the campaign verifies it)."""
    if (out / MANIFEST).exists():
        return out, read_manifest(out)
    dataset = DATASETS.get(suite_name)
    if dataset is None:
        raise InvalidArgError(f"no analyst questions for suite {suite_name!r}", allowed=sorted(DATASETS))
    harness = _harness()
    spec = harness.load_questions()
    pool = eligible(spec["questions"], dataset)
    if n < 1 or n > len(pool):
        raise InvalidArgError(
            f"--questions must be 1..{len(pool)} for {dataset}", value=n, available=len(pool)
        )
    chosen = stratified(pool, n)
    import duckdb

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".analyst-", dir=out) as scratch:
        root = Path(scratch)
        progress(f"building the analyst {dataset} store and the SQL answers of {n} questions ...")
        store = harness.build(dataset, root, spec, False, "duckdb")
        try:
            digest = store.digest()
        finally:
            store.close()
        log = root / "store" / LOG_NAME  # harness.build puts the store at root/store
        con = duckdb.connect()
        try:
            tasks = [
                _task(q, harness.sql_answer(con, q, spec, None), named_uids(q["question"])) for q in chosen
            ]
        finally:
            con.close()
        suite = Suite(
            format=SUITE_FORMAT,
            generator_version=GENERATOR,
            dataset=dataset,
            seed=0,
            store_digest=digest,
            templates={},
            operators_used=(),
            splits=Splits(dev=(), test=tuple(tasks), train=tuple(train)),
            test_sha256=split_sha256(tasks),
            refused=(),
            dropped={},
        )
        (root / SUITE).write_text(suite.to_json(), encoding="utf-8")
        manifest = Manifest(
            format=BUNDLE_FORMAT,
            version=BUNDLE_VERSION,
            dataset=dataset,
            source=BundleSource(
                name=f"SNAP {dataset} (analyst questions)", questions=[q["id"] for q in chosen]
            ),
            seed=0,
            options=BundleOptions(analyst_questions=n),
            clock="canonical",
            store_digest=digest,
            suite_sha256=file_sha256(root / SUITE),
            test_sha256=suite.test_sha256,
            eventlog_sha256=file_sha256(log),
            generator_version=GENERATOR,
            bundle_version=BUNDLE_VERSION,
            planted=None,
        )
        shutil.move(str(log), out / EVENTLOG)
        shutil.move(str(root / SUITE), out / SUITE)
        (out / MANIFEST).write_text(manifest.to_json() + "\n", encoding="utf-8")
    progress(f"analyst bundle {out}: {n} questions, digest {digest}")
    return out, manifest
