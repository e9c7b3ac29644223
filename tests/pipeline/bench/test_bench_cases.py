"""The benchmark case lists are valid calls, and ``tgms bench peers`` compares what it says it compares.

The task-template calls must all run on CollegeMsg (a malformed call would be timed as an error, not as
the template's cost); the peers benchmark must report equal counts with Raphtory when it is installed and
say clearly that no peer ran when it is not.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tgms.engine.operators.context import OpContext
from tgms.engine.operators.envelope import call
from tgms.engine.operators.registry import REGISTRY, load_all
from tgms.pipeline.bench import peers_bench
from tgms.pipeline.cli.main import main
from tgms.pipeline.latency import operators as ops_latency
from tgms.pipeline.latency.stores import bench_store
from tgms.pipeline.latency.template_calls import template_calls


@pytest.fixture(scope="module")
def college(tmp_path_factory: pytest.TempPathFactory):
    load_all()
    work = tmp_path_factory.mktemp("bench")
    store = bench_store(work, "collegemsg", lambda _: None)
    yield work, store
    store.close()


def test_every_template_call_runs_on_collegemsg_and_all_operators_occur(college) -> None:
    _, store = college
    ctx = OpContext(store)
    calls = template_calls(ctx, draws=2, seed=1)
    assert {op for op, _, _ in calls} == set(REGISTRY)
    for op, case, args in calls:
        env = call(ctx, op, args)  # raises a TGMSError on a malformed or refused call
        assert env["payload"] is not None, case
    assert template_calls(ctx, draws=2, seed=1) == calls  # deterministic in the seed


def test_template_summary_flags_calls_over_the_target() -> None:
    recs = [
        {"op": "x", "case": "T1.a", "scale": "collegemsg", "p50_ms": 3.0},
        {"op": "y", "case": "T1.b", "scale": "collegemsg", "p50_ms": 25.0},
        {"op": "z", "case": "T1.c", "scale": "collegemsg", "error": "E_COST"},
    ]
    line = ops_latency.template_summary(recs)
    assert "2 template calls timed (1 errors)" in line and "25.0 ms (T1.b)" in line and "1 over 20" in line


def test_peers_records_and_equal_counts(college) -> None:
    work, _ = college
    recs = peers_bench.run(work, reps=1, progress=lambda _: None)
    head = recs[0]
    assert head["case"] == "collegemsg/five_motifs_delta_1d" and head["scale"] == 59_835
    assert set(head["counts"]) == set(peers_bench.MOTIFS)
    assert {r["case"] for r in recs[1:]} == {f"collegemsg/{m}_delta_1d" for m in peers_bench.MOTIFS}
    if importlib.util.find_spec("raphtory") is None:
        assert "peer" not in head
    else:
        assert head["equal"] is True and head["peer_counts"] == {
            m: head["counts"][m] for m in head["peer_counts"]
        }
        assert head["ratio"] == pytest.approx(head["p50_ms"] / head["peer_ms"], rel=1e-2)


def test_bench_peers_cli_exit_code(college, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    work, _ = college
    out = tmp_path / "peers.json"
    rc = main(["bench", "peers", "--work", str(work), "--reps", "1", "--json", str(out)])
    printed = capsys.readouterr().out
    assert out.exists() and "five_motifs_delta_1d" in printed
    if importlib.util.find_spec("raphtory") is None:
        assert rc == 2 and "raphtory is not installed" in printed
    else:
        assert rc == 0
