"""``tgms bench planner`` end to end against the scripted OpenAI-compatible server (a TEST DOUBLE).

The benchmark runs as a real campaign (Hydra config, Ray actors, MLflow, records) on the ``stratified-6``
dev slice of a small CollegeMsg bundle, tgms only, repair budget 2. The double plays a fixed script per
task, so every figure of the table follows from the script:

====================  =======================================  ======  =========  =======  =======
task (slice order)    planner replies                          first   after      repair   repeats
                                                               valid   repair     replies
====================  =======================================  ======  =========  =======  =======
0, 1, 2 ``good``      the oracle plan                          yes     yes        0        0
3 ``sampled``         bad, the same bad (a repeat), then the   no      yes        2        1
                      oracle plan — only to a sampled request
4 ``repaired``        bad, then the oracle plan                no      yes        1        0
5 ``hopeless``        bad, bad, bad (all byte-identical)       no      no         2        2
====================  =======================================  ======  =========  =======  =======

The reporter restates the task's gold answer object, so a task is correct exactly when its plan ended
valid: accuracy 5/6, first-emission validity 3/6, valid after repair 5/6, repeat rate 3/5, one model error.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hydra")
pytest.importorskip("ray")
pytest.importorskip("mlflow")

from tests.conftest import collegemsg_head
from tests.pipeline.campaign._records import record as make
from tgms.models.prompting import escaped_data
from tgms.models.testing.scripted_server import ScriptedServer
from tgms.models.testing.smoke_rule import PLANNER_PREFIX, REPORTER_PREFIX
from tgms.pipeline.scoring.suite import Suite, Task
from tgms.pipeline.systems.record import LLMCall, TaskRecord
from tgms.pipeline.tasks.slices import stratified

REPO = Path(__file__).resolve().parents[3]
EVENTS = 12_000
SCRIPTS = ("good", "good", "good", "sampled", "repaired", "hopeless")
_QUESTION = re.compile(r'<data name="question">\n(.*?)\n</data>', re.DOTALL)


class PlannerScript:
    """TEST DOUBLE rule: the scripted replies above, chosen by the fenced question of each request."""

    def __init__(self, tasks: list[Task]) -> None:
        self.by_question = {escaped_data(t.question): (t, s) for t, s in zip(tasks, SCRIPTS, strict=True)}
        self.calls: dict[str, int] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        system = next((str(m["content"]) for m in messages if m.get("role") == "system"), "")
        user = next((str(m["content"]) for m in messages if m.get("role") == "user"), "")
        m = _QUESTION.search(user)
        task, script = self.by_question[m.group(1) if m else ""]
        if system.startswith(REPORTER_PREFIX):
            return json.dumps(task.gold_answer_object)
        assert system.startswith(PLANNER_PREFIX), system[:80]
        with self.lock:  # one task's requests are sequential; tasks interleave
            n = self.calls[task.id] = self.calls.get(task.id, 0) + 1
        oracle = {"steps": task.oracle_plan["steps"], "answer_spec": task.oracle_plan["answer_spec"]}
        bad = {"steps": [{"id": "s1", "op": "no_such_op", "args": {}, "depends_on": []}],
               "answer_spec": {"kind": task.answer_kind, "from": "s1.rows_total"}}  # fmt: skip
        sampled = float(body.get("temperature") or 0.0) > 0.0
        good = (
            script == "good"
            or (script == "repaired" and n >= 2)
            or (script == "sampled" and n >= 3 and sampled)
        )
        return json.dumps(oracle if good else bad)


def _git_status() -> str:
    return subprocess.run(
        ["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout


def _bench(tmp: Path, url: str, bundle: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable, "-m", "tgms.pipeline.bench", "planner", "--model", "scripted", "--api-base", url,
        "--tasks", "6", "--systems", "tgms", "--repair-budget", "2", "--work", str(tmp / "work"),
        "--set", f"catalog.suites.collegemsg.bundle={bundle}", "--set", "cluster.num_cpus=2",
        "--set", "cluster.actors=1", "--set", "cluster.actor_cpus=0.1",
        # retrieval by feature hashing: no embedding model to load in the actor (the test double plans)
        "--set", "++catalog.systems.tgms.examples_embedder=hashing", *extra,
    ]  # fmt: skip
    env = {**os.environ, "TGMS_CACHE": str(tmp / "cache"), "RAY_AUTH_MODE": "disabled",
           "PYTHONPATH": str(REPO)}  # fmt: skip
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp, timeout=600)


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Suite]:
    from tgms.pipeline.campaign.bundle import build_bundle, read_suite

    root = tmp_path_factory.mktemp("planner_bundle")
    out = root / "bundle"
    build_bundle("collegemsg", 0, out, source=str(collegemsg_head(root, EVENTS)), crosscheck=False)
    return out, read_suite(out)


def test_bench_planner_figures_follow_the_script(bundle: tuple[Path, Suite], tmp_path: Path) -> None:
    bundle_dir, suite = bundle
    tasks = stratified(list(suite.splits.dev), 6)
    assert {t.family for t in tasks} >= {"T1", "T3", "T4", "T5", "probe"}
    script = PlannerScript(tasks)
    before = _git_status()
    with ScriptedServer(script, model="scripted") as server:
        url = server.url
        proc = _bench(tmp_path, url, bundle_dir, "--json", str(tmp_path / "out.json"))
        assert proc.returncode == 0, proc.stderr[-4000:]
        sent = server.log.chat_count
        # the same command again resumes the finished campaign: no request, the same table; and only now,
        # asked to, it writes a docs section (here a scratch copy)
        docs = tmp_path / "benchmarks.md"
        docs.write_text("# Benchmarks\n")
        again = _bench(tmp_path, url, bundle_dir, "--update-docs", str(docs))
        assert again.returncode == 0, again.stderr[-4000:]
        assert server.log.chat_count == sent
    print(proc.stdout)  # the table, for the record of a CI run
    assert _git_status() == before, "the benchmark changed tracked files without --update-docs"
    # planner calls (the hopeless task: 3 budgeted and 2 redraws), and one reporter call per valid plan
    assert sent == 3 * 2 + (3 + 1) + (2 + 1) + 5
    assert script.calls == {t.id: n for t, n in zip(tasks, (1, 1, 1, 3, 2, 5), strict=True)}

    data = json.loads((tmp_path / "out.json").read_text())
    (row,) = data["rows"]
    assert (row["system"], row["ablation"], row["tasks"], row["infra"]) == ("tgms", "none", 6, 0)
    assert row["first_emission_valid"] == {"value": 0.5, "num": 3, "den": 6}
    assert row["valid_after_repair"]["num"] == 5 and row["valid_after_repair"]["den"] == 6
    assert row["repeat_rate"] == {"value": 5 / 7, "num": 5, "den": 7}
    assert row["accuracy"]["num"] == 5 and row["accuracy"]["den"] == 6
    low, high = row["accuracy_ci95"]
    assert 0.0 <= low <= 5 / 6 <= high <= 1.0
    assert (row["abstained"], row["model_error"]) == (0, 1)
    assert row["seconds_median"] is not None and row["seconds_p90"] >= row["seconds_median"]
    assert row["tokens_per_task"]["den"] == 6 and row["tokens_per_task"]["value"] > 0
    assert data["run"]["task_ids"] == [t.id for t in tasks]
    assert data["run"]["selection"] == "stratified-6" and data["run"]["repair_budget"] == 2
    assert data["machine"]["cores"] == os.cpu_count() and len(data["load"]["start"]) == 3
    assert data["model"]["name"] == "scripted" and data["model"]["api_base"] == [url]

    line = next(x for x in proc.stdout.splitlines() if x.startswith("| tgms |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[2:9] == ["6", "3/6 (0.50)", "5/6 (0.83)", "5/7 (0.71)", cells[6], "0", "1"]
    assert cells[6].startswith("5/6 (0.83) [")
    assert "load (1/5/15 min)" in proc.stdout and "cores" in proc.stdout
    assert again.stdout.split("\n\n", 1)[1] == proc.stdout.split("\n\n", 1)[1]  # the same table
    # the rebuild keeps the measuring run's time and load (its own 3 s at another load say nothing)
    first = next(x for x in proc.stdout.splitlines() if "Measured" in x)
    rebuilt = next(x for x in again.stdout.splitlines() if "Measured" in x)
    assert "rebuilt" not in first and rebuilt.startswith(first[:-1]) and "rebuilt" in rebuilt
    # the source the figures were measured with (a git checkout here; "unknown" elsewhere)
    assert data["code"] not in (None, "") and f"code {data['code']}" in first
    text = docs.read_text()
    assert "<!-- planner-bench:begin -->" in text and line in text

    # the sampled retry is on the record: attempt 3 of the "sampled" task was a seeded, sampled request
    run_dir = Path(data["run"]["run_dir"])
    records = [json.loads(x) for x in next((run_dir / "records").glob("*.jsonl")).read_text().splitlines()]
    sampled = next(r for r in records if r["task_id"] == tasks[3].id)
    assert [a["repeated"] for a in sampled["attempts"]] == [False, True, False]
    assert sampled["attempts"][2]["sampling"]["temperature"] > 0 and sampled["correct"] is True

    # MLflow: the table and the JSON on the campaign's parent run, machine and load as tags
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=data["run"]["tracking_uri"])
    parent = client.get_run(data["run"]["mlflow_run_id"])
    assert parent.data.tags["tgms.bench"] == "planner" and parent.data.tags["tgms.bench.load_start"]
    arts = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert "bench_planner.json" in arts
    assert "tables/bench_planner.md" in {a.path for a in client.list_artifacts(parent.info.run_id, "tables")}


def test_tasks_answered_from_the_response_cache_are_not_timed() -> None:
    from tgms.pipeline.bench.planner_table import cell_row, rows_table

    def record(i: int, latency: float, cached: bool) -> TaskRecord:
        call = LLMCall(
            role="planner",
            request_hash="r",
            prompt_sha256="p",
            completion_sha256="c",
            prompt_tokens=10,
            completion_tokens=2,
            latency_s=latency,
            cached=cached,
            attempts=1,
        )
        return make(
            task_id=f"t/{i}", status="answered", correct=True, gold=3, predicted=3, latency_s=latency,
            repeat_replies=0, first_emission_valid=True, attempts=[{"valid": True}],
            tokens={"prompt": 10, "completion": 2}, llm_calls=[call],
        )  # fmt: skip

    row = cell_row("tgms", "none", [record(1, 100.0, False), record(2, 0.01, True), record(3, 80.0, False)])
    assert row["timed"] == 2 and row["seconds_median"] == 90.0  # not 80.0: the cached 0.01 s is left out
    line = next(x for x in rows_table([row]).splitlines() if x.startswith("| tgms |"))
    assert "90.0 (2 timed)" in line


def test_a_set_hydra_refuses_is_the_structured_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # a key the config does not have: Hydra's own words, as E_INVALID_ARG (it was an E_INTERNAL before)
    from tgms.pipeline.cli.main import main as tgms

    argv = ["bench", "planner", "--model", "scripted", "--api-base", "http://127.0.0.1:9/v1",
            "--set", "catalog.systems.tgms.nope=1", "--work", str(tmp_path / "work")]  # fmt: skip
    assert tgms(argv) == 2
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["error"] == "E_INVALID_ARG" and "catalog.systems.tgms.nope" in err["message"]
    assert err["details"]["hydra_error"] == "ConfigCompositionException"
