"""Proven a-priori error bounds for binary64 computations (proofs/binary64_error_bounds.md).

Assumptions, stated with every accepted check that uses this module (``BINARY64_ASSUMPTIONS``):
IEEE 754 binary64 with round-to-nearest; every entry of a matrix product is a sum of products
accumulated in some order (standard BLAS; no Strassen-type algorithm); no overflow (checked:
a non-finite intermediate makes the bound unavailable, never small).

All final bounds are exact rationals computed from the floats that were actually produced, so no
rounding happens after the last inequality.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

UNIT_ROUNDOFF = Fraction(1, 2**53)  # u
UNDERFLOW_ETA = Fraction(1, 2**1074)  # >= absolute error of one underflowing product

BINARY64_ASSUMPTIONS = [
    "IEEE 754 binary64, round-to-nearest",
    "each matrix-product entry is a sum of products in some order (no Strassen-type algorithm)",
]


def binary64_environment_ok() -> bool:
    """Does the floating-point environment match the binary64 rules' assumptions?

    Checked on numpy's own arithmetic (elementwise and a BLAS dot product), every call, since a
    library loaded later can switch the environment: round-to-nearest (a sum that lies 3/4 of an
    ulp above 1 rounds up, and its negative rounds down), and gradual underflow (no flush-to-zero:
    a product that is subnormal stays non-zero; no denormals-are-zero: a subnormal operand is not
    read as 0).  When this is False the replay uses Arb balls throughout.
    """
    one, step = np.float64(1.0), np.float64(0.75 * 2.0**-52)
    tiny, half = np.array([2.0**-1022]), np.array([0.5])
    sub = np.array([2.0**-1074])
    return bool(one + step == 1.0 + 2.0**-52 and -one - step == -(1.0 + 2.0**-52)
                and (tiny * half)[0] == 2.0**-1023 and float(np.dot(tiny, half)) == 2.0**-1023
                and (sub * np.array([2.0]))[0] == 2.0**-1073)


def gamma(n: int) -> Fraction:
    """Higham's gamma_n = n u / (1 - n u), exact (requires n u < 1)."""
    nu = n * UNIT_ROUNDOFF
    if nu >= 1:
        raise ValueError("gamma_n undefined for n u >= 1")
    return nu / (1 - nu)


def max_rowsum_abs_diff_upper(a_mid: np.ndarray, a_rad: np.ndarray | None, p: np.ndarray) -> Fraction | None:
    """Upper bound on ``max_i sum_j (a_rad_ij + |a_mid_ij - p_ij|)`` for the exact reals given
    by the binary64 arrays (Lemma B2 of proofs/binary64_error_bounds.md).

    Each term is formed with at most two roundings (subtract, add), all relative since only
    additions and subtractions occur; a sum of N non-negative floats computed in any order is
    at least (1 - gamma_{N-1}) times its exact value.  Returns None on overflow.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        d = np.abs(a_mid - p)
        if a_rad is not None:
            d += a_rad
        s = float(np.max(d.sum(axis=1)))
    if not np.isfinite(s):
        return None
    n = a_mid.shape[1]
    return Fraction(s) / (1 - gamma(n + 1))


def matmul_error_rowsum_upper(x: np.ndarray, y: np.ndarray) -> Fraction | None:
    """Upper bound on ``max_i sum_j |fl(X Y^T)_ij - (X Y^T)_ij|`` for any standard evaluation of
    the product (Lemma B3 of proofs/binary64_error_bounds.md).

    Per entry the error is at most gamma_k (|x_i|^T |y_j|) + k eta; summed over j this is
    gamma_k |x_i|^T c + N k eta with c = sum_j |y_j| (exact), which is bounded from the computed
    c and |X| c with two more applications of the non-negative-sum rule.  Returns None on
    overflow.
    """
    m, k = x.shape
    n = y.shape[0]
    if k == 0:
        return Fraction(0)
    with np.errstate(over="ignore", invalid="ignore"):
        c = np.abs(y).sum(axis=0)  # >= (1 - gamma_{N-1}) * exact
        v = np.abs(x) @ c  # >= (1 - gamma_k) * exact(|X| c_float) - k eta
        vmax = float(np.max(v))
    if not np.isfinite(vmax):
        return None
    exact_xc = (Fraction(vmax) + k * UNDERFLOW_ETA) / ((1 - gamma(k)) * (1 - gamma(n)))
    return gamma(k) * exact_xc + n * k * UNDERFLOW_ETA
