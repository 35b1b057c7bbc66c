"""Validated bounds on the intrinsic size kappa(T) (proofs/kappa_duality_contrast.md).

T = X0 Y0^T is defined by binary64 factors (exact reals).  Every function evaluates in Arb balls
and returns exact rationals (lower bounds are lower ends of balls, upper bounds upper ends), so a
returned bound holds for the exact T:

- ``kappa_lower_dual``  (Lemmas K1, K1'): weights p, q and a binary64 r x r matrix K.
- ``kappa_lower_contrast`` (Lemma K2): a 2 x 2 rectangle of T.
- ``kappa_upper_primal`` (Lemma K3): an invertible S and centres c, d.
- ``radius_upper`` : rad(X) <= max_i ||x_i - c|| for a given centre (native Gamma).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import lower_fraction, upper_fraction
from softrank.validated.precision import PRECISION, working_precision

LEMMA_KAPPA = "proofs/kappa_duality_contrast.md"


def _mat(a: np.ndarray) -> arb_mat:
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError("non-finite entry")
    return arb_mat(a.shape[0], a.shape[1], a.ravel().tolist())


def weighted_covariance_ball(x0: np.ndarray, p: np.ndarray) -> arb_mat:
    """Ball matrix containing Sig_p = sum_i w_i (x_i - xbar)(x_i - xbar)^T, w = p / sum(p) exactly
    (p >= 0 binary64, not all zero)."""
    if not np.all(np.isfinite(p)) or np.any(p < 0) or not np.any(p > 0):  # NaN is not non-negative
        raise ValueError("weights must be non-negative and not all zero")
    idx = np.nonzero(p > 0)[0]
    xs, ps = x0[idx], p[idx]
    total = sum((arb(float(v)) for v in ps), arb(0))
    w = [arb(float(v)) / total for v in ps]
    r = x0.shape[1]
    xm = _mat(xs)
    wx = arb_mat(len(idx), r, [w[i] * xm[i, k] for i in range(len(idx)) for k in range(r)])
    mean = [sum((wx[i, k] for i in range(len(idx))), arb(0)) for k in range(r)]
    second = xm.transpose() * wx  # sum_i w_i x_i x_i^T
    return arb_mat(r, r, [second[a, b] - mean[a] * mean[b] for a in range(r) for b in range(r)])


def kappa_lower_dual(x0: np.ndarray, y0: np.ndarray, p: np.ndarray, q: np.ndarray, k: np.ndarray,
                     similarity: np.ndarray | None = None, prec_bits: int = PRECISION["kappa"]) -> Fraction | None:
    """Well-formed input and a returned value v imply kappa(X0 Y0^T) >= v (Lemmas K1, K1' of
    proofs/kappa_duality_contrast.md): v is the lower end of the ball for
    tr(K^T Sig_p Sig_q) / sqrt(rho), rho an upper bound on the spectral radius of
    G = K^T Sig_p K Sig_q, namely ||D^-1 G D||_inf for the binary64 matrix D = ``similarity``
    (identity when None; D^-1 G D is enclosed by an Arb solve, so the exact D^-1 is used).
    None when the trace is not certainly positive or D is not certainly invertible."""
    r = x0.shape[1]
    with working_precision(prec_bits):
        sp, sq, km = weighted_covariance_ball(x0, p), weighted_covariance_ball(y0, q), _mat(k)
        prod = km.transpose() * sp * sq
        trace = sum((prod[i, i] for i in range(r)), arb(0))
        g = km.transpose() * sp * km * sq
        if similarity is not None:
            dm = _mat(similarity)
            try:
                g = dm.solve(g * dm)
            except ZeroDivisionError:
                return None
        rows = [sum((abs(g[i, j]) for j in range(r)), arb(0)) for i in range(r)]
        rho = rows[0]
        for v in rows[1:]:
            rho = rho.max(v)
        if not (rho.is_finite() and trace > 0):
            return None
        rho_up = arb(upper_fraction(rho).numerator) / arb(upper_fraction(rho).denominator)
        if not rho_up > 0:
            return None
        val = trace / rho_up.sqrt()
        return lower_fraction(val) if val.is_finite() else None  # the end point at prec_bits


def kappa_lower_contrast(x0: np.ndarray, y0: np.ndarray, a: int, a2: int, b: int, b2: int,
                         prec_bits: int = PRECISION["kappa"]) -> Fraction:
    """Well-formed input implies kappa(X0 Y0^T) >= the returned value: the lower end of the ball for
    |T_ab - T_ab' - T_a'b + T_a'b'| / 4 (Lemma K2); 0 when the ball contains 0."""
    with working_precision(prec_bits):
        dx = [arb(float(u)) - arb(float(v)) for u, v in zip(x0[a], x0[a2])]
        dy = [arb(float(u)) - arb(float(v)) for u, v in zip(y0[b], y0[b2])]
        val = abs(sum((u * v for u, v in zip(dx, dy)), arb(0))) / 4
        return max(Fraction(0), lower_fraction(val))


def _max_row_norm_ball(rows_mat: arb_mat, centre: list[arb]) -> arb:
    n, r = rows_mat.nrows(), rows_mat.ncols()
    best = None
    for i in range(n):
        s = sum(((rows_mat[i, k] - centre[k]) ** 2 for k in range(r)), arb(0))
        best = s if best is None else best.max(s)
    return best.nonnegative_part().sqrt()  # the exact squared radius is >= 0


def radius_upper(x: np.ndarray, c: np.ndarray, prec_bits: int = PRECISION["kappa"]) -> Fraction:
    """rad(X) <= max_i ||x_i - c||; returns an exact rational upper bound (definition of rad)."""
    with working_precision(prec_bits):
        return upper_fraction(_max_row_norm_ball(_mat(x), [arb(float(v)) for v in c]))


def kappa_upper_primal(x0: np.ndarray, y0: np.ndarray, s: np.ndarray, c: np.ndarray, d: np.ndarray,
                       prec_bits: int = PRECISION["kappa"]) -> Fraction | None:
    """Well-formed input and a returned value v imply kappa(X0 Y0^T) <= v (Lemma K3 of
    proofs/kappa_duality_contrast.md): X = X0 S, Y = Y0 S^{-T} factor T, with S^{-1} enclosed in
    balls; v bounds max_i ||S^T x_i - c|| * max_j ||S^{-1} y_j - d|| from above.
    None when S is not certainly invertible."""
    with working_precision(prec_bits):
        sm = _mat(s)
        try:
            sinv = sm.inv()
        except ZeroDivisionError:
            return None
        rx = _max_row_norm_ball(_mat(x0) * sm, [arb(float(v)) for v in c])
        ry = _max_row_norm_ball(_mat(y0) * sinv.transpose(), [arb(float(v)) for v in d])
        val = rx * ry
        return upper_fraction(val) if val.is_finite() else None


def native_gamma_upper(queries: np.ndarray, keys: np.ndarray, scale: float, cq: np.ndarray,
                       ck: np.ndarray) -> Fraction:
    """Gamma = beta rad(Q) rad(K) <= beta max_i ||q_i - cq|| max_j ||k_j - ck|| (beta >= 0)."""
    if scale < 0:
        raise ValueError("scale must be >= 0")
    return Fraction(scale) * radius_upper(queries, cq) * radius_upper(keys, ck)
