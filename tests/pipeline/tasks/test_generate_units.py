"""Units of the generator: refused draws kept as records, the degenerate-gold cap, the stratified split,
the template registry's rules, and Table 2."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.suite_fixtures import task
from tgms.engine.execute.executor import ExecConfig
from tgms.engine.ingest.build import build_store
from tgms.engine.operators.context import OpContext
from tgms.engine.store import Store
from tgms.pipeline.scoring.suite import Task
from tgms.pipeline.tasks.generate import DEV_SHARE, generate_suite, min_distinct, split, value_cap
from tgms.pipeline.tasks.model import TEMPLATES, all_templates, template
from tgms.pipeline.tasks.stats import suite_stats, table2_markdown


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpContext]:
    root: Path = tmp_path_factory.mktemp("gen") / "syn"
    build_store("synthetic", root, events=6000, nodes=200, seed=3, corrections=False).close()
    with Store.open(root, read_only=True) as store:
        yield OpContext(store)


def test_refused_draws_are_kept_as_records(ctx: OpContext) -> None:
    # every call over budget: no task gets gold, every draw becomes a refused record with its E_COST
    suite = generate_suite(
        ctx, "synthetic", 0, store_digest="x", ostore=None, config=ExecConfig(budget_s=1e-9)
    )
    assert suite.splits.dev == () and suite.splits.test == ()
    assert suite.refused, "refused draws must be kept"
    for rec in suite.refused:
        assert rec.refused["error"] in ("E_COST", "E_LIMIT")
        assert rec.gold is None and rec.oracle_plan["steps"]
    assert suite_stats(suite)["refused"] == len(suite.refused)
    assert f"refused (E_COST) records: {len(suite.refused)}" in table2_markdown(suite)


def test_a_small_suite_keeps_gold_non_degenerate(ctx: OpContext) -> None:
    suite = generate_suite(ctx, "synthetic", 1, store_digest="x", ostore=None)
    tasks = suite.splits.dev + suite.splits.test
    assert tasks
    per: dict[str, list[str]] = {}
    for t in tasks:
        per.setdefault(t.template, []).append(repr(t.gold))
    kinds = {name: spec.kind for name, spec in suite.templates.items()}
    for name, golds in per.items():
        # a yes/no template has two answers: both must occur, each on at most half of its tasks
        assert len(set(golds)) >= min_distinct(kinds[name]), name
        assert max(golds.count(g) for g in golds) <= value_cap(8, kinds[name]), name
    # the paraphrases rotate
    assert {t.paraphrase for t in tasks} == {0, 1, 2}


def _task(i: int, family: str) -> Task:
    return task(id=f"d/{family}/{i:03d}", family=family)


def test_split_is_stratified_by_family_and_deterministic() -> None:
    tasks = (
        [_task(i, "T1") for i in range(50)]
        + [_task(i, "T3") for i in range(10)]
        + [_task(i, "probe") for i in range(7)]
    )
    dev, test = split(tasks, 0)
    assert len(dev) + len(test) == len(tasks) and not {t.id for t in dev} & {t.id for t in test}
    for fam, n in (("T1", 50), ("T3", 10), ("probe", 7)):
        assert sum(t.family == fam for t in dev) == round(DEV_SHARE * n)
    assert split(tasks, 0) == (dev, test)
    assert split(tasks, 1) != (dev, test)
    assert dev == sorted(dev, key=lambda t: t.id)


def test_templates_have_three_distinct_paraphrases_and_cover_every_operator() -> None:
    from tgms.engine.operators.registry import OPERATOR_ORDER

    ts = all_templates()
    assert len([t for t in ts if t.family != "T2"]) >= 17
    assert {op for t in ts for op in t.ops} == set(OPERATOR_ORDER)
    for t in ts:
        assert len(set(t.paraphrases)) == 3
    with pytest.raises(ValueError, match="three distinct"):
        template("bad", family="T1", kind="count", paraphrases=("a", "a", "b"), ops=())
    with pytest.raises(ValueError, match="family"):
        template("bad", family="T9", kind="count", paraphrases=("a", "b", "c"), ops=())
    assert "bad" not in TEMPLATES


def test_the_train_split_is_disjoint_and_leaves_dev_and_test_as_they_were(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tgms.pipeline.tasks.generate as gen

    suite = generate_suite(ctx, "synthetic", 1, store_digest="x", ostore=None)
    train = suite.splits.train
    held = suite.splits.dev + suite.splits.test
    assert train, "the generator draws worked plans for the planner"
    assert not {t.id for t in train} & {t.id for t in held}
    assert not {t.question for t in train} & {t.question for t in held + suite.refused}
    assert not {gen.canonical_json(t.oracle_plan["steps"]) for t in train} & {
        gen.canonical_json(t.oracle_plan["steps"]) for t in held
    }
    assert all(t.id.rsplit("/", 1)[1].startswith("train-") for t in train)
    assert {t.template for t in train} <= {t.template for t in held}
    per = {t.template: 0 for t in train}
    for t in train:
        per[t.template] += 1
    assert max(per.values()) <= gen.TRAIN_DRAWS
    # drawing train draws changes neither dev nor test (a separate stream, drawn after them)
    monkeypatch.setattr(gen, "TRAIN_DRAWS", 0)
    without = generate_suite(ctx, "synthetic", 1, store_digest="x", ostore=None)
    assert without.splits.train == ()
    assert without.splits.dev == suite.splits.dev
    assert without.test_sha256 == suite.test_sha256
