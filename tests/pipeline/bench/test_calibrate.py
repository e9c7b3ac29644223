"""tgms.pipeline.bench.calibrate: the NNLS fit recovers known coefficients, the literal rewrite keeps the
layout, a tiny end-to-end run (``tgms bench calibrate``) reports every operator, rewrites no source and
saves its fit as a cost model that ``TGMS_COST_MODEL`` puts in force; a bad model file is a structured
error."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from tgms.engine.errors import InvalidArgError
from tgms.engine.operators.cost import COEFFICIENTS
from tgms.engine.operators.registry import OPERATOR_ORDER
from tgms.pipeline.bench import calibrate_fit
from tgms.pipeline.cli.main import main


@pytest.fixture(scope="module")
def calib() -> ModuleType:
    return calibrate_fit


def test_nnls_matches_unconstrained_solution_when_it_is_nonnegative(calib: ModuleType) -> None:
    rng = np.random.default_rng(1)
    a = rng.random((40, 4))
    x = np.array([0.5, 2.0, 0.0, 1.0])
    assert np.allclose(calib.nnls(a, a @ x), x, atol=1e-9)


def test_nnls_clamps_a_negative_coefficient(calib: ModuleType) -> None:
    rng = np.random.default_rng(2)
    a = rng.random((50, 3))
    b = a @ np.array([1.0, -0.5, 2.0])
    x = calib.nnls(a, b)
    assert (x >= 0).all() and x[1] == 0
    # optimality (KKT): zero gradient on the free variables, non-positive on the clamped one
    grad = a.T @ (b - a @ x)
    assert np.allclose(grad[x > 0], 0, atol=1e-9) and (grad[x == 0] <= 1e-9).all()


def test_fit_recovers_known_coefficients(calib: ModuleType) -> None:
    rng = np.random.default_rng(3)
    truth = {
        "base": 3e-4,
        "scan_row": 1.5e-7,
        "row_out": 5e-6,
        "state": 2e-6,
        "triple": 4e-8,
        "bucket_row": 9e-8,
    }
    work, measured = [], []
    for _ in range(300):
        # sparse rows with magnitudes over several decades, like real calls (times from 0.3 ms to ~10 s)
        terms = rng.choice([t for t in truth if t != "base"], int(rng.integers(1, 4)), replace=False)
        w = {str(t): float(10 ** rng.uniform(1, 7.5)) for t in terms}
        t_true = truth["base"] + sum(truth[k] * v for k, v in w.items())
        work.append(w)
        measured.append(t_true * (1 + rng.normal(0, 0.01)))  # 1% timing noise
    got = calib.fit(work, measured, ridge=0.0)  # no pull towards the shipped values
    for k, v in truth.items():
        assert got[k] == pytest.approx(v, rel=0.05), k


def test_fit_keeps_a_coefficient_no_call_uses(calib: ModuleType) -> None:
    work = [{"scan_row": 1e5}, {"scan_row": 1e6}, {"row_out": 100.0}]
    measured = [0.02, 0.2, 4e-4]
    assert calib.fit(work, measured)["triple"] == COEFFICIENTS["triple"]


def test_the_cost_model_is_a_packaged_data_file(calib: ModuleType, tmp_path: Path) -> None:
    """The shipped coefficients are package data (no source edited to calibrate), read whole and in the
    terms' order; a written model round-trips to two significant digits; a bad or partial one is refused."""
    from tgms.engine.operators import cost

    assert (
        calib.SHIPPED_MODEL.name == "cost_model.json"
        and calib.SHIPPED_MODEL.parent == Path(cost.__file__).parent
    )
    assert list(COEFFICIENTS) == list(cost.TERMS)
    assert cost.load_cost_model(calib.SHIPPED_MODEL, complete=True) == COEFFICIENTS
    new = {k: v * 1.2345 for k, v in COEFFICIENTS.items()}
    path = tmp_path / "model.json"
    path.write_text(calib.cost_model_text(new, rounded=True), encoding="utf-8")
    assert cost.load_cost_model(path, complete=True) == {k: float(calib.fmt_coef(v)) for k, v in new.items()}
    assert calib.fmt_coef(2.4690e-7) == "2.5e-7" and calib.fmt_coef(2e-4) == "2e-4"
    path.write_text(json.dumps({"base": 1e-4}), encoding="utf-8")
    with pytest.raises(InvalidArgError, match="lacks"):
        cost.load_cost_model(path, complete=True)
    assert cost.load_cost_model(path) == {"base": 1e-4}  # TGMS_COST_MODEL may set a few over the shipped


def test_end_to_end_tiny_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = calibrate_fit.SHIPPED_MODEL.read_text(encoding="utf-8")
    out_json = tmp_path / "calib.json"
    argv = ["bench", "calibrate", "--scales", "2000", "--reps", "1", "--calls-per-op", "3"]
    model = tmp_path / "models" / "cost_model.json"
    assert main([*argv, "--work", str(tmp_path), "--json", str(out_json), "--write", str(model)]) == 0
    ran = capsys.readouterr()
    for op in OPERATOR_ORDER:
        assert f"| {op} |" in ran.out, op
    assert "false admissions" in ran.out and out_json.exists()
    # --write FILE saves the fit as this machine's cost model and leaves the shipped source alone
    assert calibrate_fit.SHIPPED_MODEL.read_text(encoding="utf-8") == shipped
    assert f"export TGMS_COST_MODEL={model}" in ran.err
    fitted = json.loads(model.read_text())
    assert set(fitted) == set(COEFFICIENTS) and fitted == json.loads(out_json.read_text())["new"]
    # ... which TGMS_COST_MODEL puts in force for the next estimate (the shipped values kept apart)
    from tgms.engine.operators import cost

    est = cost.CostEstimate({"scan_row": 1e6, "row_out": 10.0})
    shipped = est.seconds
    monkeypatch.setenv(cost.COST_MODEL_ENV, str(model))
    assert est.seconds == pytest.approx(fitted["base"] + fitted["scan_row"] * 1e6 + fitted["row_out"] * 10)
    assert cost.COEFFICIENTS == COEFFICIENTS and (est.seconds != shipped or fitted == COEFFICIENTS)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"scan": 1e-7}', "unknown coefficient 'scan'"),
        ('{"scan_row": -1}', "scan_row must be a positive number"),
        ("[1, 2]", "a non-empty JSON object"),
        ("not json", "cannot read a JSON cost model"),
    ],
)
def test_a_bad_cost_model_is_a_structured_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str, says: str
) -> None:
    from tgms.engine.errors import InvalidArgError
    from tgms.engine.operators import cost

    bad = tmp_path / "bad.json"
    bad.write_text(content)
    monkeypatch.setenv(cost.COST_MODEL_ENV, str(bad))
    with pytest.raises(InvalidArgError, match=says) as err:
        _ = cost.CostEstimate({"scan_row": 1.0}).seconds
    assert "TGMS_COST_MODEL=" in err.value.message
