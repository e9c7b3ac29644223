"""The analyst-question bundle of ``tgms bench planner --questions N``: a stratified sample with SQL gold,
no plan of the question set anywhere in it, and a manifest the campaign's verification accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.analyst import harness
from tests.suite_fixtures import task
from tgms.engine.api import InvalidArgError
from tgms.pipeline.bench.analyst_bundle import (
    KIND_MAP,
    build_analyst_bundle,
    eligible,
    named_uids,
    stratified,
)
from tgms.pipeline.campaign.bundle import read_suite, verify_bundle


def test_the_sample_takes_the_classes_in_turn() -> None:
    pool = eligible(harness.load_questions()["questions"], "collegemsg")
    assert pool and all(q["answer_kind"] in KIND_MAP and q.get("store") != "corrected" for q in pool)
    classes = sorted({q["class"] for q in pool})
    first = stratified(pool, len(classes))
    assert sorted(q["class"] for q in first) == classes  # one of each before any class gets a second
    assert stratified(pool, 10) == stratified(pool, 10)


def test_a_bundle_of_questions_has_sql_gold_and_no_plan(tmp_path: Path) -> None:
    train = [task(id="collegemsg/T1.x/train-00", question="q?", oracle_plan={"steps": []})]
    out, manifest = build_analyst_bundle("collegemsg", 6, tmp_path / "b", train, lambda _: None)
    assert verify_bundle(out).manifest == manifest
    suite = read_suite(out)
    tasks = suite.splits.test
    assert len(tasks) == 6 and suite.splits.dev == () and list(suite.splits.train) == train
    spec = harness.load_questions()
    by_id = {q["id"]: q for q in spec["questions"]}
    text = (out / "suite.json").read_text()
    for t in tasks:
        q = by_id[t.id.split("/", 1)[1]]
        assert t.oracle_plan is None and t.answer_kind == KIND_MAP[q["answer_kind"]]
        assert t.gold is not None
        if q.get("plan"):  # the question set's plan is nowhere in the bundle
            assert json.dumps(q["plan"]["steps"], sort_keys=True, separators=(",", ":")) not in text
    assert manifest.options.model_dump(exclude_unset=True) == {"analyst_questions": 6}
    # built once: a second call returns the same bundle
    assert build_analyst_bundle("collegemsg", 6, tmp_path / "b", [], lambda _: None)[1] == manifest
    with pytest.raises(InvalidArgError):
        build_analyst_bundle("collegemsg", 10_000, tmp_path / "c", [], lambda _: None)


@pytest.mark.parametrize(
    ("question", "uids"),
    [
        ("How many messages were sent during the week of 20 to 26 April 2004?", set()),
        ("How many users received messages from more than 20 distinct senders in May 2004?", set()),
        ("How many times did user 569 message user 9 within 10 minutes?", {"n569", "n9"}),
        ("What was user 9's longest silence, in seconds?", {"n9"}),
        ("How many accounts were rated by both account 35 and account 2642?", {"n35", "n2642"}),
        ("Did users 9, 12 or 30 write in 2004?", {"n9", "n12", "n30"}),
    ],
)
def test_input_uids_are_the_entities_a_question_names_not_its_other_numbers(question: str, uids: set) -> None:
    assert named_uids(question) == uids
