"""No known-good plan is refused by the units check (issue 24: 0 false refusals, measured): every plan of
the analyst question set, every plan in docs/, and every oracle plan the CollegeMsg suite generator drafts
(kept or dropped). ``python -m tests.plan_corpus`` prints the same count for more datasets."""

from __future__ import annotations

import pytest

from tests.plan_corpus import analyst_plans, docs_plans, template_plans, unit_violations


def test_no_analyst_or_docs_plan_is_refused() -> None:
    plans = [*analyst_plans(), *docs_plans()]
    assert len(plans) >= 100
    refused = {pid: unit_violations(p) for pid, p in plans if unit_violations(p)}
    assert refused == {}


@pytest.mark.slow
def test_no_template_oracle_plan_is_refused() -> None:
    plans = template_plans("collegemsg")
    assert len(plans) >= 300  # every draft, before its gold decides whether it is kept
    refused = {pid: unit_violations(p) for pid, p in plans if unit_violations(p)}
    assert refused == {}
