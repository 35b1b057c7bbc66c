"""The per-row and per-logit constants of validated/softmax_binary64.py and the radius they produce,
against the formulas of proofs/softmax_binary64.md transcribed here in exact rationals (Steps L, S,
Q, R and rule (M)).

The end-to-end tests (tests/validated/test_softmax_binary64.py) compare the enclosure with Arb
and mpmath; the true error is far below the proved radius, so a constant or a step that is
weakened by a small relative amount (a gamma_N with the wrong sign, a charge divided where it
should be multiplied) still encloses every value they try.  Here each constant must be at least
its formula, and the radius of every entry at least Step R's bound, evaluated exactly from the
floats the code produced.  These tests were written for surviving mutants of the mutation run of
2026-12-03 (docs/hardening.md, "Mutation testing").
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from softrank.validated import softmax_binary64 as sb
from softrank.validated.balls import float_at_least

U = Fraction(1, 2**53)  # u
ETA = Fraction(1, 2**1074)  # eta
F_D = 1 / (1 - Fraction(1, 2**8))  # F_d = 1/(1 - 2^-8), Step Q
CLAMPED = Fraction(1, 2**1009)  # a clamped entry's A_ij and E_ij are below this (Step X)


def gamma(n: int) -> Fraction:
    return n * U / (1 - n * U)


def proof_row_constants(n: int) -> dict[str, Fraction]:
    """Steps S, Q and R for rows of length n: D1, D0 (delta), mu, lambda, M0, M1 and beta, as the
    proof states them (the lower bounds the code's binary64 constants must meet)."""
    g, k, t = gamma(n), sb.KAPPA, n * CLAMPED
    c1 = 1 / (1 - sb.RHO_MAX)
    w = c1 * (1 + k) * (1 + g) * (1 + t) / (1 - k)
    lam = max((1 + k) * (1 + g) * (1 + t) / (1 - k) - 1, 1 - (1 - k) * (1 - g) / (1 + k))
    mu = (1 + U / (1 - U)) * (1 + lam) - 1
    return {"C1": c1, "D1": w / ((1 - g) * (1 - U)), "D0": w * (n * ETA / ((1 - g) * (1 - U)) + n * ETA) + t,
            "mu": mu, "M0": mu / (1 - U) ** 4, "M1": (1 + mu) * F_D / (1 - U) ** 4,
            "beta": (1 + mu) * F_D * c1 / (1 - U) ** 5}


@pytest.mark.parametrize("n", [1, 2, 7, 64, 1000, 2**20])
def test_row_constants_are_at_least_the_proofs(n):
    d1, d0, m0, m1, beta = sb.row_constants(n)
    want = proof_row_constants(n)
    got = {"D1": d1, "D0": d0, "M0": m0, "M1": m1, "beta": beta}
    for name, value in got.items():
        assert Fraction(value) >= want[name], (name, n)
        assert value == float_at_least(want[name]), (name, n)  # and rounded up once, as the proof says
    # the rationals themselves are the proof's, not merely close enough to round to the same float
    assert sb.row_bounds(n) == tuple(want[k] for k in ("D1", "D0", "M0", "M1", "beta"))


@pytest.mark.parametrize(("d", "scale", "with_bias"), [(1, 1.0, False), (4, 0.125, True), (64, -0.125, False),
                                                       (64, 3.0, True), (4096, 2.0**-6, True)])
def test_qk_constants_are_at_least_step_l_with_rule_m(d, scale, with_bias):
    """Step L: r° = A1 G + A0 (+ u |h|) with A1 = |beta| (gamma_d + u (1 + gamma_d)) / (1 - gamma_d),
    A0 = A1 d eta + |beta| d eta (1 + u) + eta/2; rule (M) with T products: a_t >= A_t/(1 - u)^(T+1),
    a_0 >= (A_0 + T eta/2)/(1 - u)^T."""
    a1, a3, a0 = sb.qk_constants(d, scale, with_bias)
    b, g = abs(Fraction(scale)), gamma(d)
    big_t = 2 if with_bias else 1
    A1 = b * (g + U * (1 + g)) / (1 - g)
    A0 = A1 * d * ETA + b * d * ETA * (1 + U) + ETA / 2
    want = (A1 / (1 - U) ** (big_t + 1), U / (1 - U) ** (big_t + 1), (A0 + big_t * ETA / 2) / (1 - U) ** big_t)
    for name, value, w in zip(("a1", "a3", "a0"), (a1, a3, a0), want):
        assert Fraction(value) >= w, name
        assert value == float_at_least(w), name  # rounded up once
    assert sb.qk_bounds(d, scale, with_bias) == want  # exactly the proof's rationals


def test_a_logit_radius_with_a_bias_uses_the_bias_constants():
    """With a bias the radius is a1 G + a3 |h| + a0 with the constants of T = 2 products (at d = 2,
    scale 1/3 they differ from those of T = 1 in a1 and a0), evaluated in this order.  Q K^T = 0
    with |Q| |K|^T = 1 (q = (1, 1), k = (1, -1)) and a zero bias: the radius is a1 + a0."""
    d, scale = 2, 1 / 3
    with_bias, without = sb.qk_constants(d, scale, True), sb.qk_constants(d, scale, False)
    assert with_bias[0] != without[0] and with_bias[2] != without[2]
    prod, abs_prod, bias = np.zeros((2, 3)), np.ones((2, 3)), np.zeros((2, 3))

    def radius(consts, h):
        a1, a3, a0 = consts
        return (abs_prod * a1 + np.abs(h) * a3) + a0

    h, r = sb.qk_logits(prod, abs_prod, d, scale, bias)
    assert np.all(h == prod * scale + bias)
    assert np.all(r == radius(with_bias, h)) and not np.all(r == radius(without, h))
    h0, r0 = sb.qk_logits(prod, abs_prod, d, scale, None)
    assert np.all(r0 == abs_prod * without[0] + without[2])


def _q(a) -> list[list[Fraction]]:
    return [[Fraction(v) for v in row] for row in np.asarray(a, dtype=np.float64).tolist()]


def step_r_bound(h: np.ndarray, r: np.ndarray | None) -> list[list[Fraction]]:
    """The radius Step R proves necessary, entry by entry, for the enclosure the code returns:
    q (alpha° + beta° rho°) + eta + 2^-1009 for an unclamped entry, 2^-1009 for a clamped one, with
    delta_i >= (C1 sum_(B_i) e rho° + N 2^-1009)/Sig_e bounded through e <= E/(1 - kappa) and
    Sig_e >= sum_(B_i) E/(1 + kappa) >= 1 (Step S), from the code's own E (exp_nonpositive) and
    the float shift x = fl(h - max) (Step X)."""
    m, n = h.shape
    c = proof_row_constants(n)
    k = sb.KAPPA
    x = h - h.max(axis=1, keepdims=True)
    e = sb.exp_nonpositive(np.maximum(x, sb.TINY_CUT))
    X, E = _q(x), _q(e)
    R = _q(r) if r is not None else [[Fraction(0)] * n for _ in range(m)]
    out = []
    for i in range(m):
        unclamped = [j for j in range(n) if X[i][j] > Fraction(sb.TINY_CUT)]
        rho = {j: U * abs(X[i][j]) + R[i][j] for j in unclamped}
        sig_b = sum(E[i][j] for j in unclamped)
        assert sig_b >= 1  # the row maximum's E is exactly 1
        delta = c["C1"] * (1 + k) / (1 - k) * sum(E[i][j] * rho[j] for j in unclamped) / sig_b + n * CLAMPED
        assert delta <= Fraction(1, 2**8)  # where F_d is valid
        alpha = c["mu"] + (1 + c["mu"]) * F_D * delta
        beta = (1 + c["mu"]) * F_D * c["C1"]
        out.append([None if j not in rho else (alpha + beta * rho[j], ) for j in range(n)])
    return out


def _cases():
    rng = np.random.default_rng(20261203)
    cases = []
    for n in (1, 3, 17, 64):
        for kind in ("normal", "radius", "clamp", "ties"):
            m = 4
            h = rng.normal(size=(m, n)) * rng.choice([0.1, 3.0, 30.0])
            r = None
            if kind == "radius":  # delta dominated by the logit radius (qk form)
                r = rng.uniform(0, 2.0**-11, size=(m, n))
            elif kind == "clamp":  # entries at, just above and below the clamp at -700
                h[:, ::2] = -699.5 - rng.uniform(0, 1, size=h[:, ::2].shape)
                h[:, 0] = 0.0
                r = np.full((m, n), 2.0**-12)
            elif kind == "ties":
                h = np.round(h)
            cases.append((f"{kind}-{n}", h, r))
    return cases


CASES = _cases()


@pytest.mark.parametrize(("h", "r"), [(h, r) for _, h, r in CASES], ids=[name for name, _, _ in CASES])
def test_every_radius_is_at_least_step_r(h, r):
    out = sb.rowsoftmax_binary64(h, r)
    assert out is not None
    a_mid, a_rad = out
    need = step_r_bound(h, r)
    for i, (qs, rads) in enumerate(zip(_q(a_mid), _q(a_rad))):
        for j, (q, rad) in enumerate(zip(qs, rads)):
            if need[i][j] is None:  # clamped: |A_ij - q_ij| < 2^-1009
                assert rad >= CLAMPED, (i, j)
            else:
                assert rad >= q * need[i][j][0] + ETA + CLAMPED, (i, j)


@pytest.mark.parametrize("with_bias", [False, True])
def test_logit_radius_is_at_least_step_l(with_bias):
    """qk_logits: r >= A1 G + A0 (+ u |h|) entrywise, in exact rationals from the floats G = abs_prod
    and h it returns."""
    rng = np.random.default_rng(7)
    d, scale = 16, 0.25
    q, kk = rng.normal(size=(5, d)), rng.normal(size=(6, d))
    prod, abs_prod = q @ kk.T, np.abs(q) @ np.abs(kk).T
    bias = rng.normal(size=(5, 6)) * 3 if with_bias else None
    h, r = sb.qk_logits(prod, abs_prod, d, scale, bias)
    b, g = abs(Fraction(scale)), gamma(d)
    A1 = b * (g + U * (1 + g)) / (1 - g)
    A0 = A1 * d * ETA + b * d * ETA * (1 + U) + ETA / 2
    for hs, rs, gs in zip(_q(h), _q(r), _q(abs_prod)):
        for hv, rv, gv in zip(hs, rs, gs):
            assert rv >= A1 * gv + A0 + (U * abs(hv) if with_bias else 0)


@pytest.mark.parametrize("radius", [2.0**-10.9, 2.0**-10, 2.0**-9])
def test_a_logit_radius_above_2_pow_minus_11_is_declined(radius):
    """Step L: the code declines unless max r <= 2^-11 (LOGIT_RAD_MAX), since Step X needs
    rho° <= RHO_MAX = 2^-10.  A radius up to 2^-9 keeps the row-sum charge delta below 2^-8,
    so the later check does not catch it: qk_logits itself must decline."""
    d, scale = 4, 1.0
    a1 = sb.qk_constants(d, scale, False)[0]
    g = radius / a1  # abs_prod entries that give r = a1 G + a0 of about ``radius``
    prod, abs_prod = np.full((2, 3), g / 2), np.full((2, 3), g)
    assert sb.qk_logits(prod, abs_prod, d, scale, None) is None
    assert sb.qk_logits(prod, abs_prod / 8, d, scale, None) is not None  # a radius of at most 2^-12: accepted
    q = np.full((2, d), np.sqrt(g / d))
    assert sb.softmax_binary64_enclosure(queries=q, keys=q[:1].repeat(3, axis=0), scale=scale) is None


def test_a_logit_radius_of_exactly_2_pow_minus_11_is_accepted(monkeypatch):
    """The bound is inclusive: r = 2^-11 passes (rowsoftmax_binary64 and the qk route), 2^-11 plus
    one ulp does not."""
    h = np.zeros((2, 3))
    assert sb.rowsoftmax_binary64(h, np.full((2, 3), 2.0**-11)) is not None
    assert sb.rowsoftmax_binary64(h, np.full((2, 3), np.nextafter(2.0**-11, 1.0))) is None
    monkeypatch.setattr(sb, "qk_constants", lambda d, scale, with_bias: (1.0, 0.0, 0.0))  # r = |Q| |K|^T
    assert sb.qk_logits(h, np.full((2, 3), 2.0**-11), 4, 1.0, None) is not None
    assert sb.qk_logits(h, np.full((2, 3), np.nextafter(2.0**-11, 1.0)), 4, 1.0, None) is None
