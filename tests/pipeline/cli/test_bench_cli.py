"""``tgms bench``: a SIGTERM stops a benchmark in order (its clean-ups run), exit 143 with E_INTERRUPTED."""

from __future__ import annotations

import argparse
import json
import os
import signal
from typing import Any

import pytest

from tgms.pipeline.bench.report import BenchResult
from tgms.pipeline.cli import bench as bench_cli
from tgms.pipeline.cli.main import main


def test_a_sigterm_stops_a_benchmark_through_its_clean_ups(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cleaned: list[str] = []

    def slow_bench(args: argparse.Namespace, progress: Any) -> BenchResult:
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill` of a running benchmark would
            return BenchResult({}, "went on after the SIGTERM")  # the handler raises before this
        finally:
            cleaned.append("runtime stopped")  # where a campaign's `with` blocks stop Ray and the server

    # without the command's own handler a SIGTERM must not kill the test run: it is only noted here
    ignored: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda signum, _frame: ignored.append(signum))
    noting = signal.getsignal(signal.SIGTERM)
    try:
        args = argparse.Namespace(_bench=slow_bench, json=None, update_docs=None)
        monkeypatch.setattr("tgms.pipeline.cli.main.build_parser", lambda: _Parser(args))
        assert main([]) == 143
        assert cleaned == ["runtime stopped"] and not ignored
        err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert err["error"] == "E_INTERRUPTED" and err["details"]["signal"] == "SIGTERM"
        assert signal.getsignal(signal.SIGTERM) is noting  # the previous handler is back
    finally:
        signal.signal(signal.SIGTERM, before)


class _Parser:
    """Stands in for the command line's parser: it hands back ``tgms bench``'s namespace."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.args._run = bench_cli.run

    def parse_args(self, argv: Any) -> argparse.Namespace:
        return self.args
