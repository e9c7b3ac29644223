"""Generated bad input for every ``tgms`` command: no traceback, one error shape, the store unchanged.

More than a thousand malformed command lines (``_malformed.Generator``, seeded) run in-process through
``main(argv)``; a handful also run as real subprocesses of the installed ``tgms`` script."""

from __future__ import annotations

import collections
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tgms.pipeline.cli.main import COMMANDS, main

from ._cli import (
    build_small_store,
    log_bytes,
    read_only_dir,
    store_digest,
    store_fingerprint,
    structured_error,
)
from ._malformed import Generator

SEED = 14
MIN_CASES = 1000


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory):
    base = tmp_path_factory.mktemp("fuzz")
    store = build_small_store(base / "store")
    ro = base / "read-only"
    shutil.copytree(store, ro)
    damaged = base / "damaged"
    shutil.copytree(store, damaged)
    log = damaged / "eventlog.jsonl"
    data = bytearray(log.read_bytes())
    data[data.index(b"\n") + 10] ^= 0x01  # line 2
    log.write_bytes(bytes(data))
    (base / "work").mkdir()
    return base, store, ro, damaged


def _check_outcome(command: str, code: int, out: str, err: str, may_report: bool) -> str | None:
    """None if the command refused properly; else what was wrong."""
    if "Traceback" in err:
        return "traceback"
    if code == 0:
        return "accepted"
    if may_report and out.strip() and code == 1:
        if command.startswith("plan"):
            report = json.loads(out)
            verification = report.get("verification", report)  # run: {verification, trace, answer}
            if verification.get("valid") is False:
                return None
            errors = [s["error"] for s in (report.get("trace") or {}).get("steps", []) if s.get("error")]
            if errors and all(set(e) == {"error", "message", "details"} for e in errors):
                return None  # refused when the step ran (an unauthenticated cursor): recorded in the trace
            return "report without violations"
        return None  # `tgms check` on a damaged store: a report, exit 1
    try:
        body = structured_error(err)
    except (AssertionError, ValueError) as exc:
        return f"not the error shape: {exc}"
    if body["error"] == "E_INTERNAL":
        return "E_INTERNAL: " + body["message"]
    if code not in (1, 2):
        return f"exit code {code}"
    return None


@pytest.mark.slow
def test_a_thousand_malformed_command_lines(capsys, stores):
    base, store, ro, damaged = stores
    gen = Generator(SEED, base / "work", store, ro, damaged)
    digest, fingerprint, log = store_digest(store), store_fingerprint(store), log_bytes(store)
    failures: list[str] = []
    per_command: collections.Counter[str] = collections.Counter()
    with read_only_dir(ro):
        ro_fingerprint = store_fingerprint(ro)
        for command, argv, may_report in gen.cases():
            per_command[command] += 1
            capsys.readouterr()
            try:
                code = main(argv)
            except SystemExit as exc:  # argparse --help and friends only
                code = exc.code if isinstance(exc.code, int) else 2
            out, err = capsys.readouterr()
            problem = _check_outcome(command, code, out, err, may_report)
            if problem:
                failures.append(f"{problem}: {argv!r:.300} -> {err.strip()[-300:]}")
            if log_bytes(store) != log:
                failures.append(f"log changed by {argv!r:.300}")
                log = log_bytes(store)
        assert store_fingerprint(ro) == ro_fingerprint
    total = sum(per_command.values())
    assert not failures, f"{len(failures)} of {total} cases:\n" + "\n".join(failures[:40])
    assert total >= MIN_CASES, per_command
    every = {c for c in COMMANDS if c not in ("plan", "tasks")} | {"plan verify", "plan run", "tasks stats"}
    every |= {"tasks generate"}
    assert every <= set(per_command), every - set(per_command)
    assert store_digest(store) == digest
    assert store_fingerprint(store) == fingerprint


SUBPROCESS_CASES = [
    (["stats", "--store", "{work}/nowhere"], "E_NOT_FOUND"),
    (["call", "entity_history", '{"uid": "n1"}', "--store", "{store}", "--budget-s", "nan"], "E_INVALID_ARG"),
    (
        [
            "call",
            "compute",
            '{"fn": "count", "input": [' + "[" * 3000 + "]" * 3000 + "]}",
            "--store",
            "{store}",
        ],
        "E_LIMIT",
    ),  # deep JSON
    (["write", "--store", "{store}", "{work}/latin1.jsonl"], "E_SCHEMA"),
    (["bench", "ops", "--scales", "abc"], "E_INVALID_ARG"),
    (["plan", "verify"], "E_SCHEMA"),
]


@pytest.mark.parametrize(("argv", "code"), SUBPROCESS_CASES, ids=lambda v: str(v)[:30])
def test_real_subprocesses_refuse_with_the_error_shape(stores, argv, code):
    base, store, _, _ = stores
    work = base / "work"
    (work / "latin1.jsonl").write_bytes(
        '{"op": "assert_node", "uid": "caf\xe9", "vt_s": 0}\n'.encode("latin-1")
    )
    tgms = Path(sys.executable).with_name("tgms")
    cmd = [str(tgms)] if tgms.exists() else [sys.executable, "-m", "tgms.pipeline.cli"]
    argv = [a.replace("{work}", str(work)).replace("{store}", str(store)) for a in argv]
    before = log_bytes(store)
    done = subprocess.run([*cmd, *argv], capture_output=True, text=True, timeout=120)
    assert done.returncode in (1, 2), done.stderr
    assert structured_error(done.stderr)["error"] == code
    assert done.stdout == ""
    assert log_bytes(store) == before
