"""Canonical bundles: byte-identical builds anywhere and at any time, verified by replay, README constants.

Two CollegeMsg seed-0 builds in different directories, with the wall clock moved between them, must give
the same bytes in all three files; their digest and test SHA must be the constants the README prints (a
reader following the README can check theirs); ``verify`` must pass, and fail naming the check when a
file is changed.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import collegemsg_file
from tgms.engine.api import ConflictError, CorruptError, NotFoundError, SchemaError
from tgms.pipeline.campaign.bundle import FILES, build_bundle, read_manifest, read_suite, verify_bundle
from tgms.pipeline.cli.main import main as tgms

README = Path(__file__).resolve().parents[3] / "README.md"


def _readme_constant(name: str) -> str:
    m = re.search(rf"{name}\s*[:=]\s*`?([0-9a-f]{{64}})`?", README.read_text(encoding="utf-8"))
    assert m, f"README.md prints no {name}"
    return m.group(1)


@pytest.fixture(scope="module")
def two_builds(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    a = tmp_path_factory.mktemp("first") / "bundle"
    b = tmp_path_factory.mktemp("elsewhere") / "deeper" / "bundle"
    # without the oracle cross-checks (a minute each on 2 cores): they only confirm golds (a draw too
    # large for them is dropped either way), so the suite is the cross-checked one, as the README constants
    # below show (made with them); tests/pipeline/tasks/test_suites.py checks a task of every template
    # against the oracles, and test_speculative_checks.py runs the generator's checks end to end
    build_bundle("collegemsg", 0, a, crosscheck=False)
    mp = pytest.MonkeyPatch()
    try:  # a build a year later: the canonical clock must not read the wall clock at all
        mp.setattr("tgms.engine.store.clock.wall_clock_us", lambda: 1_900_000_000_000_000)
        build_bundle(
            "collegemsg",
            0,
            b,
            source=str(collegemsg_file()),
            crosscheck=False,
        )
    finally:
        mp.undo()
    return a, b


def test_two_builds_are_byte_identical(two_builds: tuple[Path, Path]) -> None:
    a, b = two_builds
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert sorted(p.name for p in a.iterdir()) == sorted(FILES)  # no scratch store left behind
    # the typed manifest reads back and writes the same bytes (the fields a SNAP source lacks stay absent)
    assert read_manifest(a).to_json() + "\n" == (a / "manifest.json").read_text(encoding="utf-8")


def test_readme_constants_are_the_collegemsg_seed0_bundle(two_builds: tuple[Path, Path]) -> None:
    manifest = json.loads((two_builds[0] / "manifest.json").read_text())
    assert manifest["store_digest"] == _readme_constant("store digest")
    assert manifest["test_sha256"] == _readme_constant("test SHA-256")
    assert manifest["source"]["sha256"] == "e00ba2415373dee52c00616065bcceaa4750e78de60d1855c76470600f10740f"


def test_verify_passes_and_names_what_a_change_breaks(two_builds: tuple[Path, Path], tmp_path: Path) -> None:
    report = verify_bundle(two_builds[0]).to_dict()
    assert report["ok"] and all(c["ok"] for c in report["checks"].values())
    assert report["manifest"] == json.loads((two_builds[0] / "manifest.json").read_text())
    copy = tmp_path / "tampered"
    copy.mkdir()
    for name in FILES:
        (copy / name).write_bytes((two_builds[0] / name).read_bytes())
    suite = json.loads((copy / "suite.json").read_text())
    suite["splits"]["test"][0]["gold"] = "tampered"
    (copy / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(CorruptError) as err:
        verify_bundle(copy)
    assert set(err.value.details["failed"]) == {"suite_sha256", "test_sha256"}
    assert read_suite(copy).splits.test[0].gold == "tampered"  # still a suite: only the hashes catch it
    suite["splits"]["dev"][0]["anwser_kind"] = "count"  # a misspelt key: not a suite any more
    (copy / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(CorruptError) as err:
        verify_bundle(copy)
    failed = err.value.details["failed"]
    assert set(failed) == {"suite_sha256", "test_sha256", "suite_schema"}
    assert "splits.dev.0.anwser_kind" in failed["suite_schema"]["found"]
    with pytest.raises(SchemaError, match="anwser_kind"):
        read_suite(copy)


def test_build_refuses_a_directory_holding_a_bundle(two_builds: tuple[Path, Path]) -> None:
    before = (two_builds[0] / "manifest.json").read_bytes()
    with pytest.raises(ConflictError):
        build_bundle("collegemsg", 0, two_builds[0])
    assert (two_builds[0] / "manifest.json").read_bytes() == before


def test_cli_verify_and_missing_bundle(two_builds: tuple[Path, Path], tmp_path: Path, capsys) -> None:
    assert tgms(["bundle", "verify", str(two_builds[1])]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True
    assert tgms(["bundle", "verify", str(tmp_path)]) != 0
    assert '"E_NOT_FOUND"' in capsys.readouterr().err
    with pytest.raises(NotFoundError):
        verify_bundle(tmp_path)


def test_a_killed_builds_scratch_is_removed_by_the_next_build(tmp_path: Path) -> None:
    from tgms.pipeline.campaign.bundle import remove_stale_scratch

    out = tmp_path / "b"
    dead, legacy, live = out / ".bundle-999999999-abc", out / ".bundle-xyz", out / f".bundle-{os.getpid()}-q"
    for folder in (dead, legacy, live):
        (folder / "store").mkdir(parents=True)
    assert remove_stale_scratch(out) == [".bundle-999999999-abc", ".bundle-xyz"]
    assert not dead.exists() and not legacy.exists() and live.exists()  # a running build's folder stays


def test_sigterm_of_a_bundle_build_leaves_no_scratch_and_says_so(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT, signal_point

    out = tmp_path / "syn"
    cmd = [sys.executable, "-m", "tgms.pipeline.cli.main", "bundle", "build", "--dataset", "synthetic",
           "--events", "20000", "--nodes", "500", "--out", str(out)]  # fmt: skip
    # a random point of the build: 0 is during start-up, k after its k-th progress line (the store, the
    # probes, each template's draws: ~43 lines), past the last one the build has finished
    point, rng = signal_point("bundle build SIGTERM", 0, 45)
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    seen = []
    if point == 0:
        time.sleep(rng.uniform(0.05, 1.5))
    else:
        for line in proc.stderr:
            seen.append(line)
            if len(seen) == point:
                break
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=120)
    finally:  # a build that ignored the signal must not go on for minutes beside the other tests
        proc.kill()
    err = "".join(seen) + err
    assert list(out.glob(".bundle-*")) == [], "the build left its scratch folder"
    if proc.returncode == 0:  # it had finished: a whole bundle
        assert verify_bundle(out).checks
        return
    if proc.returncode == -signal.SIGTERM:  # before the handler was installed: nothing was made
        assert point == 0 and not out.exists()
        return
    assert proc.returncode == 143 and '"E_INTERRUPTED"' in err and "SIGTERM" in err, err[-2000:]
    assert not (out / "manifest.json").exists()


def test_a_sigterm_lost_in_a_library_stops_the_build_at_its_next_progress_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DuckDB can lose the handler's exception (a query runs on, the error surfaces at exit): the SIGTERM
    # is on record, so the next progress line of the build raises it
    from tgms.pipeline import signals

    lines: list[str] = []
    report = signals.stop_on_lost_sigterm(lines.append)
    with signals.sigterm_as_interrupt():
        report("building the store ...")
        monkeypatch.setattr(signals, "_SIGTERM_SEEN", [1.0])
        with pytest.raises(signals.Terminated):
            report("generating the suite ...")
    assert lines == ["building the store ..."]
    report("outside the block")  # a SIGTERM on record from a block that has ended stops nothing
    assert lines[-1] == "outside the block"


def _children(pid: int) -> list[int]:
    from pathlib import Path as _P

    path = _P(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="reads children from /proc (Linux)")
def test_sigkill_of_a_bundle_build_leaves_no_cross_check_worker(tmp_path: Path) -> None:
    # the suite's cross-checks run in worker processes (pipeline/tasks/checks.py): a SIGKILLed build runs
    # no clean-up, so each worker must notice its parent is gone and end itself
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO_ROOT, signal_point

    cmd = [sys.executable, "-m", "tgms.pipeline.cli.main", "bundle", "build", "--dataset", "collegemsg",
           "--out", str(tmp_path / "cm")]  # fmt: skip
    tmp = tmp_path / "tmp"  # the build's temporary files (the workers' oracle store) go here
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    # a random point of the drawing: after the k-th template's line (the workers check golds throughout)
    point, _ = signal_point("bundle build SIGKILL", 1, 20)
    drawn = 0
    for line in proc.stderr:
        drawn += "tasks," in line and "refused" in line
        if drawn >= point:
            break
    workers = _children(proc.pid)
    proc.kill()
    proc.wait(timeout=30)
    assert workers, "the build started no cross-check worker"
    deadline = time.monotonic() + 15
    from tests.pipeline.campaign.memory_kill_campaign import running

    while any(running(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [w for w in workers if running(w)]
    for w in left:  # do not leave them to the next test
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers outlived their SIGKILLed build: {left}"
    assert not list(tmp.glob("tgms-oracle-*")), "the workers left the oracle store file behind"
