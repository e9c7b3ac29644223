"""Coverage of the analyst question set: ``python -m tests.analyst.coverage [--run] [--answers]``.

Without ``--run``: per dataset and class, how many questions have a plan (expressible) and how many lack a
capability, then the inexpressible ones with what they lack, and the capabilities each plan needs that
this engine does not declare yet. With ``--run`` it also builds the stores (as the test does), runs every
SQL and every runnable plan, and splits the planned questions into answered (plan = SQL), wrong (a plan
answer that differs) and failed (refused, error, or a capability missing on this branch). ``--answers``
prints each question's SQL answer (and the plan's) too. The table in docs/analyst_questions.md is this
script's output.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from tests.analyst import harness


def _row(label: str, c: Counter[str], run: bool) -> str:
    cells = [label, str(c["total"]), str(c["plan"]), str(c["null"])]
    if run:
        cells += [str(c["answered"]), str(c["wrong"]), str(c["failed"])]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="store_true", help="run every SQL and plan (builds the stores)")
    ap.add_argument("--answers", action="store_true", help="print each answer (implies --run)")
    ap.add_argument("--backend", default="duckdb")
    ap.add_argument("--set", default="all", choices=[*harness.SETS, "all"], help="which question set")
    args = ap.parse_args(argv)
    run = args.run or args.answers
    spec = harness.load_set(args.set)
    qs: list[dict[str, Any]] = spec["questions"]
    outcome: dict[str, str] = {}
    detail: dict[str, Any] = {}
    if run:
        import duckdb

        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        with tempfile.TemporaryDirectory() as tmp:
            made: dict[tuple[str, bool], tuple[Any, Path]] = {}
            try:
                for q in qs:
                    key = (q["dataset"], q.get("store") == "corrected")
                    if key not in made:
                        root = Path(tmp) / f"{key[0]}-{int(key[1])}"
                        root.mkdir()
                        made[key] = (harness.build(key[0], root, spec, key[1], args.backend), root)
                    store, root = made[key]
                    expected = harness.sql_answer(con, q, spec, root if key[1] else None)
                    detail[q["id"]] = {"sql": expected}
                    if q["plan"] is None:
                        continue
                    missing = harness.missing_capabilities(q["plan"])
                    if missing:
                        outcome[q["id"]] = "failed"
                        detail[q["id"]]["missing"] = missing
                        continue
                    try:
                        prefix = spec["sources"][q["dataset"]].get("uid_prefix", "n")
                        got = harness.run_plan(q, store, prefix)
                    except Exception as exc:  # a report, not a test: count it and go on
                        got = {"error": repr(exc)}
                    detail[q["id"]]["plan"] = got.get("answer", got)
                    if "answer" not in got or got.get("status") != "ok" or got.get("tainted"):
                        outcome[q["id"]] = "failed"  # a tainted answer rests on a page a producer cut
                    elif harness.same(got["answer"], expected):
                        outcome[q["id"]] = "answered"
                    else:
                        outcome[q["id"]] = "wrong"
            finally:
                for store, _ in made.values():
                    store.close()
        con.close()
    head = "| dataset / class | questions | plan | not expressible |"
    if run:
        head += " answered (= SQL) | wrong | failed or missing |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    per: dict[str, Counter[str]] = {}
    for q in qs:
        for key in (q["dataset"], f"{q['dataset']} / {q['class']}", f"set {q['set']}", "all"):
            c = per.setdefault(key, Counter())
            c["total"] += 1
            c["plan" if q["plan"] is not None else "null"] += 1
            if q["id"] in outcome:
                c[outcome[q["id"]]] += 1
    for ds in spec["sources"]:
        for cls in harness.CLASSES:
            key = f"{ds} / {cls}"
            if key in per:
                print(_row(key, per[key], run))
        if ds in per:
            print(_row(f"**{ds}**", per[ds], run))
    for name in harness.SETS:
        if f"set {name}" in per:
            print(_row(f"**{name} set**", per[f"set {name}"], run))
    print(_row("**all**", per["all"], run))
    print("\nNot expressible:")
    for q in qs:
        if q["plan"] is None:
            print(f"- {q['id']} ({q['dataset']}, {q['class']}): {' '.join(q['lacks'].split())}")
    need = Counter(m for q in qs if q["plan"] is not None for m in harness.missing_capabilities(q["plan"]))
    if need:
        print("\nCapabilities the plans use that this engine does not declare (questions using each):")
        for m, n in sorted(need.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"- {m}: {n}")
    bad = [q["id"] for q in qs if outcome.get(q["id"]) in ("failed", "wrong")]
    if bad and not args.answers:  # why, without asking for every answer
        print("\nFailed or wrong:")
        for qid in bad:
            print(qid, outcome[qid], json.dumps(detail.get(qid), default=str)[:300])
    if args.answers:
        print("\nAnswers:")
        for q in qs:
            print(q["id"], outcome.get(q["id"], "-"), json.dumps(detail.get(q["id"]), default=str)[:300])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
