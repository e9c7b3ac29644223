"""The campaign's MLflow tracking on a real SQLite store: the contract's runs, tags, metrics (with numerators
and denominators) and artifacts; resume without duplicate runs; the paired bootstrap comparisons; the
mutation and operator-benchmark runs from the real experiment and benchmark.

Expected numbers are counted from the records' labels (tests/pipeline/campaign/_records.py), never from
the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.pipeline.campaign._records import (
    SYSTEMS,
    cell_records,
    expected,
    label,
    make_record,
    record,
    small_suite,
    tags_of,
)
from tests.suite_fixtures import manifest as fake_manifest
from tgms.engine.api import ConflictError, CorruptError, InvalidArgError, NotFoundError
from tgms.pipeline.campaign.cell_metrics import cell_metrics, metric_key
from tgms.pipeline.campaign.outcomes import executed_of, outcome_of, unsupported_of
from tgms.pipeline.campaign.tracking import (
    MAX_PARAM_VALUE,
    CampaignTracker,
    default_artifact_location,
    default_uri,
    flatten,
    git_revision,
)
from tgms.pipeline.scoring.bootstrap import paired_bootstrap
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.systems.record import TaskRecord
from tgms.pipeline.systems.runner import parse_lines
from tgms.pipeline.table import Cell, Column, Table, from_json, to_latex, to_markdown
from tgms.pipeline.tasks.stats import table2_markdown

MODEL = "scripted-model"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Suite]:
    return small_suite(tmp_path_factory.mktemp("track_suite"))


@pytest.fixture(scope="module")
def tasks(suite: tuple[Path, Suite]) -> list[Task]:
    return list(suite[1].splits.dev)


@pytest.fixture
def tracker(tmp_path: Path) -> CampaignTracker:
    return CampaignTracker(default_uri(tmp_path), "exp", default_artifact_location(tmp_path))


# -- outcomes --------------------------------------------------------------------------------------------
def test_outcome_of_reads_the_record(tasks: list[Task]) -> None:
    by_label: dict[str, TaskRecord] = {}
    for t in tasks:
        by_label.setdefault(label(t.id, "tgms", 0), make_record(t, "tgms", 0, MODEL, "no_gating"))
    assert {"right", "wrong", "infra"} <= set(by_label), "the labels must cover these cases"
    assert outcome_of(by_label["infra"]) is None  # infra errors are not scored
    right = outcome_of(by_label["right"])
    assert right is not None and right.correct and right.emitted and right.executed
    assert right.unsupported is False and right.plan_valid_first is True
    wrong = outcome_of(by_label["wrong"])
    assert wrong is not None and not wrong.correct and wrong.unsupported is True
    # a record whose stored score contradicts its answer is corrupt, not silently re-scored
    with pytest.raises(CorruptError):
        outcome_of(by_label["wrong"].model_copy(update={"correct": True}))
    # a line that is JSON but not a record fails where it is read, named
    with pytest.raises(CorruptError, match=r"run r1: records\.jsonl:2 is not a task record") as err:
        parse_lines(
            by_label["right"].to_json() + '\n{"system": "tgms", "correct": true}\n', "run r1: records.jsonl"
        )
    assert any("task_id" in p for p in err.value.details["problems"])


def test_unsupported_counts_only_emitted_gated_claims() -> None:
    base = {"status": "answered", "claim_verdicts": [{"claim": "c1", "verdict": "unsupported"}]}
    assert unsupported_of(record(**base, answer={"claims": [{"id": "c1", "type": "value"}]})) is True
    # a pattern claim is not gated; a dropped claim is not in the emitted answer
    assert (
        unsupported_of(record(**base, answer={"claims": [{"id": "c1", "type": "temporal_pattern"}]})) is False
    )
    assert unsupported_of(record(**base, answer={"claims": [{"id": "c2", "type": "count"}]})) is False
    assert unsupported_of(record(**{**base, "status": "abstained"}, answer=None)) is None  # nothing emitted
    assert unsupported_of(record(status="answered", answer={"claims": []})) is None  # never verified


def test_executed_of_plans_and_queries() -> None:
    assert executed_of(record(trace_status="ok")) is True
    assert executed_of(record(trace_status="partial", attempts=[{"valid": True}])) is False
    assert (
        executed_of(record(attempts=[{"valid": False, "violations": [{"problem": "empty_result"}]}])) is True
    )
    assert executed_of(record(attempts=[{"valid": False, "runtime_error": {"error": "E_QUERY"}}])) is False
    assert executed_of(record(attempts=[{"valid": False, "violations": [{"problem": "no_query"}]}])) is False
    assert executed_of(record(attempts=[])) is None


# -- metrics without MLflow --------------------------------------------------------------------------------
@pytest.mark.parametrize("system", SYSTEMS)
def test_cell_metrics_have_numerators_and_denominators(tasks: list[dict], system: str) -> None:
    recs = cell_records(tasks, system, 0, MODEL)
    m = cell_metrics(recs)
    right, scored = expected(tasks, system, 0)
    assert m["n_tasks"] == len(tasks)
    assert m["n_unscored_infra"] == len(tasks) - scored
    assert (m["accuracy_num"], m["accuracy_den"]) == (right, scored)
    assert m["accuracy"] == pytest.approx(right / scored)
    emitted = sum(label(t.id, system, 0) in ("right", "wrong") for t in tasks)
    assert (m["coverage_num"], m["coverage_den"]) == (emitted, scored)
    assert (m["conditional_accuracy_num"], m["conditional_accuracy_den"]) == (right, emitted)
    p_right, p_scored = expected(tasks, system, 0, family="probe")
    assert (m["probe_accuracy_num"], m["probe_accuracy_den"]) == (p_right, p_scored)
    for fam in {t.family for t in tasks}:
        f_right, f_scored = expected(tasks, system, 0, family=fam)
        if f_scored:
            assert m[f"family.{fam}.accuracy"] == pytest.approx(f_right / f_scored)
    if system in ("vector_rag", "static_graph_rag"):  # no plans, no verified claims: nothing measured
        assert m["plan_validity_first_den"] == 0 and "plan_validity_first" not in m
        assert m["unsupported_rate_den"] == 0 and "unsupported_rate" not in m
    else:
        assert (m["plan_validity_first_num"], m["plan_validity_first_den"]) == (right, scored)
    assert m["mean_latency_s"] == pytest.approx(0.25 if system == "tgms" else 0.5)


def test_unsupported_rate_under_no_gating(tasks: list[dict]) -> None:
    m = cell_metrics(cell_records(tasks, "tgms", 0, MODEL, "no_gating"))
    labs = [label(t.id, "tgms", 0) for t in tasks]
    assert (m["unsupported_rate_num"], m["unsupported_rate_den"]) == (
        labs.count("wrong"),
        labs.count("right") + labs.count("wrong"),
    )
    assert cell_metrics(cell_records(tasks, "tgms", 0, MODEL))["unsupported_rate_num"] == 0


def test_metric_key_is_a_valid_mlflow_name() -> None:
    assert (
        metric_key("ci", "collegemsg", "Qwen/Qwen2.5-7B@awq", "s0") == "ci.collegemsg.Qwen/Qwen2.5-7B_awq.s0"
    )
    assert metric_key("/a//b", "c") == "a/b.c"


def test_flatten_nests_and_truncates() -> None:
    flat = flatten({"a": {"b": {"c": 1}, "d": [1, 2]}, "e": "x" * (MAX_PARAM_VALUE + 10), "f": None, "g": {}})
    assert flat["a.b.c"] == "1" and flat["a.d"] == "[1, 2]" and flat["f"] == "null" and flat["g"] == "{}"
    assert len(flat["e"]) == MAX_PARAM_VALUE


def test_git_revision(tmp_path: Path) -> None:
    rev = git_revision()
    assert rev != "unknown" and len(rev.removesuffix("-dirty")) >= 7
    assert git_revision(tmp_path) == "unknown"


# -- the tracker on a real SQLite store ----------------------------------------------------------------------
def _runs(tracker: CampaignTracker, filt: str) -> list[Any]:
    return tracker.client.search_runs([tracker.experiment_id], filter_string=filt)


def test_resume_does_not_duplicate_runs(tmp_path: Path, tracker: CampaignTracker, tasks: list[dict]) -> None:
    config = {"experiment": {"name": "t"}, "seeds": [0], "run": {"dir": "a"}, "catalog": {"x": {"y": True}}}
    parent = tracker.start_campaign("cid1", config, {"tgms.git_revision": "abc"})
    cell_tags = tags_of("collegemsg", "tgms", MODEL, 0, "none")
    child = tracker.start_cell(parent, {"system.gating": True}, cell_tags)
    tracker.end_run(child, "KILLED")
    tracker.end_run(parent, "KILLED")
    # a new tracker on the same store (a rerun of the killed driver), with an operational param changed
    again = CampaignTracker(default_uri(tmp_path), "exp", default_artifact_location(tmp_path))
    assert again.start_campaign("cid1", {**config, "run": {"dir": "b"}}, {}) == parent
    assert again.start_cell(parent, {"system.gating": True}, cell_tags) == child
    assert len(_runs(again, "tags.`tgms.kind` = 'campaign'")) == 1
    assert len(_runs(again, "tags.`tgms.kind` = 'cell'")) == 1
    run = again.client.get_run(parent)
    assert run.info.status == "RUNNING" and run.data.params["run.dir"] == "a"  # the first value stays
    assert run.data.params["catalog.x.y"] == "true" and run.data.tags["tgms.git_revision"] == "abc"
    with pytest.raises(ConflictError):  # what the campaign computes changed: not a resume
        again.start_campaign("cid1", {**config, "seeds": [1]}, {})
    assert again.start_campaign("cid2", config, {}) != parent  # another campaign: another parent
    child_run = again.client.get_run(child)
    assert child_run.data.tags["mlflow.parentRunId"] == parent
    assert child_run.data.tags["tgms.cell_id"] == cell_tags["tgms.cell_id"]
    with pytest.raises(InvalidArgError):
        again.start_cell(parent, {}, {"tgms.system": "tgms"})  # no cell id
    with pytest.raises(InvalidArgError):
        again.start_campaign("it's", config, {})


def test_log_cell_metrics_and_artifacts(tmp_path: Path, tracker: CampaignTracker, tasks: list[dict]) -> None:
    parent = tracker.start_campaign("c", {}, {})
    tags = tags_of("collegemsg", "text_to_cypher", MODEL, 1, "none")
    child = tracker.start_cell(parent, {}, {**tags, "tgms.params_b": "0.135"})
    recs = cell_records(tasks, "text_to_cypher", 1, MODEL)
    run_dir = tmp_path / "run"
    for sub in ("records", "traces"):
        (run_dir / sub).mkdir(parents=True)
        (run_dir / sub / f"{tags['tgms.cell_id']}.jsonl").write_text(
            "".join(r.to_json() + "\n" for r in recs) if sub == "records" else '{"trace": 1}\n'
        )
    files = [
        run_dir / "records" / f"{tags['tgms.cell_id']}.jsonl",
        run_dir / "traces" / f"{tags['tgms.cell_id']}.jsonl",
    ]
    metrics = tracker.log_cell(child, recs, files)
    metrics_again = tracker.log_cell(child, recs, files)  # idempotent on resume
    assert metrics == metrics_again
    tracker.end_run(child)
    logged = tracker.client.get_run(child).data.metrics
    right, scored = expected(tasks, "text_to_cypher", 1)
    assert (logged["accuracy_num"], logged["accuracy_den"]) == (right, scored)
    assert logged["n_unscored_infra"] == len(tasks) - scored
    assert {k: v for k, v in logged.items()} == metrics
    names = {a.path for a in tracker.client.list_artifacts(child)}
    assert names == {"records.jsonl", "traces.jsonl"}
    got = Path(tracker.client.download_artifacts(child, "records.jsonl", str(tmp_path)))
    assert [json.loads(x)["task_id"] for x in got.read_text().splitlines()] == [t.id for t in tasks]
    with pytest.raises(NotFoundError):
        tracker.log_cell(child, recs, [tmp_path / "missing.jsonl"])


def test_batches_respect_mlflow_limits(tracker: CampaignTracker) -> None:
    run = tracker.start_campaign("big", {f"p{i}": {"v": i} for i in range(230)}, {})
    tracker.log_metrics(run, {f"m{i}": float(i) for i in range(2300)})
    data = tracker.client.get_run(run).data
    assert len(data.params) == 230 and data.params["p229.v"] == "229"
    assert len(data.metrics) == 2300 and data.metrics["m2299"] == 2299.0


def test_log_tables_writes_markdown_and_latex(
    tmp_path: Path, tracker: CampaignTracker, suite: tuple[Path, Suite]
) -> None:
    run = tracker.start_campaign("tables", {}, {})
    tracker.log_suite_tables(run, {"collegemsg": suite[1]})
    table4 = Table(
        name="table4", caption="Table 4: x.", columns=(Column(name="a"), Column(name="b", align="r")),
        rows=((Cell(text="1"), Cell(text="2", value=2)),),
    )  # fmt: skip
    tracker.log_tables(run, {"table4": table4})
    names = {a.path for a in tracker.client.list_artifacts(run, "tables")}
    # each table model is logged as Markdown and LaTeX rendered from it, and its JSON
    assert names == {f"tables/table{n}.{s}" for n in (2, 4) for s in ("md", "tex", "json")}
    tex = Path(tracker.client.download_artifacts(run, "tables/table4.tex", str(tmp_path))).read_text()
    assert "\\begin{tabular}{lr}" in tex and "1 & 2 \\\\" in tex and tex == to_latex(table4)
    got = Path(tracker.client.download_artifacts(run, "tables/table2.json", str(tmp_path))).read_text()
    md = Path(tracker.client.download_artifacts(run, "tables/table2.md", str(tmp_path))).read_text()
    assert to_markdown(from_json(got)) == md == table2_markdown(suite[1])


def test_comparisons_are_paired_bootstraps(
    tmp_path: Path, tracker: CampaignTracker, tasks: list[dict]
) -> None:
    parent = tracker.start_campaign("cmp", {}, {})
    cells = {}
    for system in SYSTEMS:
        tags = tags_of("collegemsg", system, MODEL, 0, "none")
        cells[tuple(tags.items())] = cell_records(tasks, system, 0, MODEL)
    lone = tags_of("collegemsg", "tgms", MODEL, 0, "no_gating")  # no other system in its group
    cells[tuple(lone.items())] = cell_records(tasks, "tgms", 0, MODEL, "no_gating")
    comps = tracker.log_comparisons(parent, cells, resamples=2000)
    assert len(comps) == 6  # 4 systems: 6 pairs; the lone ablation cell has none
    metrics = tracker.client.get_run(parent).data.metrics
    for c in comps:
        a, b = c["a"], c["b"]
        common = [t.id for t in tasks if "infra" not in (label(t.id, a, 0), label(t.id, b, 0))]
        sa = [1.0 if label(t, a, 0) == "right" else 0.0 for t in sorted(common)]
        sb = [1.0 if label(t, b, 0) == "right" else 0.0 for t in sorted(common)]
        want = paired_bootstrap(sa, sb, resamples=2000, seed=0)
        assert c["n"] == len(common)
        assert c["diff"] == pytest.approx(want["diff"])
        key = f"ci.collegemsg.{MODEL}.s0.none.{a}__{b}"
        assert c["key"] == key
        assert metrics[f"{key}.diff"] == pytest.approx(want["diff"])
        assert metrics[f"{key}.low"] == pytest.approx(want["ci_low"])
        assert metrics[f"{key}.high"] == pytest.approx(want["ci_high"])
    got = Path(tracker.client.download_artifacts(parent, "comparisons.json", str(tmp_path)))
    assert json.loads(got.read_text()) == json.loads(json.dumps(comps))


def test_log_mutations_from_the_real_experiment(
    tmp_path: Path, tracker: CampaignTracker, suite: tuple[Path, Suite]
) -> None:
    from tgms.pipeline.mutations import run_experiment

    result = run_experiment(suite[0], suite[1], per_class=2, seed=0)
    parent = tracker.start_campaign("mut", {}, {})
    run_id = tracker.log_mutations(parent, result, tmp_path / "mut")
    assert tracker.log_mutations(parent, result, tmp_path / "mut") == run_id  # resumed, not duplicated
    run = tracker.client.get_run(run_id)
    assert run.data.tags["tgms.kind"] == "mutations" and run.data.tags["mlflow.parentRunId"] == parent
    assert run.info.status == "FINISHED"
    for c in result["classes"]:
        assert run.data.metrics[metric_key(c["class"], "cases")] == c["cases"]
        assert run.data.metrics[metric_key(c["class"], "detections")] == c["detected"]
        assert run.data.metrics[metric_key(c["class"], "false_positives")] == c["false_positives"]
        if c["detected_without_mechanism"] is None:
            assert metric_key(c["class"], "without") not in run.data.metrics
    names = {a.path for a in tracker.client.list_artifacts(run_id)}
    assert names == {"mutations.json", "table5.md", "table5.tex"}


def test_log_ops_bench_from_the_real_benchmark(tmp_path: Path, tracker: CampaignTracker) -> None:
    from tgms.pipeline.latency.operators import run

    records = run([10_000], 1, tmp_path / "work", lambda _: None)
    run_id = tracker.log_ops_bench(records)
    data = tracker.client.get_run(run_id).data
    assert data.tags["tgms.kind"] == "ops_bench"
    timed = [r for r in records if "p50_ms" in r]
    assert timed
    for r in timed:
        assert data.metrics[metric_key(r["case"], r["scale"], "median_ms")] == pytest.approx(r["p50_ms"])
    got = Path(tracker.client.download_artifacts(run_id, "ops_bench.json", str(tmp_path)))
    assert json.loads(got.read_text()) == json.loads(json.dumps(records))


def test_cells_logged_from_threads(tracker: CampaignTracker, tasks: list[dict]) -> None:
    """The driver finishes cells on several threads: one tracker, concurrent calls, no lost or mixed runs."""
    from concurrent.futures import ThreadPoolExecutor

    parent = tracker.start_campaign("threads", {}, {})
    cells = [(system, seed) for system in SYSTEMS for seed in (0, 1)]

    def one(cell: tuple[str, int]) -> str:
        system, seed = cell
        child = tracker.start_cell(parent, {"seed": seed}, tags_of("collegemsg", system, MODEL, seed, "none"))
        tracker.log_cell(child, cell_records(tasks, system, seed, MODEL))
        tracker.end_run(child)
        return child

    with ThreadPoolExecutor(max_workers=4) as pool:
        ids = dict(zip(cells, pool.map(one, cells), strict=True))
    assert len(set(ids.values())) == len(cells)
    assert len(_runs(tracker, f"tags.`mlflow.parentRunId` = '{parent}'")) == len(cells)
    for (system, seed), run_id in ids.items():
        run = tracker.client.get_run(run_id)
        assert run.data.tags["tgms.system"] == system and run.data.tags["tgms.seed"] == str(seed)
        assert (run.data.metrics["accuracy_num"], run.data.metrics["accuracy_den"]) == expected(
            tasks, system, seed
        )


def test_concurrent_starts_of_one_cell_make_one_run(tracker: CampaignTracker) -> None:
    """Find-or-create is atomic within a tracker: threads starting the same cell get the same run."""
    from concurrent.futures import ThreadPoolExecutor

    parent = tracker.start_campaign("race", {}, {})
    tags = tags_of("collegemsg", "tgms", MODEL, 0, "none")
    with ThreadPoolExecutor(max_workers=6) as pool:
        ids = set(pool.map(lambda _: tracker.start_cell(parent, {"k": 1}, tags), range(12)))
    assert len(ids) == 1
    assert len(_runs(tracker, "tags.`tgms.kind` = 'cell'")) == 1


def test_the_bundle_is_each_runs_dataset_and_the_ui_opens_on_runs(
    tracker: CampaignTracker, tmp_path: Path
) -> None:
    parent = tracker.start_campaign("c-datasets", {"a": 1}, {}, "main · collegemsg · x")
    bundle = tmp_path / "bundles" / "collegemsg-s0"
    bundle.mkdir(parents=True)
    manifest = fake_manifest(seed=0, store_digest="c1e13cbb" * 8)
    for _ in range(2):  # a resumed run logs it again: still one input
        tracker.log_bundle(parent, "collegemsg", bundle, manifest)
    inputs = tracker.client.get_run(parent).inputs.dataset_inputs
    assert [(i.dataset.name, i.dataset.digest) for i in inputs] == [("collegemsg-s0", "c1e13cbb" * 4)]
    assert str(bundle.resolve()) in inputs[0].dataset.source
    tags = tracker.client.get_experiment(tracker.experiment_id).tags
    assert tags["mlflow.experimentKind"] == "custom_model_development"
