"""Differential checking: on small records (m, N up to 12) every check is decided by the
binary64 route, by Arb at random working precisions from 30 to 200 bits, and, where the operator
is rational (constant logit rows give A = J/N exactly), in exact rationals.  No route may prove
what another refutes; the exact decision, where there is one, agrees with every certain outcome.
200 records by default, 2,000 with ``-m slow``; the counts per route are printed."""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from helpers import rowsoftmax_float
from softrank.validated import precision
from softrank.validated.contractive_decoder import check_contractive_decoder
from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.outcome import Outcome
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure
from softrank.validated.upper_witness import check_upper_witness

PREC_NAMES = ("singular_values", "enclosure")  # the named precisions of Lemmas E, U, P and D's Arb work


def _case(rng: random.Random):
    """A random small record: logits, eps, a witness near the boundary, decoder rows and claims."""
    m, n = rng.randint(2, 12), rng.randint(2, 12)
    nrng = np.random.default_rng(rng.randrange(2**32))
    rational = rng.random() < 0.25
    if rational:  # constant rows: A = J/N exactly
        h = np.repeat(nrng.normal(size=(m, 1)) * 3, n, axis=1)
    else:
        h = nrng.normal(size=(m, n)) * rng.choice([0.5, 2.0, 6.0, 20.0])
    a = rowsoftmax_float(h)
    eps = Fraction(rng.choice([1, 2, 3, 5, 7, 10, 20, 30, 50]), 100)
    u, s, vt = np.linalg.svd(a)
    k = rng.randint(0, min(m, n))
    x, y = u[:, :k] * s[:k], vt[:k].T.copy()
    if k and rng.random() < 0.5:  # nudge the witness so that its error sits near eps
        x = x * (1 + rng.choice([-1, 1]) * 10.0 ** rng.randint(-16, -6))
    p = rng.randint(1, min(m, n))
    rows = np.array(sorted(rng.sample(range(m), p)), dtype=np.int64)
    w = np.linalg.pinv(a[rows])
    return dict(h=h, a=a, eps=eps, x=x, y=y, rows=rows, w=w, lower=rng.randint(1, min(m, n)), rational=rational)


def _decide(case, strict: bool, prec: int | None) -> dict[str, Outcome]:
    enc = rowsoftmax_enclosure(logits_balls(logits=case["h"]), **({"prec_bits": prec} if prec else {}))
    e = case["eps"]
    return {
        "upper": check_upper_witness(enc, case["x"], case["y"], e, strict=strict).outcome,
        "frobenius": check_frobenius_tail(enc, e, case["lower"], strict=strict).outcome,
        "projected": check_projected_tail(enc, e, case["lower"], case["rows"], case["w"], strict=strict).outcome,
        "decoder": check_contractive_decoder(enc, e, case["rows"], case["w"], strict=strict).outcome,
    }


def _exact(case) -> dict[str, bool]:
    """The truth of each inequality for A = J/N, in rationals (binary64 inputs read exactly)."""
    m, n = case["a"].shape
    e, a_ij = case["eps"], Fraction(1, n)
    X = [[Fraction(v) for v in r] for r in case["x"].tolist()]
    Y = [[Fraction(v) for v in r] for r in case["y"].tolist()]
    err = max(sum(abs(a_ij - sum((xi * yj for xi, yj in zip(X[i], Y[j])), Fraction(0))) for j in range(n))
              for i in range(m))
    W = [[Fraction(v) for v in r] for r in case["w"].tolist()]
    p = len(case["rows"])
    asw = [[sum(a_ij * W[j][c] for j in range(n)) - (1 if r == c else 0) for c in range(p)] for r in range(p)]
    dec = max(sum(abs(v) for v in row) for row in asw) + e * max(sum(abs(v) for v in row) for row in W)
    frob = case["lower"] == 1 and Fraction(m, n) > m * e * e  # A has rank 1, sigma_1^2 = m / N
    return {"upper": err <= e, "decoder": dec < 1, "frobenius": frob}


def _run(count: int, seed: int, monkeypatch) -> Counter:
    rng = random.Random(seed)
    counts: Counter = Counter()
    for _ in range(count):
        case = _case(rng)
        routes = {"binary64": _decide(case, strict=False, prec=None)}
        for _ in range(2):
            prec = rng.randint(30, 200)
            monkeypatch.setattr(precision, "PRECISION", {**precision.PRECISION, **dict.fromkeys(PREC_NAMES, prec)})
            routes[f"arb@{prec}"] = _decide(case, strict=True, prec=prec)
        monkeypatch.undo()
        exact = _exact(case) if case["rational"] else {}
        for check in ("upper", "frobenius", "projected", "decoder"):
            outcomes = {route: o[check] for route, o in routes.items()}
            for route, o in outcomes.items():
                counts[(route.split("@")[0], check, o.value)] += 1
            certain = {o for o in outcomes.values() if o is not Outcome.UNRESOLVED}
            assert len(certain) <= 1, (check, outcomes, case["eps"])
            if check in exact and certain:
                want = Outcome.PROVED if exact[check] else Outcome.REFUTED
                assert certain == {want}, (check, outcomes, exact[check])
                counts[("exact", check, want.value)] += 1
    return counts


def _report(counts: Counter) -> str:
    return "; ".join(f"{r}/{c}/{o}: {n}" for (r, c, o), n in sorted(counts.items()))


def test_routes_never_disagree(monkeypatch):
    counts = _run(200, 0, monkeypatch)
    print("\n" + _report(counts))
    # the test can fail both ways: every check met both certain outcomes somewhere
    for check in ("upper", "frobenius", "decoder"):
        assert counts[("binary64", check, "proved")] and counts[("arb", check, "refuted")], check
    assert sum(n for (r, _, _), n in counts.items() if r == "exact") >= 50


@pytest.mark.slow
def test_routes_never_disagree_2000(monkeypatch):
    counts = _run(2000, 1, monkeypatch)
    print("\n" + _report(counts))
