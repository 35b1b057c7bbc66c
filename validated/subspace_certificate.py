"""Lemma G (proofs/lemma_G_expanding_subspace.md): an expanding subspace proves ``r_eps(A) >= p``.

Data (kind ``subspace``): ``W`` (N x p) with ``W[pivots] = I_p``, ``cover`` K (indices in [0, N)
containing the pivots), and per k in K a row ``u_k`` of ``u`` (|K| x m) and a row ``v_k`` of ``v``
(|K| x N).  With ``g_k = W^T (A^T u_k - v_k)``, ``num_k = v_k[k] - sum_{l != k} |v_k[l]| -
||g_k||_1`` and ``den_k = ||u_k||_1``, the certificate holds when every uncovered row of W has
``||W_l||_1 <= 1`` and ``num_k > eps den_k`` for every k in K (strict).

``G = (u A - v) W`` is formed in Arb balls from the exact binary64 entries and a ball matrix
containing A (the enclosure ``|A - a_mid| <= a_rad``); the uncovered rows are summed in exact
rationals.  Shapes and the pivot identity are the caller's checks (``replay/rules.py``).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, arb_mat, ctx

from softrank.validated.balls import decimal_at_least, decimal_at_most, lower_fraction, upper_fraction
from softrank.validated.outcome import Check, Outcome
from softrank.validated.singular_values import ARB_PREC_BITS, arb_mat_from_floats
from softrank.validated.softmax_enclosure import SoftmaxEnclosure
from softrank.validated.tail_decision import ARB_ASSUMPTIONS

LEMMA_G = "proofs/lemma_G_expanding_subspace.md"
WHAT = "num_k > eps den_k for every covered k"


def uncovered_rows_ok(w: np.ndarray, cover: np.ndarray) -> int | None:
    """None when every row l of W outside ``cover`` has ``||W_l||_1 <= 1`` (exact rationals from
    the binary64 entries); else the first row that does not."""
    outside = np.ones(w.shape[0], dtype=bool)
    outside[cover] = False
    for l in np.flatnonzero(outside).tolist():
        if sum((Fraction(x) for x in np.abs(w[l]).tolist()), Fraction(0)) > 1:
            return l
    return None


def a_ball_matrix(enc: SoftmaxEnclosure) -> arb_mat:
    """A ball matrix containing A: the Arb rows when already built, else balls ``a_mid +- a_rad``
    (exact midpoints; Arb rounds radii up)."""
    if enc.balls_built:
        return arb_mat(enc.balls)
    mid, rad = enc.a_mid, enc.a_rad
    m, n = mid.shape
    return arb_mat(m, n, [arb(x, r) for x, r in zip(mid.ravel().tolist(), rad.ravel().tolist())])


def margins_arb(enc: SoftmaxEnclosure, eps: Fraction, w: np.ndarray, cover: np.ndarray,
                u: np.ndarray, v: np.ndarray) -> list[arb]:
    """Per k in ``cover``, a ball containing ``num_k - eps den_k`` for the exact operator."""
    with ctx.workprec(ARB_PREC_BITS):
        g = ((arb_mat_from_floats(u) * a_ball_matrix(enc)) - arb_mat_from_floats(v)) * arb_mat_from_floats(w)
        e = arb(eps.numerator) / arb(eps.denominator)
        out = []
        for k, (col, grow) in enumerate(zip(cover.tolist(), g.tolist())):
            vk = v[k]
            off = np.abs(vk).tolist()
            off[col] = 0.0
            num = arb(float(vk[col])) - _exact_sum(off) - sum((abs(x) for x in grow), arb(0))
            den = _exact_sum(np.abs(u[k]).tolist())
            out.append(num - e * den)
        return out


def _exact_sum(xs: list[float]) -> arb:
    """The exact sum of binary64 numbers, as a ball (Fraction sum: exact)."""
    s = sum((Fraction(x) for x in xs), Fraction(0))
    return arb(s.numerator) / arb(s.denominator)


def check_subspace_certificate(enc: SoftmaxEnclosure, eps: Fraction, w: np.ndarray, cover: np.ndarray,
                               u: np.ndarray, v: np.ndarray, *, operator_assumption: str = "") -> Check:
    """Lemma G.  Well-formed input (W N x p finite with ``W[pivots] = I_p``, cover distinct indices
    in [0, N) containing the pivots, u |K| x m and v |K| x N finite) and outcome PROVED imply
    ``r_eps(A) >= p`` for the exact operator A enclosed by ``enc``.  REFUTED: some covered k has
    ``num_k - eps den_k <= 0`` certainly.  Else UNRESOLVED."""
    assumptions = ([operator_assumption] if operator_assumption else []) + ARB_ASSUMPTIONS
    bad_row = uncovered_rows_ok(w, cover)
    if bad_row is not None:
        return Check(Outcome.UNRESOLVED, LEMMA_G, route="arb", assumptions=assumptions,
                     reason=f"row {bad_row} of W has ||W_l||_1 > 1 and is not in 'cover'")
    margins = margins_arb(enc, eps, w, cover, u, v)
    if not all(x.is_finite() for x in margins):
        return Check(Outcome.UNRESOLVED, LEMMA_G, route="arb", assumptions=assumptions,
                     reason=f"{WHAT}: a bound is not finite")
    lows = [lower_fraction(x) for x in margins]
    worst = min(range(len(lows)), key=lows.__getitem__)
    value = decimal_at_most(lows[worst])
    if lows[worst] > 0:
        return Check(Outcome.PROVED, LEMMA_G, value=value, route="arb", assumptions=assumptions)
    highs = [upper_fraction(x) for x in margins]
    k_hi = min(range(len(highs)), key=highs.__getitem__)
    col = int(cover[worst])
    if highs[k_hi] <= 0:
        return Check(Outcome.REFUTED, LEMMA_G, value=value, route="arb", assumptions=assumptions,
                     reason=f"{WHAT} fails certainly at k = {int(cover[k_hi])}: "
                            f"num_k - eps den_k <= {decimal_at_least(highs[k_hi])}")
    return Check(Outcome.UNRESOLVED, LEMMA_G, value=value, route="arb", assumptions=assumptions,
                 reason=f"{WHAT} not certain at k = {col}: num_k - eps den_k in "
                        f"[{value}, {decimal_at_least(highs[worst])}]")
