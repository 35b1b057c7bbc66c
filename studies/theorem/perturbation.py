"""The softmax perturbation bound ``||softmax(x + h) - softmax(x)||_1 <= 2 tanh(osc(h)/4)``
(proofs/softmax_perturbation.md), checked in balls on random, adversarial and sharp cases."""

from __future__ import annotations

import math

import numpy as np
from flint import arb

from softrank.fastpath.float64 import rowsoftmax64
from softrank.validated.outcome import Outcome
from softrank.validated.softmax_perturbation import check_softmax_perturbation


def _balls(v) -> list[arb]:
    return [arb(float(x)) for x in v]


def _ratio(lhs: arb, rhs: arb) -> float:
    return float((lhs / rhs).mid())


class _Tally:
    """Outcome counts over the checked cases and the worst ratio lhs / rhs seen."""

    def __init__(self):
        self.counts = {o.value: 0 for o in Outcome}
        self.worst = 0.0
        self.cases = 0

    def check(self, x, y, track_worst: bool = True):
        """Check the bound for the exact floats x and y = x + h (y formed in float)."""
        chk, lhs, rhs = check_softmax_perturbation(_balls(x), _balls(y))
        self.counts[chk.outcome.value] += 1
        self.cases += 1
        if track_worst:
            self.worst = max(self.worst, _ratio(lhs, rhs))
        return chk, lhs, rhs


def _random_cases(tally: _Tally, rng, count: int) -> None:
    for _ in range(count):
        n = int(rng.integers(2, 64))
        sx, sh = 10 ** rng.uniform(-2, 1.5), 10 ** rng.uniform(-3, 1.5)
        # x + h is formed in float; the check uses the exact float x and the exact float x + h.
        x, h = rng.standard_normal(n) * sx, rng.standard_normal(n) * sh
        tally.check(x, np.asarray(x) + np.asarray(h))


def _neg_ratio(z, n):
    """Minus the float ratio ||softmax(x + h) - softmax(x)||_1 / (2 tanh(osc(h)/4)), z = (x, h)."""
    x, h = z[:n], z[n:]
    osc = h.max() - h.min()
    if osc <= 1e-12:
        return 0.0
    return -np.abs(rowsoftmax64((x + h)[None])[0] - rowsoftmax64(x[None])[0]).sum() / (2 * math.tanh(osc / 4))


def _adversarial_cases(tally: _Tally, rng, count: int) -> None:
    """Two-group configurations, every other one locally maximised (Nelder-Mead on the float ratio)."""
    from scipy.optimize import minimize

    for k in range(count):
        n = int(rng.integers(2, 12))
        a = 10 ** rng.uniform(-1, 1.3)
        grp = rng.random(n) < 0.5
        grp[0], grp[-1] = True, False
        h = np.where(grp, a / 2, -a / 2) + rng.normal(0, 0.05 * a, n)
        x = np.where(grp, -a / 4, a / 4) + rng.normal(0, 0.3, n)
        if k % 2:
            res = minimize(_neg_ratio, np.concatenate([x, h]), args=(n,), method="Nelder-Mead",
                           options={"maxiter": 400})
            x, h = res.x[:n], res.x[n:]
        tally.check(x, np.asarray(x) + np.asarray(h))


def _sharpness_sequence(tally: _Tally) -> list[dict]:
    """x = (-a/4 + delta, a/4), h = (a/2, -a/2): equality at delta = 0 (not certifiable), ratio
    1 - O(delta^2) as delta -> 0."""
    seq = []
    for a in (1.0, 4.0):
        for delta in (0.5, 0.1, 0.01, 1e-3, 1e-4):
            x = np.array([-a / 4 + delta, a / 4])
            h = np.array([a / 2, -a / 2])
            chk, lhs, rhs = tally.check(x, x + h, track_worst=False)
            seq.append({"a": a, "delta": delta, "ratio": _ratio(lhs, rhs), "outcome": chk.outcome.value})
    return seq


def perturbation_suite(n_random: int = 400, n_adversarial: int = 200, seed: int = 0) -> dict:
    """Random and adversarial (x, h), checked in balls; a sharpness sequence whose ratio -> 1."""
    rng = np.random.default_rng(seed)
    tally = _Tally()
    _random_cases(tally, rng, n_random)
    _adversarial_cases(tally, rng, n_adversarial)
    seq = _sharpness_sequence(tally)
    return {"cases": tally.cases, "counts": tally.counts, "max_ratio_random_adversarial": tally.worst,
            "sharpness_sequence": seq, "sharpness_final_ratio": seq[-1]["ratio"]}
