"""A real ``mlflow server`` on the campaign's SQLite store: the runs read back through its REST API with
httpx hold the contract's tags and metrics, and ``tgms report`` pointed at the server writes the same
tables as from the store file. The server is stopped (its whole process group) also when a check fails."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.pipeline.campaign._records import SYSTEMS, expected
from tests.reports.conftest import SMALL, Logged
from tgms.pipeline.campaign.cell_metrics import metric_key
from tgms.pipeline.cli.main import main

READY_S = 90.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(logged: Logged, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    exe = Path(sys.executable).parent / "mlflow"
    argv = [
        str(exe), "server",
        "--backend-store-uri", logged.uri,
        "--default-artifact-root", str(logged.run_dir / "mlruns"),
        "--workers", "1", "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = (tmp_path / "mlflow-server.log").open("wb")
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + READY_S
        while True:
            if proc.poll() is not None:
                tail = (tmp_path / "mlflow-server.log").read_text()[-2000:]
                pytest.fail(f"mlflow server exited with {proc.returncode}: {tail}")
            try:
                if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"mlflow server not ready after {READY_S} s")
            time.sleep(0.5)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=20)
        log.close()


def _search(url: str, experiment_id: str, filt: str) -> list[dict]:
    runs: list[dict] = []
    token = None
    while True:
        body = {"experiment_ids": [experiment_id], "filter": filt, "max_results": 100}
        if token:
            body["page_token"] = token
        r = httpx.post(f"{url}/api/2.0/mlflow/runs/search", json=body, timeout=30)
        r.raise_for_status()
        data = r.json()
        runs += data.get("runs", [])
        token = data.get("next_page_token")
        if not token:
            return runs


def _kv(items: list[dict]) -> dict:
    return {x["key"]: x["value"] for x in items}


def test_runs_read_back_through_the_rest_api(
    server: str, logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    r = httpx.get(f"{server}/api/2.0/mlflow/experiments/get-by-name", params={"experiment_name": "paper"})
    r.raise_for_status()
    exp_id = r.json()["experiment"]["experiment_id"]

    parents = _search(server, exp_id, "tags.`tgms.kind` = 'campaign'")
    assert {p["info"]["run_id"] for p in parents} == {logged.parent_a, *logged.parents_b}
    parent_a = next(p for p in parents if p["info"]["run_id"] == logged.parent_a)
    tags = _kv(parent_a["data"]["tags"])
    assert tags["tgms.campaign_id"] == "A" and tags["tgms.model"] == SMALL
    params = _kv(parent_a["data"]["params"])
    assert params["experiment.name"] == "smoke" and params["catalog.systems.tgms.gating"] == "true"
    ci = {k for k in _kv(parent_a["data"]["metrics"]) if k.startswith("ci.")}
    assert len(ci) == 12 * 4  # 6 pairs x 2 seeds, each diff/low/high/mcnemar_p

    cells = _search(server, exp_id, "tags.`tgms.kind` = 'cell'")
    assert len(cells) == len(logged.cells)
    for system in SYSTEMS:
        (cell,) = [
            c
            for c in cells
            if _kv(c["data"]["tags"])["tgms.cell_id"] == f"collegemsg.{system}.{SMALL}.s1.none"
        ]
        ctags = _kv(cell["data"]["tags"])
        assert ctags["mlflow.parentRunId"] == logged.parent_a and ctags["tgms.system"] == system
        metrics = _kv(cell["data"]["metrics"])
        right, scored = expected(logged.tasks, system, 1)
        assert (metrics["accuracy_num"], metrics["accuracy_den"]) == (right, scored)
        assert metrics["n_tasks"] == len(logged.tasks)

    mutations = _search(server, exp_id, "tags.`tgms.kind` = 'mutations'")
    assert len(mutations) == 1
    mm = _kv(mutations[0]["data"]["metrics"])
    for c in logged.mutations["classes"]:
        assert mm[metric_key(c["class"], "detections")] == c["detected"]

    # the report through the server equals the report from the store file
    via_server, via_file = tmp_path / "server", tmp_path / "file"
    for out, uri in ((via_server, server), (via_file, logged.uri)):
        assert main(["report", "--run-id", logged.parent_a, "--out", str(out), "--tracking-uri", uri]) == 0
        json.loads(capsys.readouterr().out)
    for stem in ("table2", "table3", "table4", "table5", "table6", "ops"):
        assert (via_server / f"{stem}.md").read_text() == (via_file / f"{stem}.md").read_text(), stem
