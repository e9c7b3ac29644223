"""The typed suite (pipeline/scoring/suite.py): a generated suite's file form is what the generator always
wrote (optional keys only where they apply), it reads back to the same bytes on both backends, a bad file
fails naming the field, the models are frozen and survive pickling (Ray) with their set fields, and
template versions reach the file only past 1."""

from __future__ import annotations

import json
import pickle
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.suite_fixtures import task
from tgms.engine.api import ANSWER_KINDS, OpContext, SchemaError, Store, build_store, canonical_json
from tgms.pipeline.scoring.suite import AnswerKind, Suite, Task, parse_suite, read_suite, split_sha256
from tgms.pipeline.tasks import generate
from tgms.pipeline.tasks.generate import generate_suite, template_info
from tgms.pipeline.tasks.model import Template, template


@pytest.fixture(scope="module")
def store_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("schema")
    out = {}
    for backend in ("duckdb", "kuzu"):
        out[backend] = root / backend
        build_store(
            "synthetic", out[backend], backend=backend, events=4000, nodes=150, seed=5, corrections=False
        ).close()
    return out


def _suite(store_dir: Path) -> Suite:
    with Store.open(store_dir, read_only=True) as store:
        return generate_suite(OpContext(store), "synthetic", 2, store_digest=store.digest(), ostore=None)


@pytest.fixture(scope="module")
def suites(store_dirs: dict[str, Path]) -> Iterator[dict[str, Suite]]:
    yield {b: _suite(d) for b, d in store_dirs.items()}


def test_answer_kind_literal_is_the_engines() -> None:
    assert typing.get_args(AnswerKind) == tuple(ANSWER_KINDS)


def test_the_file_form_reads_back_to_the_same_bytes_on_both_backends(suites: dict[str, Suite]) -> None:
    duck, kuzu = suites["duckdb"], suites["kuzu"]
    text = duck.to_json()
    assert kuzu.to_json() == text  # same store contents, same suite bytes
    again = parse_suite(json.loads(text), "suite.json")
    assert again == duck and again.to_json() == text
    assert text == canonical_json(json.loads(text)) + "\n"
    assert duck.test_sha256 == split_sha256(duck.splits.test)
    assert duck.splits.dev and duck.splits.test and duck.splits.train


def test_optional_keys_appear_only_where_they_apply(suites: dict[str, Suite]) -> None:
    doc = json.loads(suites["duckdb"].to_json())
    tasks = doc["splits"]["dev"] + doc["splits"]["test"]
    required = {"id", "template", "family", "paraphrase", "question", "input_uids", "oracle_plan"}
    required |= {"answer_kind", "gold", "gold_answer_object"}
    assert all(set(t) == required for t in tasks)  # no probes in this suite, no refusals among them
    assert all("version" not in info for info in doc["templates"].values())  # every template is version 1


def test_a_refused_draw_keeps_its_error_and_a_null_gold(store_dirs: dict[str, Path]) -> None:
    from tgms.engine.api import ExecConfig

    with Store.open(store_dirs["duckdb"], read_only=True) as store:
        suite = generate_suite(
            OpContext(store), "synthetic", 2, store_digest="x", ostore=None, config=ExecConfig(budget_s=1e-9)
        )
    assert suite.refused and all(t.refused is not None and t.gold is None for t in suite.refused)
    doc = json.loads(suite.to_json())
    assert all("refused" in t and t["gold"] is None for t in doc["refused"])
    assert parse_suite(doc, "s").to_json() == suite.to_json()


def test_a_bad_suite_fails_naming_the_field(suites: dict[str, Suite], tmp_path: Path) -> None:
    doc = json.loads(suites["duckdb"].to_json())
    doc["splits"]["dev"][0]["anwser_kind"] = "count"  # misspelt: an unknown key
    with pytest.raises(SchemaError) as err:
        parse_suite(doc, "suite.json")
    assert "splits.dev.0.anwser_kind" in err.value.message
    doc = json.loads(suites["duckdb"].to_json())
    doc["splits"]["test"][0]["answer_kind"] = "number"  # not an engine answer kind
    del doc["test_sha256"]
    with pytest.raises(SchemaError) as err:
        parse_suite(doc, "suite.json")
    problems = " ".join(err.value.details["problems"])
    assert "splits.test.0.answer_kind" in problems and "test_sha256" in problems
    path = tmp_path / "suite.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(Exception, match="not valid JSON") as bad:
        read_suite(path)
    assert bad.value.to_dict()["error"] == "E_CORRUPT"  # type: ignore[attr-defined]


def test_tasks_are_frozen_and_pickle_with_their_set_fields() -> None:
    t = task(id="s/T1.a/00")
    with pytest.raises(ValidationError):
        t.gold = 3  # type: ignore[misc]
    asked = Task(id="ask", question="Who?", input_uids=("n1",), answer_kind=None)
    assert t.scored and not asked.scored  # a user's question has no gold: it is not scored
    back = pickle.loads(pickle.dumps(asked))
    assert back == asked and not back.scored and back.to_dict() == asked.to_dict()
    assert "gold" not in asked.to_dict() and t.to_dict()["gold"] == 0


def test_a_template_version_reaches_the_suite_only_past_one() -> None:
    def draw(_: object) -> None:
        return None

    one = Template("T1.v", "T1", "count", ("a", "b", "c"), draw)
    two = Template("T1.v", "T1", "count", ("a", "b", "c"), draw, version=2)
    assert "version" not in template_info(one).model_dump(exclude_unset=True)
    info = template_info(two)
    assert info.model_dump(exclude_unset=True)["version"] == 2 and info.version == 2
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match="version"):
            template("T1.bad", kind="count", paraphrases=("a", "b", "c"), ops=(), version=bad)
    assert generate.GENERATOR_VERSION == "2"  # the file format is unchanged
