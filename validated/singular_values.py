"""Lemma E (proofs/lemma_E_singular_values.md): proven enclosures of the singular values of a
matrix M, and of its Frobenius tail ``t_k(M) = sqrt(sum_{i>k} sigma_i(M)^2)``, from a float SVD
``M_f ~ U diag(s) V^T`` (the Rump / Miyajima route).

With ``f_u >= ||U^T U - I||_2 < 1``, ``f_v >= ||V^T V - I||_2 < 1`` and ``rho >= ||M - U S V^T||_F``
(M the exact matrix, of which M_f is only an approximation within ``delta_F`` in Frobenius norm),
and s sorted by decreasing absolute value:

    c_lo |s_i| - rho <= sigma_i(M) <= c_hi |s_i| + rho
    c_lo ||s_{>k}||_2 - rho <= t_k(M) <= c_hi ||s_{>k}||_2 + rho

with ``c_lo <= sqrt((1 - f_u)(1 - f_v))`` and ``c_hi >= sqrt((1 + f_u)(1 + f_v))``.

Two routes compute ``f_u, f_v, rho``: ``binary64-bound`` (BLAS products with the a-priori bounds
of proofs/binary64_error_bounds.md, computed by ``binary64_norms``) and ``arb`` (Arb ball matrices; M itself may be given as balls).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from flint import arb, arb_mat

from softrank.validated.balls import arb_mat_from_floats, float_at_least, float_at_most, upper_fraction
from softrank.validated.binary64_norms import (ETA, U, frobenius_sq_lower, frobenius_sq_upper, frobenius_upper,
                                               product_error_frobenius_upper, sqrt_lower, sqrt_upper)
from softrank.validated.float_bounds import gamma
from softrank.validated.precision import working_precision

LEMMA_E = "proofs/lemma_E_singular_values.md"
UNAVAILABLE = "Lemma E bounds unavailable (float SVD not orthogonal enough)"


@dataclass
class SvdBounds:
    """The data of Lemma E for one matrix M: every field is a proven bound (exact rationals)."""

    s: np.ndarray  # |s| sorted decreasing (exact binary64 values)
    c_lo: Fraction  # <= sigma_min(U) sigma_min(V)
    c_hi: Fraction  # >= sigma_max(U) sigma_max(V)
    rho: Fraction  # >= ||M - U diag(s) V^T||_F for the exact M
    f_u: Fraction
    f_v: Fraction
    route: str


def _float_svd(m: np.ndarray, svd=None):
    """The thin float SVD of ``m`` (or the one given), untrusted: everything below checks it; None
    when it is not finite."""
    u, s, vt = np.linalg.svd(m, full_matrices=False) if svd is None else svd
    return (u, s, vt) if all(np.all(np.isfinite(x)) for x in (u, s, vt)) else None


def _float_up(q: Fraction) -> Fraction | None:
    """``q`` rounded up to binary64, as a rational; None beyond binary64's range (no bound then)."""
    f = float_at_least(q)
    return Fraction(f) if math.isfinite(f) else None


def _bounds(s: np.ndarray, f_u, f_v, rho, route: str) -> SvdBounds | None:
    """Lemma E's data from proven ``f_u``, ``f_v`` and ``rho`` (None when one is missing, a
    defect is >= 1 or rho is beyond binary64): ``c_lo``, ``c_hi`` and ``rho`` rounded outward, s
    sorted by decreasing |s_i|."""
    rho = None if rho is None else _float_up(rho)
    if None in (f_u, f_v, rho) or f_u >= 1 or f_v >= 1:
        return None
    c_lo = Fraction(float_at_most(sqrt_lower((1 - f_u) * (1 - f_v))))
    c_hi = Fraction(float_at_least(sqrt_upper((1 + f_u) * (1 + f_v))))
    return SvdBounds(s=np.sort(np.abs(s))[::-1].copy(), c_lo=c_lo, c_hi=c_hi, rho=rho,
                     f_u=f_u, f_v=f_v, route=route)


def _orthogonality_defect_binary64(q: np.ndarray) -> Fraction | None:
    """``>= ||Q^T Q - I||_F`` for the exact binary64 Q (a x p): the computed ``G = fl(Q^T Q)``
    is within ``gamma_a |Q|^T |Q| + a eta`` entrywise (R3), ``|| |Q|^T|Q| ||_F <= ||Q||_F^2``, and
    ``D = fl(G - I)`` rounds only the diagonal: ``|G - I| <= |D| / (1 - u)``."""
    a, p = q.shape
    g = q.T @ q
    g[np.diag_indices(p)] -= 1.0
    d = frobenius_upper(g)
    qf2 = frobenius_sq_upper(q)
    if d is None or qf2 is None:
        return None
    return _float_up(d / (1 - U) + gamma(a) * qf2 + p * a * ETA)


def svd_bounds_binary64(m_f: np.ndarray, delta_f: Fraction = Fraction(0), svd=None) -> SvdBounds | None:
    """Lemma E, binary64-bound route, for an exact M with ``||M - m_f||_F <= delta_f``.

    Residual: ``P = fl(fl(U s) V^T)``, ``R = fl(m_f - P)``;
    ``||m_f - U S V^T||_F <= ||R||_F/(1-u) + ||P - (Us)_f V^T||_F + ||((Us)_f - U S) V^T||_F``
    (R2, R3 and N4 of proofs/binary64_error_bounds.md).  None when a bound is unavailable (overflow, f >= 1)."""
    svd = _float_svd(m_f, svd)
    if svd is None:
        return None
    (a, b), (u, s, vt) = m_f.shape, svd
    p = s.shape[0]
    f_u, f_v = _orthogonality_defect_binary64(u), _orthogonality_defect_binary64(np.ascontiguousarray(vt.T))
    if f_u is None or f_v is None or f_u >= 1 or f_v >= 1:
        return None
    us = u * s[None, :]
    r_f, us_f, v_f = frobenius_upper(m_f - us @ vt), frobenius_upper(us), frobenius_upper(vt)
    if r_f is None or us_f is None or v_f is None:
        return None
    scale_err = (U * us_f + sqrt_upper(Fraction(a * p)) * ETA) / (1 - U) * v_f
    rho = r_f / (1 - U) + product_error_frobenius_upper(us_f, v_f, p, a, b) + scale_err + delta_f
    return _bounds(s, f_u, f_v, rho, "binary64-bound")


def _arb_frobenius_upper(rows: list[list[arb]]) -> Fraction:
    total = arb(0)
    for row in rows:
        for x in row:
            total += x * x
    # A ball for a sum of squares may reach below 0 (x * x of a ball around 0); the exact value
    # is >= 0, so intersecting with [0, inf) keeps it and makes sqrt defined.
    return upper_fraction(total.nonnegative_part().sqrt()) if total.is_finite() else None


def svd_bounds_arb(m_balls: arb_mat, m_mid: np.ndarray, svd=None) -> SvdBounds | None:
    """Lemma E, Arb route: M is any matrix contained in the ball matrix ``m_balls``; the float SVD
    is taken of ``m_mid`` (any float matrix; only its quality, not its correctness, matters)."""
    svd = _float_svd(m_mid, svd)
    if svd is None:
        return None
    u, s, vt = svd
    with working_precision("singular_values"):
        ub, vb = arb_mat_from_floats(u), arb_mat_from_floats(vt.T)
        sb, eye = arb_mat_from_floats(np.diag(s)), arb_mat_from_floats(np.eye(s.shape[0]))
        rho = _arb_frobenius_upper((m_balls - (ub * sb) * vb.transpose()).tolist())
        f_u = _arb_frobenius_upper((ub.transpose() * ub - eye).tolist())
        f_v = _arb_frobenius_upper((vb.transpose() * vb - eye).tolist())
    return _bounds(s, f_u, f_v, rho, "arb")


def singular_values_enclosed(b: SvdBounds) -> list[tuple[Fraction, Fraction]]:
    """Lemma E: ``lo_i <= sigma_i(M) <= hi_i`` for i = 1..p (exact rationals, lo_i >= 0)."""
    out = []
    for si in b.s.tolist():
        q = Fraction(si)
        out.append((max(Fraction(0), b.c_lo * q - b.rho), b.c_hi * q + b.rho))
    return out


def tail_norm_enclosed(b: SvdBounds, k: int) -> tuple[Fraction, Fraction]:
    """Lemma E (tail form): ``lo <= t_k(M) = sqrt(sum_{i>k} sigma_i(M)^2) <= hi`` (lo >= 0).
    ``||s_{>k}||_2^2`` is bounded from its binary64 evaluation by N1 (R3) of
    proofs/binary64_error_bounds.md on the binary64-bound route, and summed in exact rationals on
    the Arb route (which assumes nothing of binary64 arithmetic)."""
    tail = np.ascontiguousarray(b.s[k:])
    sq_lo, sq_hi = (frobenius_sq_lower(tail), frobenius_sq_upper(tail)) if b.route != "arb" else (None, None)
    if sq_lo is None or sq_hi is None:  # the Arb route, or an overflow of the float sum: exact rationals
        sq_lo = sq_hi = sum((Fraction(x) ** 2 for x in tail.tolist()), Fraction(0))
    lo = max(Fraction(0), b.c_lo * sqrt_lower(sq_lo) - b.rho)
    hi = b.c_hi * sqrt_upper(sq_hi) + b.rho
    return lo, hi
