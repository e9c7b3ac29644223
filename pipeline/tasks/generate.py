"""Generating a suite: draw every template on a store, compute and cross-check gold, filter degenerate
draws, split 20/80 by family, draw a disjoint ``train`` split, write one canonical JSON file.

The ``train`` split (DESIGN §4, issue 25) holds the worked plans a planner may retrieve: per template up to
:data:`TRAIN_DRAWS` draws from a second seeded stream, taken after dev and test are fixed (so adding it
changes neither, nor ``test_sha256``), and refused when they share a draw, a task id or a question text
with any dev or test task. Its oracle plans are run like the others (a train plan that fails or is
refused is no example). Correction probes have no train draws.

Per template, drafts are drawn (seeded) until :data:`DRAWS` tasks are accepted or :data:`ATTEMPTS` drafts
were tried. A draft whose gold value already occurs :func:`value_cap` times in the template is dropped as
degenerate (so no gold covers more than a third of a template's tasks); a yes/no template keeps as many
of one answer as of the other (at most half the draws each); a template left with fewer than three
distinct gold values (a yes/no one: without both) is dropped whole (logged). Refused (``E_COST``) draws
are kept as records.

The file is canonical JSON (sorted keys, no spaces) plus a newline: the same event log and seed give the
same bytes. ``test_sha256`` is the SHA-256 of the canonical JSON of the test split.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tgms.engine.api import ExecConfig, OpContext, OracleStore, canonical_json
from tgms.pipeline.scoring.suite import SUITE_FORMAT, Splits, Suite, Task, TemplateInfo, split_sha256
from tgms.pipeline.scoring.typed import score
from tgms.pipeline.tasks.crosscheck import GoldCheck
from tgms.pipeline.tasks.gold import compute_gold, plan_json
from tgms.pipeline.tasks.model import Draft, Template, all_templates
from tgms.pipeline.tasks.sampler import Sampler

GENERATOR_VERSION = "2"  # 2: the train split
DRAWS = 8
TRAIN_DRAWS = 3
TRAIN_STREAM = 1  # the train draws' generator stream (dev/test draw from stream 0)
ATTEMPTS = 40
DEV_SHARE = 0.2
MIN_DISTINCT = 3


def value_cap(draws: int, kind: str = "") -> int:
    # a yes/no question has only two answers: half of the draws each is as spread as it gets
    return max(1, draws // 2) if kind == "boolean" else max(1, draws // 3)


def min_distinct(kind: str) -> int:
    return 2 if kind == "boolean" else MIN_DISTINCT


@dataclass
class TemplateRun:
    tasks: list[Task] = field(default_factory=list)
    refused: list[Task] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)
    keys: set[tuple[Any, ...]] = field(default_factory=set)  # every draw seen (train must avoid them)


def _question(tmpl: Template, k: int, draft: Draft) -> tuple[int, str]:
    para = k % 3
    return para, tmpl.paraphrases[para].format(**draft.params)


def task_record(
    task_id: str,
    tmpl: Template,
    para: int,
    question: str,
    draft: Draft,
    plan: dict[str, Any],
    gold: Any,
    answer: dict[str, Any] | None,
    *,
    refused: dict[str, Any] | None = None,
    probe_pair: str | None = None,
) -> Task:
    """The task of one draw. Optional fields are passed only when they apply: the suite file holds only the
    fields that were set (:meth:`Task.to_dict`), as it always has. ``probe_pair`` names a probe's pair (its
    halves share it); ``refused`` is the engine's error for a draw kept as refused."""
    extra: dict[str, Any] = {}
    if draft.probe_pair is not None:
        extra["probe_pair"] = draft.probe_pair
        extra["probe_half"] = draft.probe_half
    if probe_pair is not None:
        extra["probe_pair"] = probe_pair
    if refused is not None:
        extra["refused"] = refused
    return Task(
        id=task_id,
        template=tmpl.name,
        family=tmpl.family,
        paraphrase=para,
        question=question,
        input_uids=tuple(sorted(draft.input_uids)),
        oracle_plan=plan,
        answer_kind=tmpl.kind,  # validated against AnswerKind here
        gold=gold,
        gold_answer_object=answer,
        **extra,
    )


def run_template(
    ctx: OpContext,
    ostore: OracleStore | None,
    tmpl: Template,
    sampler: Sampler,
    dataset: str,
    progress: Callable[[str], None] | None = None,
    config: ExecConfig | None = None,
    check: GoldCheck | None = None,
) -> TemplateRun:
    out = TemplateRun()
    seen: set[tuple[Any, ...]] = set()
    values: Counter[str] = Counter()
    cap = value_cap(DRAWS, tmpl.kind)
    for _ in range(ATTEMPTS):
        if len(out.tasks) >= DRAWS:
            break
        draft = tmpl.draw(sampler)
        if draft is None:
            out.dropped["no draw"] += 1
            continue
        if draft.key in seen:
            out.dropped["duplicate draw"] += 1
            continue
        seen.add(draft.key)
        out.keys.add(draft.key)
        k = len(out.tasks) + len(out.refused)
        task_id = f"{dataset}/{tmpl.name}/{k:02d}"
        para, question = _question(tmpl, k, draft)
        plan = plan_json(task_id, question, tmpl, draft)
        g = compute_gold(ctx, ostore, tmpl, draft, plan, config, check)
        if g.status == "refused":
            out.refused.append(
                task_record(task_id, tmpl, para, question, draft, plan, None, None, refused=g.error)
            )
            continue
        if g.status == "dropped":
            out.dropped[g.reason] += 1
            continue
        v = canonical_json(g.gold)
        if values[v] >= cap:
            out.dropped["degenerate: repeated gold"] += 1
            continue
        values[v] += 1
        out.tasks.append(task_record(task_id, tmpl, para, question, draft, plan, g.gold, g.answer_object))
    if tmpl.kind == "boolean":
        out.tasks = _balanced(out.tasks, out.dropped)
        values = Counter(canonical_json(t.gold) for t in out.tasks)
    if len(values) < min_distinct(tmpl.kind) and out.tasks:
        out.dropped[f"template dropped: {len(values)} distinct gold values"] += len(out.tasks)
        out.tasks = []
    if progress:
        progress(
            f"  {tmpl.name:24s} {len(out.tasks)} tasks, {len(out.refused)} refused, "
            f"{sum(out.dropped.values())} dropped"
        )
    return out


def _balanced(tasks: list[Task], dropped: Counter[str]) -> list[Task]:
    """A yes/no template's tasks with as many of one answer as of the other (the first drawn of each), so
    answering always "yes" (or "no") scores one half, not more."""
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(canonical_json(t.gold), []).append(t)
    n = min(len(v) for v in by.values()) if len(by) > 1 else 0
    keep = {t.id for v in by.values() for t in v[:n]}
    if len(keep) < len(tasks):
        dropped["degenerate: yes/no answers unbalanced"] += len(tasks) - len(keep)
    return [t for t in tasks if t.id in keep]


def run_train(
    ctx: OpContext,
    tmpl: Template,
    sampler: Sampler,
    dataset: str,
    avoid_keys: set[tuple[Any, ...]],
    avoid_questions: set[str],
    config: ExecConfig | None = None,
) -> list[Task]:
    """Up to :data:`TRAIN_DRAWS` train tasks of ``tmpl``: draws none of whose key or question text is one
    of dev/test's, whose oracle plan runs to an answer. Ids are ``<dataset>/<template>/train-NN``, so no id
    is shared either. Gold is computed by the oracle plan alone (no cross-check: it is never scored)."""
    out: list[Task] = []
    seen = set(avoid_keys)
    for _ in range(ATTEMPTS):
        if len(out) >= TRAIN_DRAWS:
            break
        draft = tmpl.draw(sampler)
        if draft is None or draft.key in seen:
            continue
        seen.add(draft.key)
        k = len(out)
        task_id = f"{dataset}/{tmpl.name}/train-{k:02d}"
        para, question = _question(tmpl, k, draft)
        if question in avoid_questions:
            continue
        plan = plan_json(task_id, question, tmpl, draft)
        g = compute_gold(ctx, None, tmpl, draft, plan, config)
        if g.status != "ok":
            continue
        out.append(task_record(task_id, tmpl, para, question, draft, plan, g.gold, g.answer_object))
    return out


def _rank(seed: int, task_id: str) -> str:
    return hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest()


def split(tasks: list[Task], seed: int) -> tuple[list[Task], list[Task]]:
    """20/80 dev/test, stratified by family: in each family the ``round(0.2 n)`` tasks of least seeded hash
    go to dev. Both splits are ordered by task id."""
    dev: list[Task] = []
    test: list[Task] = []
    for fam in sorted({t.family or "" for t in tasks}):
        members = sorted((t for t in tasks if (t.family or "") == fam), key=lambda t: _rank(seed, t.id))
        n_dev = round(DEV_SHARE * len(members))
        dev += members[:n_dev]
        test += members[n_dev:]
    return sorted(dev, key=lambda t: t.id), sorted(test, key=lambda t: t.id)


def run_probes(
    ctx: OpContext,
    ostore: OracleStore | None,
    probes: list[tuple[Template, Draft, Draft]],
    dataset: str,
    check: GoldCheck | None = None,
) -> TemplateRun:
    """Before/current pairs: both halves must get gold, and the two golds must differ."""
    out = TemplateRun()
    counts: Counter[str] = Counter()
    for tmpl, before, current in probes:
        k = counts[tmpl.name]
        counts[tmpl.name] += 1
        pair = f"{dataset}/{tmpl.name}/{k:02d}"
        halves = []
        for draft in (before, current):
            task_id = f"{pair}-{draft.probe_half}"
            para, question = _question(tmpl, k, draft)
            plan = plan_json(task_id, question, tmpl, draft)
            g = compute_gold(ctx, ostore, tmpl, draft, plan, check=check)
            halves.append((task_id, para, question, draft, plan, g))
        bad = [g for *_, g in halves if g.status != "ok"]
        if bad:
            out.dropped[f"probe half: {bad[0].reason}"] += 1
            continue
        if score(tmpl.kind, halves[0][5].gold, halves[1][5].gold):
            out.dropped["probe: the two answers are the same"] += 1
            continue
        for task_id, para, question, draft, plan, g in halves:
            out.tasks.append(
                task_record(
                    task_id, tmpl, para, question, draft, plan, g.gold, g.answer_object, probe_pair=pair
                )
            )
    return out


def generate_suite(
    ctx: OpContext,
    dataset: str,
    seed: int,
    *,
    store_digest: str,
    ostore: OracleStore | None,
    manifest: dict[str, Any] | None = None,
    probes: list[tuple[Template, Draft, Draft]] | None = None,
    progress: Callable[[str], None] | None = None,
    config: ExecConfig | None = None,
    workers: int = 1,
) -> Suite:
    """The suite; ``probes`` are the correction probes' (template, before, current);
    ``config`` is the executor's (budgets) for every oracle plan.

    With ``workers`` > 1 the oracle cross-checks (nine tenths of the time) run in that many processes while
    generation goes on, each check taken as agreeing until its process answers; if any disagrees, the suite
    is generated again with every check in line. Either way the file is the one the serial path makes."""
    args = (ctx, dataset, seed, store_digest, ostore, manifest, probes, progress, config)
    if ostore is None or workers <= 1:
        return _generate(*args, None)
    from tgms.pipeline.tasks.checks import SpeculativeCheck

    with SpeculativeCheck(ostore, workers) as check:
        suite = _generate(*args, check)
        disagreed = check.disagreements()
    if not disagreed:
        return suite
    if progress:
        progress(f"  {len(disagreed)} cross-check(s) disagreed (first {disagreed[0]}): generating in order")
    return _generate(*args, None)


def _generate(
    ctx: OpContext,
    dataset: str,
    seed: int,
    store_digest: str,
    ostore: OracleStore | None,
    manifest: dict[str, Any] | None,
    probes: list[tuple[Template, Draft, Draft]] | None,
    progress: Callable[[str], None] | None,
    config: ExecConfig | None,
    check: GoldCheck | None,
) -> Suite:
    tasks: list[Task] = []
    refused: list[Task] = []
    dropped: dict[str, dict[str, int]] = {}
    templates = [t for t in all_templates() if t.applies(dataset)]
    keys: dict[str, set[tuple[Any, ...]]] = {}
    for i, tmpl in enumerate(templates):
        rng = np.random.default_rng([seed, i, _name_hash(tmpl.name)])
        sampler = Sampler(ctx, dataset, rng, manifest)
        run = run_template(ctx, ostore, tmpl, sampler, dataset, progress, config, check)
        tasks += run.tasks
        refused += run.refused
        keys[tmpl.name] = run.keys
        if run.dropped:
            dropped[tmpl.name] = dict(sorted(run.dropped.items()))
    if probes:
        run = run_probes(ctx, ostore, probes, dataset, check)
        tasks += run.tasks
        if run.dropped:
            dropped["probes"] = dict(sorted(run.dropped.items()))
        if progress:
            progress(f"  {'probes':24s} {len(run.tasks) // 2} pairs, {sum(run.dropped.values())} dropped")
    dev, test = split(tasks, seed)
    train = _train_split(ctx, templates, tasks, refused, keys, dataset, seed, manifest, config)
    if progress:
        progress(f"  {'train':24s} {len(train)} worked plans (disjoint from dev and test)")
    used = sorted({s["op"] for t in tasks for s in (t.oracle_plan or {}).get("steps", [])})
    return Suite(
        format=SUITE_FORMAT,
        generator_version=GENERATOR_VERSION,
        dataset=dataset,
        seed=seed,
        store_digest=store_digest,
        templates={t.name: template_info(t) for t in templates},
        operators_used=tuple(used),
        splits=Splits(dev=tuple(dev), test=tuple(test), train=tuple(train)),
        test_sha256=split_sha256(test),
        refused=tuple(refused),
        dropped=dropped,
    )


def template_info(tmpl: Template) -> TemplateInfo:
    """The suite's record of ``tmpl``. Its version is set only past 1: a version-1 template is written as it
    was before templates had versions, so the suite's bytes and SHA-256 do not change."""
    extra = {"version": tmpl.version} if tmpl.version != 1 else {}
    return TemplateInfo(
        family=tmpl.family,
        kind=tmpl.kind,  # validated against AnswerKind here
        paraphrases=tmpl.paraphrases,
        ops=tmpl.ops,
        **extra,
    )


def _name_hash(name: str) -> int:
    return int(hashlib.sha256(name.encode()).hexdigest()[:8], 16)


def _train_split(
    ctx: OpContext,
    templates: list[Template],
    tasks: list[Task],
    refused: list[Task],
    keys: dict[str, set[tuple[Any, ...]]],
    dataset: str,
    seed: int,
    manifest: dict[str, Any] | None,
    config: ExecConfig | None,
) -> list[Task]:
    """The train split: for templates that kept dev/test tasks, draws from :data:`TRAIN_STREAM`."""
    kept = {t.template for t in tasks}
    questions = {t.question for t in (*tasks, *refused)}
    train: list[Task] = []
    for i, tmpl in enumerate(templates):
        if tmpl.name not in kept:  # a dropped (degenerate) template teaches nothing
            continue
        rng = np.random.default_rng([seed, i, _name_hash(tmpl.name), TRAIN_STREAM])
        sampler = Sampler(ctx, dataset, rng, manifest)
        train += run_train(ctx, tmpl, sampler, dataset, keys.get(tmpl.name, set()), questions, config)
    return sorted(train, key=lambda t: t.id)


def suite_text(suite: Suite) -> str:
    return suite.to_json()
