"""Lemma D (proofs/lemma_D_contractive_decoder.md): rows S with |S| = p and W (N x p):
``||A_S W - I_p||_inf + eps max_j ||W_j||_1 < 1`` (strict) proves ``r_eps(A) >= p``.

binary64-bound route, with ``Z = fl(a_mid_S W)`` and ``D = fl(Z - I)``:

    ||A_S W - I||_inf <= ||D||_inf / (1 - u)                 (R2a: only the diagonal is rounded)
                       + max_i sum_j |Z - a_mid_S W|_ij       (B3)
                       + max_i sum_j (a_rad_S |W|)_ij         (enclosure of A; N3)

and ``max_j ||W_j||_1`` from N2 (rules: proofs/binary64_error_bounds.md).  The same terms with the other sign give a certain lower bound
(REFUTED when it is >= 1).  The Arb route forms ``A_S W - I`` as a ball matrix.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import (arb_mat_from_floats, arb_max, decimal_at_least, decimal_at_most,
                                      lower_fraction, scientific_text, upper_fraction)
from softrank.validated.binary64_norms import (U, max_abs_rowsum, max_abs_rowsum_lower, max_abs_rowsum_upper,
                                               nonneg_product_rowsum_upper)
from softrank.validated.float_bounds import matmul_error_rowsum_upper
from softrank.validated.outcome import Check, Outcome, route_assumptions
from softrank.validated.precision import working_precision
from softrank.validated.softmax_enclosure import SoftmaxEnclosure

LEMMA_D = "proofs/lemma_D_contractive_decoder.md"
WHAT = "||A_S W - I_p||_inf + eps max_j ||W_j||_1 < 1"


def decoder_residual(a_s: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``D = fl(fl(a_s W) - I_p)``: only the product and the diagonal entries are rounded."""
    z = a_s @ w
    np.fill_diagonal(z, z.diagonal() - 1.0)
    return z


def decoder_sum_float(a_s: np.ndarray, w: np.ndarray, eps) -> float:
    """The binary64 value of ``||A_S W - I_p||_inf + eps max_j ||W_j||_1`` (inf or NaN on overflow),
    from the floats that ``decoder_sum_binary64`` bounds: the producer's value (a claim, no proof)."""
    return max_abs_rowsum(decoder_residual(a_s, w)) + eps * max_abs_rowsum(w)


def decoder_sum_binary64(a_mid_s: np.ndarray, a_rad_s: np.ndarray, w: np.ndarray, eps: Fraction,
                         with_lower: bool = True) -> tuple[Fraction | None, Fraction] | None:
    """Exact rationals ``lo <= ||A_S W - I||_inf + eps max_j ||W_j||_1 <= hi`` for every A_S with
    ``|A_S - a_mid_s| <= a_rad_s`` (lo is None unless ``with_lower``); None when a bound is
    unavailable (overflow)."""
    z = decoder_residual(a_mid_s, w)
    d_hi = max_abs_rowsum_upper(z)
    prod_err = matmul_error_rowsum_upper(a_mid_s, w.T)
    rad = nonneg_product_rowsum_upper(a_rad_s, np.abs(w))
    w_hi = max_abs_rowsum_upper(w)
    if None in (d_hi, prod_err, rad, w_hi):
        return None
    hi = d_hi / (1 - U) + prod_err + rad + eps * w_hi
    if not with_lower:
        return None, hi
    d_lo, w_lo = max_abs_rowsum_lower(z), max_abs_rowsum_lower(w)
    if d_lo is None or w_lo is None:
        return None
    lo = d_lo / (1 + U) - prod_err - rad + eps * w_lo
    return lo, hi


def decoder_sum_arb(a_balls_s: list[list[arb]], w: np.ndarray, eps: Fraction) -> arb:
    """A ball containing ``||A_S W - I||_inf + eps max_j ||W_j||_1`` (Arb throughout)."""
    with working_precision("singular_values"):
        z = (arb_mat(a_balls_s) * arb_mat_from_floats(w)).tolist()
        best = arb_max(sum((abs(x - 1) if i == j else abs(x) for j, x in enumerate(row)), arb(0))
                       for i, row in enumerate(z))
        wmax = arb_max(sum((abs(arb(x)) for x in row), arb(0)) for row in w.tolist())
        return best + arb(eps.numerator) / arb(eps.denominator) * wmax


def check_contractive_decoder(enc: SoftmaxEnclosure, eps: Fraction, rows: np.ndarray, w: np.ndarray, *,
                              strict: bool = False, operator_assumption: str = "") -> Check:
    """Lemma D.  Well-formed input (p = len(rows) distinct indices in [0, m), W of shape (N, p))
    and outcome PROVED imply ``||A_S W - I_p||_inf + eps max_j ||W_j||_1 < 1``, hence
    ``r_eps(A) >= p`` for the exact operator A enclosed by ``enc``.  REFUTED: the sum is
    certainly >= 1.  Else UNRESOLVED."""
    last = None
    if not strict:
        a_s, r_s = enc.a_mid[rows], enc.a_rad[rows]
        bounds = decoder_sum_binary64(a_s, r_s, w, eps, with_lower=False)
        if bounds is not None and bounds[1] >= 1:
            bounds = decoder_sum_binary64(a_s, r_s, w, eps)
        if bounds is not None:
            lo, hi = bounds
            last = _decide(lo, hi, "binary64-bound", operator_assumption)
            if last.outcome is not Outcome.UNRESOLVED:
                return last
    # Strict route, or the referee when the binary64 bound is inconclusive.
    ball = decoder_sum_arb([enc.balls[i] for i in rows.tolist()], w, eps)
    if not ball.is_finite():
        return last or Check(Outcome.UNRESOLVED, LEMMA_D, route="arb", reason=f"{WHAT}: the Arb bound is not finite",
                             assumptions=route_assumptions(operator_assumption, "arb"))
    return _decide(lower_fraction(ball), upper_fraction(ball), "arb", operator_assumption)


def _decide(lo: Fraction | None, hi: Fraction, route: str, operator_assumption: str) -> Check:
    value, assumptions = decimal_at_least(hi), route_assumptions(operator_assumption, route)
    if hi < 1:
        return Check(Outcome.PROVED, LEMMA_D, value=value, route=route, assumptions=assumptions)
    assert lo is not None
    bounds = f"sum in [{decimal_at_most(lo)}, {value}], margin 1 - upper = {scientific_text(1 - hi)}"
    if lo >= 1:
        return Check(Outcome.REFUTED, LEMMA_D, value=value, route=route, assumptions=assumptions,
                     reason=f"{WHAT} fails certainly: {bounds}")
    return Check(Outcome.UNRESOLVED, LEMMA_D, value=value, route=route, assumptions=assumptions,
                 reason=f"{WHAT} not certain: {bounds}")
