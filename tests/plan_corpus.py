"""Every known-good plan the project has, and what the verifier's units check says of them (issue 24).

Sources:

- **templates**: every oracle plan the suite generator drafts (kept or not, before its gold is computed),
  for a dataset and seed: recorded by wrapping the generator's verifier call while a suite is built;
- **analyst**: every plan of the analyst question set (``tests/analyst/questions.yaml``);
- **docs**: every plan in ``docs/`` (the JSON files in ``docs/examples`` that are meant to be valid, and
  each fenced JSON block of the Markdown pages that is a plan).

``python -m tests.plan_corpus [--datasets collegemsg,synthetic,bitcoin-otc]`` prints a table: plans per
source and how many the units check refuses (a false refusal: every one of these plans is correct), and
lists the refusals. The tests (``tests/engine/plan/test_units_corpus.py``) assert the count is 0. It also
counts the **wrong** plans local models wrote (``tests/engine/plan/fixtures/model_plans.jsonl``) that the
units check refuses.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tgms.engine.api import VerifierConfig, build_store, verify_plan

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
ANALYST = ROOT / "tests" / "analyst" / "questions.yaml"
#: docs/examples files that show a plan the verifier refuses on purpose
INVALID_EXAMPLES = frozenset({"lesson1_invalid.json", "units_invalid.json"})
UNITS_ONLY = VerifierConfig(checks=frozenset({"units"}))
Plan = dict[str, Any]


def unit_violations(plan: Plan) -> list[dict[str, Any]]:
    """The units check's violations of ``plan`` (no store needed: units come from the registry)."""
    return [v for v in verify_plan(plan, None, UNITS_ONLY).to_dict()["violations"]]


def analyst_plans() -> Iterator[tuple[str, Plan]]:
    data = yaml.safe_load(ANALYST.read_text(encoding="utf-8"))
    for q in data["questions"]:
        if q.get("plan"):
            yield q["id"], q["plan"]


def _is_plan(x: Any) -> bool:
    return isinstance(x, dict) and isinstance(x.get("steps"), list) and "answer_spec" in x


def docs_plans() -> Iterator[tuple[str, Plan]]:
    for path in sorted((DOCS / "examples").glob("*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if path.name not in INVALID_EXAMPLES and _is_plan(raw):
            yield f"docs/examples/{path.name}", raw
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        for i, block in enumerate(re.findall(r"```json\n(.*?)```", text, flags=re.S)):
            try:
                raw = json.loads(block)
            except json.JSONDecodeError:
                continue
            if _is_plan(raw):
                yield f"docs/{page.name}#{i}", raw


MODEL_PLANS = ROOT / "tests" / "engine" / "plan" / "fixtures" / "model_plans.jsonl"


def model_plans() -> list[dict[str, Any]]:
    """The collected wrong model plans, each ``{id, source, gold, expect, plan}``."""
    lines = MODEL_PLANS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@contextmanager
def recording_drafts(into: list[tuple[str, Plan]]) -> Iterator[None]:
    """While active, every oracle plan the suite generator verifies is appended to ``into``."""
    from tgms.pipeline.tasks import gold

    real = gold.verify_plan

    def record(plan: Plan, *args: Any, **kw: Any) -> Any:
        into.append((str(plan.get("plan_id")), plan))
        return real(plan, *args, **kw)

    gold.verify_plan = record  # type: ignore[assignment]
    try:
        yield
    finally:
        gold.verify_plan = real  # type: ignore[assignment]


def template_plans(dataset: str, seed: int = 0, source: Path | None = None) -> list[tuple[str, Plan]]:
    """Every oracle plan drafted while building the suite of ``dataset`` (a store built here)."""
    from tgms.pipeline.tasks.build import build_suite

    found: list[tuple[str, Plan]] = []
    with tempfile.TemporaryDirectory(prefix="tgms-corpus-") as tmp:
        store = Path(tmp) / dataset
        kw: dict[str, Any] = {"events": 50_000, "nodes": 1000, "seed": seed} if dataset == "synthetic" else {}
        build_store(dataset, store, source=source, **kw).close()
        with recording_drafts(found):
            build_suite(store, dataset, seed, crosscheck=False)  # drafts only: the oracles decide no draft
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.plan_corpus", description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default="collegemsg,synthetic", help="suites to draft (comma-separated)")
    data = ROOT.parent / "shared" / "data"
    p.add_argument("--bitcoin", type=Path, default=data / "soc-sign-bitcoinotc.csv", help="bitcoin-otc file")
    args = p.parse_args(argv)
    sources: dict[str, list[tuple[str, Plan]]] = {
        "analyst": list(analyst_plans()),
        "docs": list(docs_plans()),
    }
    for ds in [d for d in args.datasets.split(",") if d]:
        src = args.bitcoin if ds == "bitcoin-otc" else None
        print(f"drafting the {ds} suite ...", file=sys.stderr)
        sources[f"templates:{ds}"] = template_plans(ds, source=src)
    print("| source | plans | refused by units |\n|---|---:|---:|")
    refusals = []
    for name, plans in sources.items():
        bad = [(pid, v) for pid, plan in plans for v in unit_violations(plan)]
        refusals += [(name, pid, v) for pid, v in bad]
        print(f"| {name} | {len(plans)} | {len({pid for pid, _ in bad})} |")
    for name, pid, v in refusals:
        print(f"- {name} {pid}: {v['code']} {v['message']}")
    wrong = model_plans()
    caught = [w["id"] for w in wrong if unit_violations(w["plan"])]
    print(f"\nwrong model plans refused by units: {len(caught)} of {len(wrong)} ({', '.join(caught)})")
    return 1 if refusals else 0


if __name__ == "__main__":
    sys.exit(main())
