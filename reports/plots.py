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

from tgms.engine.api import InvalidArgError
from tgms.pipeline.campaign.tables import system_key
from tgms.reports.read import ReportData
from tgms.reports.tables import by_system, scale_rows, wilson

DPI = 120
DODGE = 1.06  # multiplicative x offset between the lines of the size plot (log axis)


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
    colour = {s: f"C{i % 10}" for i, s in enumerate(systems)}  # one colour per system across groups
    members = {g: sorted((r for r in rows if (r["suite"], r["model"], r["ablation"]) == g),
                         key=lambda r: system_key(r["system"])) for g in groups}  # fmt: skip
    width = 0.8 / max(len(m) for m in members.values())
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * sum(len(m) for m in members.values())), 4.2))
    try:
        labelled: set[str] = set()
        for g, key in enumerate(groups):
            sel = members[key]
            xs = [g + (j - (len(sel) - 1) / 2) * width for j in range(len(sel))]  # centred on the tick
            for x, r in zip(xs, sel, strict=True):
                name = r["system"]
                ax.bar([x], [r["accuracy"]], width, yerr=_yerr([r]), capsize=3, color=colour[name],
                       label=None if name in labelled else name)  # fmt: skip
                labelled.add(name)
                top = r["ci"][1] if r["ci"] else r["accuracy"]  # above the interval: legible at 0 too
                ax.annotate(f"{int(r['num'])}/{int(r['den'])}", (x, top + 0.015), ha="center", va="bottom",
                            fontsize=7, color=colour[name])  # fmt: skip
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [f"{s}\n{m}" + ("" if a == "none" else f"\n{a}") for s, m, a in groups], fontsize=8
        )
        ax.set_ylim(0, 1.2)  # the band above 1 holds the legend, clear of every bar and interval
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_ylabel("accuracy (correct / scored tasks)")
        ax.set_title("Accuracy by system (seeds pooled; 95% Wilson intervals)", fontsize=10)
        handles, labels = ax.get_legend_handles_labels()
        order = sorted(range(len(labels)), key=lambda i: system_key(labels[i]))
        ax.legend([handles[i] for i in order], [labels[i] for i in order], fontsize=8, loc="upper center",
                  ncol=len(labels), frameon=False)  # fmt: skip
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
        for j, (suite, system) in enumerate(lines):
            sel = sorted(
                (r for r in rows if (r["suite"], r["system"]) == (suite, system)), key=lambda r: r["params_b"]
            )
            for r in sel:
                r["ci"] = wilson(r["num"], r["den"])
            label = system if len({s for s, _ in lines}) == 1 else f"{suite} / {system}"
            dodge = DODGE ** (j - (len(lines) - 1) / 2)  # side by side, so intervals at one size do not hide
            ax.errorbar(
                [r["params_b"] * dodge for r in sel], [r["accuracy"] for r in sel], yerr=_yerr(sel),
                marker="o", capsize=3, label=label,
            )  # fmt: skip
        sizes = sorted({r["params_b"] for r in rows})
        ax.set_xscale("log")
        ax.set_xticks(sizes)
        ax.set_xticklabels([f"{s:g}B" for s in sizes], fontsize=8)
        ax.minorticks_off()
        ax.set_xlim(sizes[0] / 1.8, sizes[-1] * 1.8)
        ax.set_ylim(0, 1.2)  # the band above 1 holds the legend
        ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
        ax.set_xlabel("model parameters (billions, log scale)")
        ax.set_ylabel("accuracy (correct / scored tasks)")
        ax.set_title("Accuracy by model size (ablation none; seeds pooled; 95% Wilson)", fontsize=10)
        ax.legend(fontsize=8, loc="upper center", ncol=min(4, len(lines)), frameon=False)
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out / "accuracy_by_model_size.png"
        fig.savefig(path, dpi=DPI)
    finally:
        plt.close(fig)
    return path
