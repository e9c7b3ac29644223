"""Fitting the cost guard's coefficients to measured times (:mod:`pipeline.bench.calibrate`), and writing
them as a cost-model file (the shipped one is ``engine/operators/cost_model.json``, package data).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from tgms.engine.api import COST_COEFFICIENTS, COST_MODEL_PATH

#: the shipped cost model, which ``--write-source`` rewrites in a git checkout
SHIPPED_MODEL = COST_MODEL_PATH
TERMS = tuple(COST_COEFFICIENTS)  # design-matrix columns; "base" is the constant column


def seconds(work: dict[str, float], coefs: dict[str, float]) -> float:
    return coefs["base"] + sum(coefs[k] * v for k, v in work.items())


def guarded_estimate(r: dict[str, Any], coefs: dict[str, float]) -> float:
    """What a guarded call is priced at: the larger of the pre-call and the run-time recheck estimate."""
    pre = seconds(r["work"], coefs)
    rw = r.get("recheck_work")
    return max(pre, seconds(rw, coefs)) if rw else pre


def nnls(a: np.ndarray, b: np.ndarray, max_iter: int | None = None) -> np.ndarray:
    """min ||a x - b|| subject to x >= 0 (Lawson–Hanson active set; scipy is not a dependency)."""
    m, n = a.shape
    x = np.zeros(n)
    passive = np.zeros(n, dtype=bool)
    tol = 10 * np.finfo(float).eps * np.abs(a).sum(axis=0).max(initial=1.0) * max(m, n)
    for _ in range(max_iter or 3 * n):
        grad = a.T @ (b - a @ x)
        if passive.all() or grad[~passive].max() <= tol:
            break
        passive[int(np.argmax(np.where(passive, -np.inf, grad)))] = True
        while True:
            s = np.zeros(n)
            s[passive] = np.linalg.lstsq(a[:, passive], b, rcond=None)[0]
            if s[passive].min() > 0:
                break
            neg = passive & (s <= 0)
            alpha = np.min(x[neg] / (x[neg] - s[neg]))
            x = x + alpha * (s - x)
            passive &= x > tol
            x[~passive] = 0.0
            if not passive.any():
                s = np.zeros(n)
                break
        x = s
    return x


def fit_relative(work: Sequence[dict[str, float]], measured: Sequence[float]) -> dict[str, float]:
    """Coefficients minimizing Σ((estimate - measured) / measured)², all >= 0 (NNLS).

    Kept for comparison only: relative error caps an underestimate's penalty at 1 but not an
    overestimate's, so this fit shrinks coefficients until most calls are underestimated (measured: 200
    of 321 by more than 3x), which admits slow calls. :func:`fit` is what ``--write`` uses."""
    a = _design(work)
    y = np.asarray(measured, dtype=float)
    rel = a / y[:, None]
    norms = np.linalg.norm(rel, axis=0)  # work terms span 1 .. 1e9: unit columns keep lstsq conditioned
    used = norms > 0
    x = np.zeros(len(TERMS))
    x[used] = nnls(rel[:, used] / norms[used], np.ones(len(y))) / norms[used]
    return {t: float(x[i]) if used[i] else COST_COEFFICIENTS[t] for i, t in enumerate(TERMS)}


def _design(work: Sequence[dict[str, float]]) -> np.ndarray:
    return np.array([[1.0 if t == "base" else w.get(t, 0.0) for t in TERMS] for w in work])


def fit(
    work: Sequence[dict[str, float]], measured: Sequence[float], iters: int = 200, ridge: float = 0.05
) -> dict[str, float]:
    """Coefficients minimizing Σ(log estimate - log measured)² + ridge·n·Σ(log c - log c_current)²: a 10x
    over- and a 10x underestimate cost the same, which is what a guard needs (false refusals and false
    admissions are both defects).

    The ridge keeps a term the calls barely identify near its current value instead of letting another,
    correlated term absorb it (without it ``state`` fell to 1e-26 while ``index_row`` took its share).
    Positivity by parametrizing c = exp(θ); Gauss-Newton with step halving, started from the current
    coefficients. A term no call uses keeps its current value."""
    a = _design(work)
    ly = np.log(np.asarray(measured, dtype=float))
    # numpy's stub cannot tell a reduction of a 2-D array over an axis from one to a scalar
    used: np.ndarray = (a > 0).any(axis=0)  # type: ignore[assignment]
    theta0 = np.log(np.array([COST_COEFFICIENTS[t] for t in TERMS]))
    lam = math.sqrt(ridge * len(ly))

    def residuals(th: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(a @ np.exp(th)) - ly, lam * (th - theta0)[used]])

    theta = theta0.copy()
    cur = float(np.sum(residuals(theta) ** 2))
    for _ in range(iters):
        c = np.exp(theta)
        est = a @ c
        jac = (a * c) / est[:, None]  # d log(est_i) / d θ_j
        jac[:, ~used] = 0.0
        jac = np.vstack([jac, lam * np.eye(len(TERMS))[used]])
        step = np.linalg.lstsq(jac, -residuals(theta), rcond=None)[0]
        t = 1.0
        while t > 1e-6:
            cand = np.clip(theta + t * step, -60.0, 5.0)  # 1e-26 .. 150 s per unit: keep exp finite
            new = float(np.sum(residuals(cand) ** 2))
            if new < cur:
                break
            t /= 2
        else:
            break
        converged = cur - new < 1e-12 * max(cur, 1.0)
        theta, cur = cand, new
        if converged:
            break
    c = np.exp(theta)
    return {t: float(c[i]) if used[i] else COST_COEFFICIENTS[t] for i, t in enumerate(TERMS)}


def fmt_coef(v: float) -> str:
    """Two significant digits in cost.py's style: 2e-7, 1.5e-6."""
    if v == 0:
        return "0.0"
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant.removesuffix('.0')}e{int(exp)}"


def cost_model_text(coefs: dict[str, float], rounded: bool = False) -> str:
    """A cost-model file's text: the coefficients (with ``rounded``, to two significant digits, as the
    shipped file has them: :func:`fmt_coef`), keys sorted, one per line (two calibrations diff line by
    line)."""
    out = {k: float(fmt_coef(v)) for k, v in coefs.items()} if rounded else coefs
    return json.dumps(out, indent=2, sort_keys=True) + "\n"
