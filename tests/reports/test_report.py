"""``tgms report`` on a campaign logged to a real SQLite MLflow store (tests/reports/conftest.py): the
tables hold the numbers counted independently from the records' labels, the LaTeX is structurally sound,
the PNGs are real images, and an experiment without cells says so instead of drawing empty tables."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.pipeline.campaign._records import SYSTEMS, expected, label
from tests.reports.conftest import BIG, SMALL, Logged
from tgms.pipeline.cli.main import main
from tgms.pipeline.scoring.bootstrap import paired_bootstrap

TABLES = ("table2", "table3", "table4", "table5", "table6", "ops")


def report(capsys: pytest.CaptureFixture[str], out: Path, uri: str, *which: str) -> dict:
    code = main(["report", *which, "--out", str(out), "--tracking-uri", uri])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def rows(md: str, first: str) -> list[list[str]]:
    """The body rows of every pipe table in ``md`` whose first cell is ``first``."""
    out = []
    for line in md.splitlines():
        if line.startswith("| "):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == first:
                out.append(cells)
    return out


def header(md: str, first: str) -> list[str]:
    for line in md.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] == first and "accuracy" in line + "diff" + "params":
            return cells
    raise AssertionError(f"no header starting with {first!r}")


def check_latex(tex: str) -> int:
    """Balanced environments and braces; every tabular row has as many cells as the column spec. Returns
    the number of tabulars."""
    assert tex.count("\\begin{table}") == tex.count("\\end{table}")
    assert tex.count("\\begin{tabular}") == tex.count("\\end{tabular}")
    plain = tex.replace("\\{", "").replace("\\}", "")
    depth = 0
    for ch in plain:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, "a closing brace before its opening one"
    assert depth == 0, "unbalanced braces"
    tabulars = re.findall(r"\\begin\{tabular\}\{([lr]+)\}\n(.*?)\\end\{tabular\}", tex, re.S)
    for spec, body in tabulars:
        for line in body.splitlines():
            if line.endswith("\\\\"):
                assert len(re.findall(r"(?<!\\)&", line)) == len(spec) - 1, line
    return len(tabulars)


def png_ok(path: Path) -> None:
    import matplotlib.image as mpimg

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    img = mpimg.imread(path)
    assert img.shape[0] > 100 and img.shape[1] > 100


def pooled_accuracy(logged: Logged, system: str, seeds: tuple[int, ...]) -> str:
    right = scored = 0
    for s in seeds:
        r, n = expected(logged.tasks, system, s)
        right, scored = right + r, scored + n
    return f"{right / scored:.3f} ({right}/{scored})"


def independent_pair(logged: Logged, a: str, b: str, seed: int) -> dict:
    common = sorted(t.id for t in logged.tasks if "infra" not in (label(t.id, a, seed), label(t.id, b, seed)))
    sa = [1.0 if label(t, a, seed) == "right" else 0.0 for t in common]
    sb = [1.0 if label(t, b, seed) == "right" else 0.0 for t in common]
    return {**paired_bootstrap(sa, sb, resamples=10_000, seed=0), "n": len(common)}


def test_report_of_one_campaign(logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rep"
    summary = report(capsys, out, logged.uri, "--run-id", logged.parent_a)
    assert summary["parents"] == [logged.parent_a] and summary["cells"] == 9
    for stem in TABLES:
        assert (out / f"{stem}.md").is_file() and (out / f"{stem}.tex").is_file()
        assert check_latex((out / f"{stem}.tex").read_text()) >= 1, stem

    t4 = (out / "table4.md").read_text()
    cols = header(t4, "suite")
    acc = cols.index("accuracy")
    for system in SYSTEMS:
        (row,) = [
            r for r in rows(t4, "collegemsg") if r[2] == "none" and r[3] == system and len(r) == len(cols)
        ]
        assert row[1] == SMALL and row[4] == "0,1"
        assert row[acc] == pooled_accuracy(logged, system, (0, 1)), system
    (gated_off,) = [r for r in rows(t4, "collegemsg") if r[2] == "no_gating" and len(r) == len(cols)]
    labs = [label(t.id, "tgms", 0) for t in logged.tasks]
    wrong, emitted = labs.count("wrong"), labs.count("wrong") + labs.count("right")
    assert gated_off[cols.index("unsupported")] == f"{wrong / emitted:.3f} ({wrong}/{emitted})"

    pairs = [r for r in rows(t4, "collegemsg") if len(r) == 10]
    assert len(pairs) == 12  # 6 pairs of 4 systems x 2 seeds; the lone ablation cell has none
    want = independent_pair(logged, "tgms", "vector_rag", 1)
    (row,) = [r for r in pairs if r[2] == "1" and r[4] == "tgms − vector_rag"]
    assert row[5] == f"{want['diff']:+.3f}"
    assert row[6] == f"[{want['ci_low']:+.3f}, {want['ci_high']:+.3f}]" and row[7] == str(want["n"])
    only_a, only_b = (int(x) for x in row[8].split(" / "))  # McNemar beside the CI
    assert only_a - only_b == round(want["diff"] * want["n"]) and 0.0 <= float(row[9]) <= 1.0

    t2 = (out / "table2.md").read_text()
    dev = rows(t2, "dev")[0]
    assert dev[1] == str(len(logged.tasks)) and t2.startswith("Table 2 — collegemsg suite")
    assert "\\caption{Table 2 ---" in (out / "table2.tex").read_text()
    t3 = (out / "table3.md").read_text()
    for system in SYSTEMS:
        (row,) = rows(t3, system)
        assert row[3] == ("3" if system == "tgms" else "2")
    assert "gating=true" in rows(t3, "tgms")[0][2] and "no_gating: unsupported claims" in t3
    t5 = (out / "table5.md").read_text()
    for c in logged.mutations["classes"]:
        (row,) = rows(t5, c["class"])
        assert row[1:3] == [str(c["cases"]), str(c["detected"])]
    t6 = (out / "table6.md").read_text()
    (row,) = rows(t6, "collegemsg")
    assert row[1:3] == [SMALL, "0.5"]
    assert row[3] == pooled_accuracy(logged, "tgms", (0, 1))
    ops = (out / "ops.md").read_text()
    timed = [r for r in logged.ops if "p50_ms" in r]
    for r in timed:
        assert any(x[1] == r["case"] and x[3] == str(r["p50_ms"]) for x in rows(ops, "10,000")), r["case"]

    png_ok(out / "accuracy_by_system.png")
    png_ok(out / "accuracy_by_model_size.png")
    index = (out / "report.md").read_text()
    assert all(f"![{n}]" in index for n in ("accuracy by system", "accuracy by model size"))


def test_report_of_an_experiment_spans_its_parents(
    logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "exp"
    summary = report(capsys, out, logged.uri, "--experiment", "paper")
    assert summary["parents"] == [logged.parent_a, *logged.parents_b] and summary["cells"] == 11
    t4 = (out / "table4.md").read_text()
    # the big model's two systems ran in two parents (one per sweep job): compared from their records
    want = independent_pair(logged, "tgms", "vector_rag", 0)
    (row,) = [r for r in rows(t4, "collegemsg") if len(r) == 10 and r[1] == BIG]
    assert row[4] == "tgms − vector_rag" and row[5] == f"{want['diff']:+.3f}"
    assert row[6] == f"[{want['ci_low']:+.3f}, {want['ci_high']:+.3f}]"
    t6 = (out / "table6.md").read_text()
    got = rows(t6, "collegemsg")
    assert [r[1:3] for r in got] == [[SMALL, "0.5"], [BIG, "7"]]  # ordered by size
    assert got[1][3] == pooled_accuracy(logged, "tgms", (0,)) and got[1][5] == "—"  # no static_graph_rag
    png_ok(out / "accuracy_by_model_size.png")


def test_empty_experiment_says_so(logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "empty"
    report(capsys, out, logged.uri, "--experiment", "empty")
    for stem in TABLES:
        md = (out / f"{stem}.md").read_text()
        assert len(md.strip().splitlines()) == 1 and "no data" in md, stem
        check_latex((out / f"{stem}.tex").read_text())
    assert not list(out.glob("*.png"))
    assert "not drawn (no data)" in (out / "report.md").read_text()


def test_bad_selection_is_one_structured_error(
    logged: Logged, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child = next(iter(logged.cells))
    cases = [
        (["--experiment", "nope"], "E_NOT_FOUND"),
        (["--run-id", "0" * 32], "E_NOT_FOUND"),
        (["--run-id", logged.parents_b[0], "--experiment", "paper"], "E_SCHEMA"),
    ]
    missing = f"sqlite:///{tmp_path / 'nowhere' / 'mlflow.db'}"
    assert (
        main(["report", "--experiment", "paper", "--out", str(tmp_path / "z"), "--tracking-uri", missing])
        != 0
    )
    assert json.loads(capsys.readouterr().err.strip().splitlines()[-1])["error"] == "E_NOT_FOUND"
    assert not (tmp_path / "nowhere").exists()  # reading never creates a store
    for which, code in cases:
        assert main(["report", *which, "--out", str(tmp_path / "x"), "--tracking-uri", logged.uri]) != 0
        err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
        assert err["error"] == code, (which, err)
    assert child  # a cell run id is refused as a parent:
    from mlflow.tracking import MlflowClient

    runs = MlflowClient(logged.uri).search_runs(
        [MlflowClient(logged.uri).get_experiment_by_name("paper").experiment_id], "tags.`tgms.kind` = 'cell'"
    )
    assert main(
        [
            "report",
            "--run-id",
            runs[0].info.run_id,
            "--out",
            str(tmp_path / "y"),
            "--tracking-uri",
            logged.uri,
        ]
    )
    err = json.loads(capsys.readouterr().err.strip().splitlines()[-1])
    assert err["error"] == "E_INVALID_ARG" and err["details"]["parent"]
