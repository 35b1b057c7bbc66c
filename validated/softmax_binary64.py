"""A binary64 enclosure of ``A = rowsoftmax(H)`` with proven rounding-error bounds
(proofs/softmax_binary64.md).

The exponential is built from operations whose rounding is charged: the shift by the row maximum
(one subtraction), Cody-Waite reduction ``x = k ln2 + r`` with ln2 split so that ``k * LN2_HI``
is exact, a Taylor polynomial of degree ``DEGREE`` in Horner form, and an exact scaling by 2^k;
then row sums of non-negative terms (R1) and one division per entry.  Every constant that bounds
an error is an exact rational computed once at import, then rounded up to binary64; the few
per-row steps round up with ``nextafter``; the per-entry steps round to nearest and the constants
they use are inflated to pay for it (Lemma M of the proof).

``softmax_binary64_enclosure`` returns a ``SoftmaxEnclosure`` whose Arb rows (``balls``) are built
by the Arb enclosure only when a check asks for them, or ``None`` when a stated condition fails
(a non-finite logit, a logit radius or a row-sum charge too large); the caller then uses the
Arb enclosure.  The rules of proofs/binary64_error_bounds.md assume
round-to-nearest and gradual underflow (``float_bounds.binary64_environment_ok``).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache, partial
from math import factorial

import numpy as np
from flint import arb

from softrank.validated.balls import float_at_least, lower_fraction, upper_fraction
from softrank.validated.float_bounds import UNDERFLOW_ETA as ETA, UNIT_ROUNDOFF as U, gamma
from softrank.validated.precision import working_precision
from softrank.validated.softmax_enclosure import SoftmaxEnclosure, logits_balls, rowsoftmax_enclosure

DEGREE = 12  # Taylor degree of exp on |r| <= R_MAX
R_MAX = 0.347  # every reduced argument has |r| <= R_MAX (proved at import: reduction_bound)
TINY_CUT = -700.0  # shifted logits are clamped at TINY_CUT; below it A_ij < 2^-1009
K_MAX = 1010  # |k| for x in [TINY_CUT, 0]: |fl(x / ln2)| < 1009.9
LOGIT_RAD_MAX = 2.0**-11  # accepted radius of the logits (qk form)
RHO_MAX = Fraction(1, 2**10)  # >= logit radius + shift rounding, for every entry with x > TINY_CUT
DELTA_MAX = 2.0**-8  # accepted relative charge on a row sum
BLOCK = 32768  # entries per block of rows (the work arrays stay in cache)
ABS_RAD = 2.0**-1000  # absolute part of every radius: underflow and the tiny entries
INV_LN2 = 1.4426950408889634  # the binary64 number nearest 1/ln2: it chooses k
COEFFS = tuple(float(Fraction(1, factorial(j))) for j in range(DEGREE + 1))  # c_j = fl(1/j!)


def _ln2_split() -> tuple[float, float, Fraction, Fraction, Fraction]:
    """LN2_HI (at most 40 significant bits), LN2_LO ~ ln2 - LN2_HI, a rational >= the split's
    error |LN2_HI + LN2_LO - ln2|, a rational >= ln2 and one >= |INV_LN2 - 1/ln2|."""
    with working_precision("exp_constants"):
        ln2 = arb(2).log()
        inv = arb(1) / ln2
        lo, hi = lower_fraction(ln2), upper_fraction(ln2)
        l1 = Fraction(round(lo * 2**40), 2**40)
        l2 = float((lo + hi) / 2 - l1)
        inv_err = max(abs(Fraction(INV_LN2) - lower_fraction(inv)), abs(Fraction(INV_LN2) - upper_fraction(inv)))
    total = l1 + Fraction(l2)
    return float(l1), l2, max(abs(total - lo), abs(total - hi)), hi, inv_err


LN2_HI, LN2_LO, LN2_SPLIT_ERR, LN2_UPPER, INV_LN2_ERR = _ln2_split()
M2 = K_MAX * abs(Fraction(LN2_LO)) * (1 + U) + ETA / 2  # >= |fl(k LN2_LO)|


def _exp_upper(q: Fraction) -> Fraction:
    """A rational >= exp(q)."""
    with working_precision("exp_reduction"):
        return upper_fraction((arb(q.numerator) / arb(q.denominator)).exp())


def horner_error(r: Fraction) -> Fraction:
    """A rational >= |fl(Horner) - sum_j c_j t^j| for every binary64 t with |t| <= r (step P2)."""
    half_eta = ETA / 2
    b = Fraction(COEFFS[DEGREE])  # >= |v_(j+1)|
    err = Fraction(0)  # >= |v_(j+1) - P_(j+1)(t)|
    for j in range(DEGREE - 1, -1, -1):
        m = r * b * (1 + U) + half_eta + Fraction(COEFFS[j])  # >= |fl(v r) + c_j|
        err = r * err + U * r * b + half_eta + U * m
        b = m * (1 + U)
    return err


def reduction_bound() -> Fraction:
    """A rational >= |r_f| for every x in [TINY_CUT, 0] (step P1)."""
    phi = Fraction(1, 2) + U * K_MAX + ETA / 2 + int(-TINY_CUT) * INV_LN2_ERR  # >= |x/ln2 - k|
    return (LN2_UPPER * phi + 2 * U * M2 + ETA / 2 + K_MAX * LN2_SPLIT_ERR) / (1 - U - U / (1 - U))


def reduction_error() -> Fraction:
    """nu: |r_f - rho_red| <= nu for every x in [TINY_CUT, 0] (step P1, given |r_f| <= R_MAX)."""
    r = Fraction(R_MAX)
    return U * r + U * (r / (1 - U) + M2) + U * M2 + ETA / 2 + K_MAX * LN2_SPLIT_ERR


def polynomial_error() -> Fraction:
    """A rational >= |sum_j c_j t^j - exp(t)| for |t| <= R_MAX: coefficient rounding plus
    Lagrange's remainder (step P3)."""
    r = Fraction(R_MAX)
    coef = sum(abs(Fraction(c) - Fraction(1, factorial(j))) * r**j for j, c in enumerate(COEFFS))
    trunc = r ** (DEGREE + 1) / factorial(DEGREE + 1) * _exp_upper(r)
    return coef + trunc


def exp_relative_error() -> Fraction:
    """kappa: |E - exp(x)| <= kappa exp(x) for E = 2^k fl(Horner(r)) (steps P1-P3)."""
    r = Fraction(R_MAX)
    if reduction_bound() > r:
        raise ArithmeticError("the reduced argument is not proved to lie in [-R_MAX, R_MAX]")
    e_r = _exp_upper(r)
    kappa1 = (horner_error(r) + polynomial_error()) * e_r
    nu = reduction_error()
    return (1 + kappa1) * (1 + nu / (1 - nu)) - 1


KAPPA = Fraction(float_at_least(exp_relative_error()))  # rounded up to a binary64 number


def _up(x):
    return np.nextafter(x, np.inf)


def exp_nonpositive(x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """E with |E - exp(x)| <= KAPPA exp(x) entrywise, for binary64 x in [TINY_CUT, 0] (written
    into ``out`` when given)."""
    k = x * INV_LN2
    np.rint(k, out=k)
    r = k * LN2_HI  # exact: k has at most 10 bits, LN2_HI at most 40
    np.subtract(x, r, out=r)
    p = np.empty_like(x) if out is None else out
    np.multiply(k, LN2_LO, out=p)
    r -= p
    np.multiply(r, COEFFS[DEGREE], out=p)  # Horner from v_n = c_n
    p += COEFFS[DEGREE - 1]
    for c in COEFFS[DEGREE - 2::-1]:
        p *= r
        p += c
    return np.ldexp(p, k.astype(np.int32), out=p)


def qk_bounds(d: int, scale: float, with_bias: bool) -> tuple[Fraction, Fraction, Fraction]:
    """The exact rationals that ``qk_constants`` rounds up: A1, u and A0 of step L, each divided by
    (1 - u)^(T+1) or, for A0 + T eta/2, by (1 - u)^T (Lemma M with T products)."""
    beta = abs(Fraction(scale))
    g_d = gamma(d)
    terms = 2 if with_bias else 1
    a1 = beta * (g_d + U * (1 + g_d)) / (1 - g_d)
    a0 = a1 * d * ETA + beta * d * ETA * (1 + U) + ETA / 2
    return a1 / (1 - U) ** (terms + 1), U / (1 - U) ** (terms + 1), (a0 + terms * ETA / 2) / (1 - U) ** terms


@lru_cache(maxsize=64)
def qk_constants(d: int, scale: float, with_bias: bool) -> tuple[float, float, float]:
    """a1, a3, a0 of the logit radius r = a1 G (+ a3 |h|) + a0 (step L), already inflated for the
    roundings of its own evaluation: ``qk_bounds`` rounded up to binary64."""
    return tuple(float_at_least(q) for q in qk_bounds(d, scale, with_bias))


def qk_logits(prod: np.ndarray, abs_prod: np.ndarray, d: int, scale: float,
              bias: np.ndarray | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(h, r): binary64 h and r with |H - h| <= r entrywise for rows of H = scale Q K^T (+ bias),
    from those rows of ``prod = fl(Q K^T)`` and ``abs_prod = fl(|Q| |K|^T)`` (step L); None when
    the radius exceeds LOGIT_RAD_MAX or is not finite (a non-finite h makes r non-finite)."""
    a1, a3, a0 = qk_constants(d, float(scale), bias is not None)
    h = prod * float(scale)
    r = abs_prod * a1
    if bias is not None:
        h += bias
        g = np.abs(h)
        g *= a3
        r += g
    r += a0
    if not (float(np.max(r, initial=0.0)) <= LOGIT_RAD_MAX and np.all(np.isfinite(h))):
        return None
    return h, r


@lru_cache(maxsize=64)
def row_constants(n: int) -> tuple[float, float, float, float, float]:
    """Binary64 constants, each rounded up, for rows of length n (steps S and R of the proof):
    D1, D0 (the row-sum charge delta), M0, M1 (alpha = M0 + M1 delta) and B (beta): the rationals
    of ``row_bounds`` rounded up to binary64."""
    return tuple(float_at_least(q) for q in row_bounds(n))


def row_bounds(n: int) -> tuple[Fraction, Fraction, Fraction, Fraction, Fraction]:
    """The exact rationals that ``row_constants`` rounds up: D1, D0 and mu, (1 + mu) F_d,
    (1 + mu) F_d c1 divided by (1 - u)^4, (1 - u)^4 and (1 - u)^5 (Lemma M)."""
    g = gamma(n)
    k = KAPPA
    c1 = 1 / (1 - RHO_MAX)  # e^rho - 1 <= rho / (1 - rho) <= c1 rho
    f = 1 / (1 - Fraction(DELTA_MAX))  # 1 / (1 - delta) <= f
    t = n * Fraction(1, 2**1009)  # entries clamped at TINY_CUT add at most t to a row sum >= 1
    lam = max((1 + k) * (1 + g) * (1 + t) / (1 - k) - 1, 1 - (1 - k) * (1 - g) / (1 + k))
    mu = (1 + U / (1 - U)) * (1 + lam) - 1
    weight = c1 * (1 + k) * (1 + g) * (1 + t) / (1 - k)
    d1 = weight / ((1 - g) * (1 - U))
    d0 = weight * (n * ETA / ((1 - g) * (1 - U)) + n * ETA) + t
    return d1, d0, mu / (1 - U) ** 4, (1 + mu) * f / (1 - U) ** 4, (1 + mu) * f * c1 / (1 - U) ** 5


def _rows_enclosure(h: np.ndarray, r: np.ndarray | None, consts: tuple, a_mid: np.ndarray,
                    a_rad: np.ndarray, seen: np.ndarray | None = None) -> bool:
    """Write the enclosure of rows h (radius r; None: exact) into a_mid, a_rad (steps X-R of the
    proof; h is finite); False when the row-sum charge is too large.  ``seen`` (bool, None: all):
    the visible entries; a hidden one is exactly 0 with radius 0 (step Z of the proof)."""
    d1, d0, m0, m1, beta = consts
    if seen is not None:  # the row max over the visible keys; a hidden x is -inf, clamped, then E = 0
        h = np.where(seen, h, -np.inf)
    x = h - h.max(axis=1, keepdims=True)  # x <= 0; one rounding, charged u |x|
    np.maximum(x, TINY_CUT, out=x)
    e = exp_nonpositive(x, out=a_mid)  # clamped entries: E < 2^-1009, and so is A_ij
    if seen is not None:
        e[~seen] = 0.0
    s = e.sum(axis=1)  # >= 1: the row maximum contributes exactly 1
    rho = np.abs(x, out=x)
    rho *= float(U)
    if r is not None:
        rho += r
    w = np.einsum("ij,ij->i", e, rho)
    np.divide(e, s[:, None], out=a_mid)  # q
    delta = _up(_up(_up(w / s) * d1) + d0)
    if not float(np.max(delta)) <= DELTA_MAX:
        return False
    alpha = _up(m0 + _up(m1 * delta))
    np.multiply(rho, beta, out=a_rad)
    a_rad += alpha[:, None]
    a_rad *= a_mid
    a_rad += ABS_RAD
    if seen is not None:
        a_rad[~seen] = 0.0
    return True


def _enclose(m: int, n: int, logit_rows, mask=None) -> tuple[np.ndarray, np.ndarray] | None:
    """Run the rows in blocks of about BLOCK entries (the work arrays stay in cache);
    ``logit_rows(rows)`` gives (h, r) for a slice of rows, or None; ``mask``: the visible entries."""
    if m == 0 or n == 0:
        return None
    consts = row_constants(n)
    a_mid, a_rad = np.empty((m, n)), np.empty((m, n))
    step = max(1, BLOCK // n)
    with np.errstate(all="ignore"):
        for i in range(0, m, step):
            rows = slice(i, min(m, i + step))
            hr = logit_rows(rows)
            seen = None if mask is None else mask[rows]
            if hr is None or not _rows_enclosure(hr[0], hr[1], consts, a_mid[rows], a_rad[rows], seen):
                return None
    return a_mid, a_rad


def rowsoftmax_binary64(h: np.ndarray, r: np.ndarray | None = None, mask=None) -> tuple[np.ndarray, np.ndarray] | None:
    """(a_mid, a_rad) with |A_ij - a_mid_ij| <= a_rad_ij for A = rowsoftmax(H) and every real H
    with |H - h| <= r (r None: H = h exactly), over the visible keys of ``mask`` (m x N bool) when
    given, 0 elsewhere; None when a condition of the proof fails (a hidden entry's too: then the
    caller's Arb route, which never reads it, runs)."""
    h = np.asarray(h, dtype=np.float64)
    if not np.all(np.isfinite(h)) or (r is not None and not float(np.max(r, initial=0.0)) <= LOGIT_RAD_MAX):
        return None
    return _enclose(*h.shape, lambda rows: (h[rows], None if r is None else r[rows]), mask)


def _arb_rows(logits, queries, keys, scale, bias, mask=None):
    """The Arb enclosure's rows (built only when a check asks for ``balls``)."""
    h = logits_balls(logits=logits, queries=queries, keys=keys, scale=scale, bias=bias)
    return rowsoftmax_enclosure(h, mask=mask).balls


def softmax_binary64_enclosure(logits=None, queries=None, keys=None, scale=None,
                               bias=None, mask=None) -> SoftmaxEnclosure | None:
    """The enclosure of A = rowsoftmax(H) for the stored H, or for H = scale Q K^T (+ bias), with
    Arb rows built lazily; None when the binary64 bound is not available.  ``mask`` (m x N bool,
    None: all visible): A is 0 off it and normalised over the visible keys."""
    if logits is not None:
        out = rowsoftmax_binary64(logits, mask=mask)
    else:
        with np.errstate(all="ignore"):
            prod, abs_prod = queries @ keys.T, np.abs(queries) @ np.abs(keys).T
        out = _enclose(queries.shape[0], keys.shape[0], lambda rows: qk_logits(
            prod[rows], abs_prod[rows], queries.shape[1], scale, None if bias is None else bias[rows]), mask)
    if out is None:
        return None
    source = partial(_arb_rows, logits, queries, keys, scale, bias, mask)
    return SoftmaxEnclosure(a_mid=out[0], a_rad=out[1], balls_source=source)
