"""Search for a nerve-cycle certificate (untrusted): no B of rank <= k within eps.

The cones ``C(i, s) = {y : s a_i . y > eps ||y||_inf}`` cover the directions y that every B within
eps must keep out of its kernel; a set of signed rows is a simplex of their nerve when the cones
meet (one LP: ``max_{||y||_inf <= 1} min_l s_l a_{r_l} . y > eps``).  The search lists the simplices
of dimension <= k level by level (a simplex only when all its faces are simplices), then looks for a
mod-2 cycle of k-simplices with an odd number of sign-alternating ones by Gaussian elimination over
GF(2) (faces as bits, the alternating flag as the lowest bit: the flag alone must be a sum of
columns).  Every point of the answer is checked exactly (``nerve_checks``) before it is returned.
proofs/oracle_nerve_cycle.md says why such a cycle proves the cell impossible.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np

from softrank.advisors.cones import cone_point
from softrank.oracle.nerve_checks import check_nerve_cycle, checked_simplex, face

MAX_ROWS = 12  # larger cells: the first MAX_ROWS rows only (a cycle on them is a cycle of A)
MAX_LPS = 4000  # cone LPs per search
MARGIN = 1e-9  # a float LP value must clear eps by this before the point is tried exactly


def _cone_point(A: np.ndarray, rows: tuple, signs: tuple, eps: float):
    """A point y with s_l a_{r_l} . y > eps ||y||_inf for all l (float LP, proposed only), or None."""
    return cone_point(np.asarray(signs, dtype=np.float64)[:, None] * A[list(rows)], eps + MARGIN)


def signed_simplices(A: np.ndarray, eps: float, k: int, rows: list[int], max_lps: int = MAX_LPS,
                     deadline: float | None = None):
    """Signed row simplices with k + 1 vertices on ``rows`` (first sign +1) and their float points,
    listed level by level (a simplex only when all its faces are simplices); None past ``max_lps``
    cone LPs or past ``deadline`` (``time.perf_counter()``)."""
    points: dict[tuple, np.ndarray] = {}
    level = []
    lps = 0
    for r in rows:
        y = _cone_point(A, (r,), (1,), eps)
        lps += 1
        if y is not None:
            points[((r,), (1,))] = y
            level.append(((r,), (1,)))
    for _ in range(k):
        nxt = []
        for R, S in level:
            for r in rows:
                if r <= R[-1]:
                    continue
                for s in (1, -1):
                    cand = (R + (r,), S + (s,))
                    if any(face(*cand, j) not in points for j in range(len(cand[0]) - 1)):
                        continue
                    if lps >= max_lps or (deadline is not None and time.perf_counter() > deadline):
                        return None
                    lps += 1
                    y = _cone_point(A, *cand, eps)
                    if y is not None:
                        points[cand] = y
                        nxt.append(cand)
        level = nxt
    return [(R, S, points[(R, S)]) for R, S in level]


def _cycle(top: list) -> list | None:
    """Indices of k-simplices forming a mod-2 cycle with an odd number of alternating ones."""
    faces: dict[tuple, int] = {}
    basis: dict[int, tuple[int, int]] = {}  # leading bit -> (vector, combination of columns)
    for ci, (R, S, _) in enumerate(top):
        v = int(all(a != b for a, b in zip(S, S[1:])))
        for j in range(len(R)):
            v ^= 1 << (faces.setdefault(face(R, S, j), len(faces)) + 1)
        comb = 1 << ci
        while v:
            hb = v.bit_length() - 1
            if hb not in basis:
                basis[hb] = (v, comb)
                break
            bv, bc = basis[hb]
            v, comb = v ^ bv, comb ^ bc
    v, comb = 1, 0
    while v:
        if v.bit_length() - 1 not in basis:
            return None
        bv, bc = basis[v.bit_length() - 1]
        v, comb = v ^ bv, comb ^ bc
    return [i for i in range(len(top)) if comb >> i & 1]


def lower_bound(A, eps: Fraction, k: int, klass: str = "unrestricted", cell=None) -> dict | None:
    """A checked ``nerve-cycle`` certificate that no B of rank <= k is within eps, or None."""
    m, N = len(A), len(A[0])
    if k < 1 or k >= min(m, MAX_ROWS):
        return None
    Af = np.array([[float(x) for x in row] for row in A], dtype=np.float64)
    top = signed_simplices(Af, float(eps), k, list(range(min(m, MAX_ROWS))))
    if not top:
        return None
    for _ in range(3):  # a point that fails the exact check drops its simplex; search again
        pick = _cycle(top)
        if pick is None:
            return None
        cert = {"kind": "nerve-cycle", "simplices": [
            {"rows": list(top[i][0]), "signs": list(top[i][1]), "y": [str(Fraction(float(x))) for x in top[i][2]]}
            for i in pick]}
        if check_nerve_cycle(A, eps, cert, k, klass):
            return cert
        bad = {i for i, item in zip(pick, cert["simplices"]) if checked_simplex(A, eps, item, m, N) is None}
        if not bad:
            return None
        top = [t for i, t in enumerate(top) if i not in bad]
    return None
