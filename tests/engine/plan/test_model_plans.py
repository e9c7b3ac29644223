"""Wrong plans that real local models wrote (tests/engine/plan/fixtures/model_plans.jsonl; each line says
which model, on which task, and the right answer): every one marked ``expect`` is refused by the units
check with that violation code. The share of collected wrong plans refused is reported in docs/plans.md."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.plan_corpus import unit_violations

FIXTURES = Path(__file__).parent / "fixtures" / "model_plans.jsonl"
PLANS = [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.mark.parametrize("case", [p for p in PLANS if p.get("expect")], ids=lambda p: p["id"])
def test_a_collected_wrong_plan_is_refused(case: dict[str, Any]) -> None:
    codes = [v["code"] for v in unit_violations(case["plan"])]
    assert case["expect"] in codes, codes
    for v in unit_violations(case["plan"]):
        assert v["legal"]["found"] and v["legal"]["wanted"]  # a repair turn can act on it
