"""``tgms quickstart`` reports a replay only when one ran, and its digest check can fail.

Before, the line was ``all(d == digest for d in replayed.values())``: with the ``kuzu`` extra missing no
replay runs, the dict is empty and the quickstart printed "replay digests match" about nothing.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from tgms.engine.errors import NotFoundError
from tgms.pipeline.cli import quickstart
from tgms.pipeline.cli.main import main


def test_no_replay_claims_no_match() -> None:
    line, ok = quickstart.replay_report("abc", {})
    assert ok and "no replay ran" in line and "match" not in line


def test_a_mismatch_fails() -> None:
    line, ok = quickstart.replay_report("abc", {"kuzu": "abd"})
    assert not ok and line == "REPLAY DIGEST MISMATCH on kuzu"


def test_a_match_names_the_backends_compared() -> None:
    assert quickstart.replay_report("abc", {"kuzu": "abc"}) == ("replay digests match (kuzu)", True)


def _without_kuzu(name: str) -> type:
    if name == "kuzu":
        raise NotFoundError("the Kùzu backend needs the 'kuzu' extra: pip install 'tgms[kuzu]'")
    from tgms.engine.store.backends import backend_class

    return backend_class(name)


def test_quickstart_without_the_other_backend_says_no_replay_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(quickstart, "backend_class", _without_kuzu)
    assert main(["quickstart", "--no-suite", "--out", str(tmp_path / "qs")]) == 0
    out = capsys.readouterr()
    assert "replay digests match" not in out.out and "no replay ran" in out.out
    assert '"replay_digests": {}' in out.out and "skipping the kuzu replay" in out.err
    assert not (tmp_path / "qs" / "collegemsg-kuzu").exists()


@pytest.mark.skipif(importlib.util.find_spec("kuzu") is None, reason="the kuzu extra is not installed")
def test_quickstart_with_kuzu_replays_and_compares(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["quickstart", "--no-suite", "--out", str(tmp_path / "qs")]) == 0
    out = capsys.readouterr().out
    assert "replay digests match (kuzu)" in out and (tmp_path / "qs" / "collegemsg-kuzu").is_dir()
