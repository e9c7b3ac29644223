"""``tgms bench campaign``'s smoke figure (d): part selection and its table row (issue 26). The smoke run
itself is minutes of CPU: it is measured by the benchmark, never in a test."""

from __future__ import annotations

import argparse

import pytest

from tgms.pipeline.bench.campaign_bench import GOALS, _parts, table


def test_parts_are_letters_of_abcd_sorted_and_deduplicated() -> None:
    assert _parts("dd") == "d" and _parts(" DA ") == "ad"
    for bad in ("", "e", "a,b"):
        with pytest.raises(argparse.ArgumentTypeError, match="--parts takes letters of 'abcd'"):
            _parts(bad)


def test_the_smoke_rows_show_both_caches_the_goal_and_a_failed_exit() -> None:
    data = {
        "when": "2026-12-05T10:00Z",
        "smoke": {"empty": {"seconds": 71.25, "exit_code": 0}, "warm": {"seconds": 30.0, "exit_code": 3}},
    }
    text = table(data)
    assert "(d) smoke, empty cache" in text and "71.2 s" in text
    assert f"≤ {GOALS['smoke_empty_cache_s']:g} s" in text
    assert "(d) smoke, warm cache" in text and "30.0 s (exit 3)" in text
    assert "bundle digest" not in text  # no fan-out figure was measured
