"""The report's PNG plots (matplotlib, Agg backend: no display needed).

- ``accuracy_by_system.png``: accuracy per system (seeds pooled), one group of bars per suite and
  ablation, with 95% Wilson score intervals as error bars (the interval of a proportion from its
  numerator and denominator, which is all MLflow holds per cell; the paired differences are in Table 4);
- ``accuracy_by_model_size.png``: accuracy against the model's size in billions of parameters (log axis),
  one line per suite and system, with the same intervals.

A plot without data is not drawn: the function returns None and the report says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from engine.api import InvalidArgError
from pipeline.campaign.tables import system_key
from reports.read import ReportData
from reports.tables import by_system, scale_rows, wilson

DPI = 120


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as err:
        raise InvalidArgError('the report plots need matplotlib: pip install -e ".[campaign]"') from err
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _yerr(rows: list[dict[str, Any]]) -> list[list[float]]:
    low = [r["accuracy"] - r["ci"][0] if r["ci"] else 0.0 for r in rows]
    high = [r["ci"][1] - r["accuracy"] if r["ci"] else 0.0 for r in rows]
    return [low, high]


def accuracy_by_system(data: ReportData, out: Path) -> Path | None:
    rows = [r for r in by_system(data) if r["den"]]
    if not rows:
        return None
    plt = _pyplot()
    groups = list(dict.fromkeys((r["suite"], r["model"], r["ablation"]) for r in rows))
    systems = sorted({r["system"] for r in rows}, key=system_key)
    width = 0.8 / len(systems)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(groups) * max(1, len(systems)) / 2), 4.2))
    try:
        for i, s in enumerate(systems):
            xs, sel = [], []
            for g, key in enumerate(groups):
                match = [
                    r for r in rows if (r["suite"], r["model"], r["ablation"]) == key and r["system"] == s
                ]
                if match:
                    xs.append(g + (i - (len(systems) - 1) / 2) * width)
                    sel.append(match[0])
            if not sel:
                continue
            ax.bar(xs, [r["accuracy"] for r in sel], width, yerr=_yerr(sel), capsize=3, label=s)
            for x, r in zip(xs, sel, strict=True):
                ax.annotate(
                    f"{int(r['num'])}/{int(r['den'])}", (x, 0.01), ha="center", va="bottom", fontsize=7
                )
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [f"{s}\n{m}" + ("" if a == "none" else f"\n{a}") for s, m, a in groups], fontsize=8
        )
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("accuracy (correct / scored tasks)")
        ax.set_title("Accuracy by system (seeds pooled; 95% Wilson intervals)", fontsize=10)
        ax.legend(fontsize=8, loc="upper right")
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out / "accuracy_by_system.png"
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return path


def accuracy_by_model_size(data: ReportData, out: Path) -> Path | None:
    rows = [r for r in scale_rows(data) if r["den"] and r["params_b"] is not None]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    try:
        lines = sorted({(r["suite"], r["system"]) for r in rows}, key=lambda k: (k[0], system_key(k[1])))
        for suite, system in lines:
            sel = sorted(
                (r for r in rows if (r["suite"], r["system"]) == (suite, system)), key=lambda r: r["params_b"]
            )
            for r in sel:
                r["ci"] = wilson(r["num"], r["den"])
            label = system if len({s for s, _ in lines}) == 1 else f"{suite} / {system}"
            ax.errorbar(
                [r["params_b"] for r in sel], [r["accuracy"] for r in sel], yerr=_yerr(sel),
                marker="o", capsize=3, label=label,
            )  # fmt: skip
        sizes = sorted({r["params_b"] for r in rows})
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([f"{s:g}B" for s in sizes], fontsize=8)
        ax.minorticks_off()
        if len(sizes) == 1:
            ax.set_xlim(sizes[0] / 2, sizes[0] * 2)
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("model parameters (billions, log scale)")
        ax.set_ylabel("accuracy (correct / scored tasks)")
        ax.set_title("Accuracy by model size (ablation none; seeds pooled; 95% Wilson)", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out / "accuracy_by_model_size.png"
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return path
