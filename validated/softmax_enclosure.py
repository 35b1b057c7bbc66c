"""Arb-ball enclosure of the operator ``A = rowsoftmax(H)`` from a record's stored numbers,
and ``chi``, a proven upper bound on ``||A - A_hat||_inf`` (proofs/softmax_enclosure.md,
proofs/lemma_S_slack_sandwich.md).

The logits are exact reals defined by binary64 numbers: either stored directly, or
``H = scale * Q K^T + bias``, enclosed here in balls.  ``exp`` is evaluated by Arb, which
returns a ball that contains the exact value; the row sum and the division are ball operations.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable

import numpy as np
from flint import arb

from softrank.validated.balls import arb_mat_from_floats
from softrank.validated.float_bounds import max_rowsum_abs_diff_upper
from softrank.validated.precision import PRECISION, working_precision

_TINY = 2.0**-1070  # covers a subnormal rounding of a midpoint (<= 2^-1075)


class SoftmaxEnclosure:
    """``|A_ij - a_mid_ij| <= a_rad_ij`` for the exact operator A (both arrays binary64).

    ``balls`` are Arb rows (list of lists) containing A, for the strict route and the Arb
    referee: given directly, or built on first use by ``balls_source()`` (an enclosure of the
    same exact operator; the binary64 enclosure of validated/softmax_binary64.py passes one).
    """

    def __init__(self, a_mid: np.ndarray, a_rad: np.ndarray, balls: list[list[arb]] | None = None,
                 prec_bits: int = PRECISION["enclosure"], balls_source: Callable[[], list[list[arb]]] | None = None):
        if balls is None and balls_source is None:
            raise ValueError("an enclosure needs its Arb rows or a way to build them")
        self.a_mid, self.a_rad, self.prec_bits = a_mid, a_rad, prec_bits
        self._balls, self._balls_source = balls, balls_source
        self.memo: dict = {}  # results that depend on the enclosure alone, computed once per record

    @property
    def balls(self) -> list[list[arb]]:
        if self._balls is None:
            self._balls = self._balls_source()
        return self._balls

    @property
    def balls_built(self) -> bool:
        """Have the Arb rows been built (or given)?"""
        return self._balls is not None


def logits_balls(logits=None, queries=None, keys=None, scale=None, bias=None) -> list[list[arb]]:
    """Rows of balls containing the exact logits: the stored H, or scale * Q K^T (+ bias)."""
    if logits is not None:
        return [[arb(v) for v in row] for row in logits.tolist()]
    prod = arb_mat_from_floats(queries) * arb_mat_from_floats(keys.T)
    rows = prod.tolist()
    beta = arb(float(scale))
    if bias is None:
        return [[beta * h for h in row] for row in rows]
    return [[beta * h + b for h, b in zip(row, brow)] for row, brow in zip(rows, bias.tolist())]


def rowsoftmax_enclosure(h_rows: list[list[arb]], prec_bits: int = PRECISION["enclosure"],
                         mask: np.ndarray | None = None) -> SoftmaxEnclosure:
    """Enclose ``A_ij = exp(H_ij - c_i) / sum_l exp(H_il - c_i)`` (any shift c_i leaves A unchanged;
    c_i is the largest midpoint of row i, to keep every exponent <= 0 up to the ball radius).  With
    a ``mask`` (m x N bool), l runs over the visible keys of row i and a hidden entry is exactly 0
    (ball and radius 0); its logit is never read."""
    with working_precision(prec_bits):
        balls, mids, rads = [], [], []
        for i, row in enumerate(h_rows):
            seen = [True] * len(row) if mask is None else mask[i].tolist()
            shift = arb(max(float(h.mid()) for h, v in zip(row, seen) if v))
            e = [(h - shift).exp() if v else arb(0) for h, v in zip(row, seen)]
            total = sum(e[1:], e[0])
            a_row = [x / total if v else x for x, v in zip(e, seen)]
            balls.append(a_row)
            mids.append([float(a.mid()) for a in a_row])
            rads.append([float(a.rad()) for a in a_row])
    a_mid = np.array(mids, dtype=np.float64)
    # |A - a_mid| <= rad + |mid - float(mid)| <= rad + |a_mid| 2^-52 (+ subnormal slack); every
    # float step below rounds up: float(rad) is bumped one ulp, the sum is bumped one ulp.
    rad = np.nextafter(np.array(rads, dtype=np.float64), np.inf)
    a_rad = np.nextafter(rad + np.abs(a_mid) * 2.0**-52 + _TINY, np.inf)
    if mask is not None:
        a_rad[~mask] = 0.0  # the exact 0 balls: a_mid is 0 there
    if not (np.all(np.isfinite(a_mid)) and np.all(np.isfinite(a_rad))):
        raise ArithmeticError("softmax enclosure is not finite (logits out of range for Arb?)")
    return SoftmaxEnclosure(a_mid=a_mid, a_rad=a_rad, balls=balls, prec_bits=prec_bits)


def chi_upper(enc: SoftmaxEnclosure, a_hat: np.ndarray) -> Fraction | None:
    """A proven upper bound on ``chi = ||A - A_hat||_inf`` (exact rational; None on overflow).

    ``sum_j |A_ij - Ahat_ij| <= sum_j (a_rad_ij + |a_mid_ij - Ahat_ij|)``, bounded in binary64
    by Lemma B2 (proofs/binary64_error_bounds.md)."""
    return max_rowsum_abs_diff_upper(enc.a_mid, enc.a_rad, a_hat)
