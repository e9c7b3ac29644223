"""The mutation experiment (the paper's Table 5): how often a wrong claim stops verifying as supported.

For each class, up to ``per_class`` cases are drawn from the pool claims it applies to, without
replacement (each applicable claim at most once, in a seeded order; so ``cases <= pool``), and a case is
*detected* when the mutated claim no longer verifies ``supported``. False positives are the applicable
pool claims themselves not verifying supported. Everything is seeded by ``(seed, class)``, and the result
holds no timings, so the same store, suite, ``per_class`` and seed give byte-identical JSON.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from tgms.engine.api import OpContext, Store, VerifyConfig, canonical_json
from tgms.pipeline.mutations.base import Mutant, MutationClass
from tgms.pipeline.mutations.pool import Pool, PoolItem, build_pool, verdict
from tgms.pipeline.mutations.registry import all_classes
from tgms.pipeline.scoring.suite import Suite, Task, read_suite
from tgms.pipeline.table import Cell, Column, Table, to_markdown

FORMAT = "tgms-mutations/1"
MAX_EXAMPLES = 3  # undetected mutations kept per expected-detected class (to report verifier misses)


def suite_tasks(suite: Suite) -> list[Task]:
    """The dev and test tasks of a suite, in file order."""
    return [*suite.splits.dev, *suite.splits.test]


def _without(cls: MutationClass, mut: Mutant) -> tuple[Any, VerifyConfig] | None:
    if not cls.has_without:
        return None
    if mut.without is not None:
        return mut.without
    return mut.trace, VerifyConfig(cite_rule=False)


def draw(cls: MutationClass, items: list[PoolItem], n: int, rng: random.Random) -> list[Mutant]:
    """Up to ``n`` mutants, each pool claim used at most once (seeded order, without replacement): a class
    whose pool holds 16 claims has at most 16 cases, so "16/16" is never printed as "100/100"."""
    out: list[Mutant] = []
    order = list(range(len(items)))
    rng.shuffle(order)
    for idx in order:
        if len(out) >= n:
            break
        mut = cls.generate(items[idx], rng)
        if mut is not None:
            out.append(mut)
    return out


def run_class(cls: MutationClass, pool: Pool, n: int, seed: int, fp: dict[int, str]) -> dict[str, Any]:
    items = [it for it in pool.items if cls.applies(it)]
    mutants = draw(cls, items, n, random.Random(f"mutations:{seed}:{cls.name}"))
    detected = without = 0
    undetected: list[dict[str, Any]] = []
    for mut in mutants:
        got = verdict(mut.claim, mut.trace, items[0].ctx)
        if got != "supported":
            detected += 1
        elif cls.expect_detected and len(undetected) < MAX_EXAMPLES:
            undetected.append({"claim": mut.claim, "trace_steps": [r.id for r in mut.trace.steps]})
        w = _without(cls, mut)
        if w is not None and verdict(mut.claim, w[0], items[0].ctx, w[1]) != "supported":
            without += 1
    false_pos = sum(1 for it in items if fp[id(it)] != "supported")
    rec: dict[str, Any] = {
        "class": cls.name,
        "applies_to": cls.applies_to,
        "cases": len(mutants),
        "detected": detected,
        "detected_without_mechanism": without if cls.has_without else None,
        "false_positives": false_pos,
        "pool": len(items),
        "expect_detected": cls.expect_detected,
        "note": cls.note,
    }
    if undetected:
        rec["undetected_examples"] = undetected
    return rec


def run_experiment(
    store_dir: str | Path, suite: Suite | str | Path, per_class: int = 100, seed: int = 0
) -> dict[str, Any]:
    """Build the pool of ``suite`` (or of the suite file at that path) on the store and run every mutation
    class; the ``mutations.json`` body."""
    spec = suite if isinstance(suite, Suite) else read_suite(suite)
    with Store.open(store_dir, read_only=True) as store:
        ctx = OpContext(store)
        pool = build_pool(suite_tasks(spec), ctx, seed)
        fp = {id(it): verdict(it.claim, it.trace, ctx) for it in pool.items}
        records = [run_class(cls, pool, per_class, seed, fp) for cls in all_classes()]
        return {
            "format": FORMAT,
            "dataset": spec.dataset,
            "store_digest": store.digest(),
            "seed": seed,
            "per_class": per_class,
            "pool": {
                "tasks": pool.tasks_total,
                "tasks_kept": pool.tasks_kept,
                "claims": pool.sizes(),
                "false_positives": sum(1 for x in fp.values() if x != "supported"),
            },
            "classes": records,
        }


def table5(result: dict[str, Any]) -> Table:
    """Table 5: one row per class (cases, detected, without mechanism, false positives, pool)."""
    columns = (
        Column(name="mutation class"),
        Column(name="cases", align="r"),
        Column(name="detected", align="r"),  # better higher only where a class expects detection
        Column(name="w/o mechanism", align="r"),
        Column(name="false positives", align="r", lower_is_better=True),
        Column(name="pool", align="r"),
    )
    rows = []
    for r in result["classes"]:
        # detections and false positives keep what they are counted over (cases, the applicable pool)
        detected = Cell(text=str(r["detected"]), value=r["detected"], num=r["detected"], den=r["cases"])
        fp = Cell(text=str(r["false_positives"]), value=r["false_positives"], num=r["false_positives"],
                  den=r["pool"])  # fmt: skip
        rows.append((Cell.of(r["class"]), Cell.of(r["cases"]), detected,
                     Cell.of(r["detected_without_mechanism"]), fp, Cell.of(r["pool"])))  # fmt: skip
    sizes = ", ".join(f"{k} {v}" for k, v in result["pool"]["claims"].items())
    notes = [f"Pool: {result['pool']['tasks_kept']}/{result['pool']['tasks']} tasks; claims: {sizes}."]
    class_notes = [f"- {r['class']}: {r['note']}." for r in result["classes"] if r.get("note")]
    if class_notes:
        notes.append("\n".join(class_notes))
    return Table(
        name="table5",
        label="tab:mutations",
        caption=f"Table 5: verifier mutation classes ({result.get('dataset')}, seed {result.get('seed')}, "
        f"up to {result.get('per_class')} cases per class, each pool claim at most once). Detected = the "
        "mutated claim no longer verifies as supported; w/o mechanism = the mechanism under test disabled; "
        "pool = the claims the class applies to.",
        columns=columns,
        rows=tuple(rows),
        notes=tuple(notes),
    )


def table5_markdown(result: dict[str, Any]) -> str:
    """Table 5 as Markdown (:func:`table5`)."""
    return to_markdown(table5(result))


def write_outputs(result: dict[str, Any], out: str | Path) -> None:
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    (d / "mutations.json").write_text(canonical_json(result) + "\n")
    (d / "table5.md").write_text(table5_markdown(result))
