"""Table 2 of the paper from a suite file: tasks by family, by answer kind, by split; probes; refusals
(a :class:`pipeline.table.Table`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tgms.pipeline.scoring.suite import Suite
from tgms.pipeline.table import Table, to_markdown
from tgms.pipeline.tasks.model import FAMILIES

LABEL = "tab:suite"  # Table 2's LaTeX label


def suite_stats(suite: Suite) -> dict[str, Any]:
    splits = suite.splits
    out: dict[str, Any] = {
        "dataset": suite.dataset,
        "seed": suite.seed,
        "test_sha256": suite.test_sha256,
    }
    for name, tasks in (("dev", splits.dev), ("test", splits.test)):
        out[name] = {
            "tasks": len(tasks),
            "by_family": dict(sorted(Counter(t.family for t in tasks).items())),
            "by_kind": dict(sorted(Counter(t.answer_kind for t in tasks).items())),
            "probes": {h: sum(1 for t in tasks if t.probe_half == h) for h in ("before", "current")},
        }
    allt = splits.dev + splits.test
    out["templates"] = dict(sorted(Counter(t.template for t in allt).items()))
    out["refused"] = len(suite.refused)
    out["dropped"] = sum(sum(v.values()) for v in suite.dropped.values())
    out["operators_used"] = list(suite.operators_used)
    return out


def table2(suite: Suite) -> Table:
    """Table 2 of one suite: tasks per split by family and answer kind, probes; templates, operators,
    refusals and dropped draws below."""
    st = suite_stats(suite)
    fams = [f for f in FAMILIES if any(f in st[s]["by_family"] for s in ("dev", "test"))]
    kinds = sorted({k for s in ("dev", "test") for k in st[s]["by_kind"]})
    rows = []
    for s in ("dev", "test"):
        row = st[s]
        probes = row["probes"]
        rows.append(
            [s, row["tasks"], *(row["by_family"].get(f, 0) for f in fams),
             *(row["by_kind"].get(k, 0) for k in kinds), f"{probes['before']}/{probes['current']}"]
        )  # fmt: skip
    header = ["split", "tasks", *fams, *kinds, "probes before/current"]
    templates, sha = st["templates"], st["test_sha256"]
    note = (
        f"{sum(not t.startswith('probe.') for t in templates)} semantic templates and "
        f"{sum(t.startswith('probe.') for t in templates)} probe templates; operators in oracle plans: "
        f"{len(st['operators_used'])} "
        f"({', '.join(st['operators_used'])}); refused (E_COST) records: {st['refused']}; dropped draws: "
        f"{st['dropped']}."
    )
    return Table.of(
        header,
        "l" + "r" * (len(header) - 1),
        rows,
        name="table2",
        label=LABEL,
        caption=f"Table 2 — {st['dataset']} suite (seed {st['seed']}, test SHA-256 {sha[:16]}…)",
        notes=(note,),
    )


def table2_markdown(suite: Suite) -> str:
    return to_markdown(table2(suite))
