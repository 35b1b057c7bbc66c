"""Re-check of the stochastic k = m - 1 impossibility (kind ``radon-separation``): Fraction
arithmetic only, no solver.  proofs/oracle_radon_stochastic.md (R3, R4).
"""

from __future__ import annotations

from fractions import Fraction

from softrank.oracle.check_basics import as_ints, as_matrix, as_vector, dot


def side_bound(a, eps, s, w, g) -> Fraction:
    """c = a.g + eps ||g||_inf + max_j (s w_j - g_j): s w.b <= c for every probability vector b
    with ||a - b||_1 <= eps (R3)."""
    return dot(a, g) + eps * max(abs(x) for x in g) + max(s * wj - gj for wj, gj in zip(w, g))


def split_gap(A, eps, signs, w, g) -> Fraction:
    """max over side +1 of c_i plus max over side -1 of c_i; < 0 separates the two sides (R3)."""
    c = [side_bound(a, eps, s, w, gi) for a, s, gi in zip(A, signs, g)]
    return max(ci for ci, s in zip(c, signs) if s == 1) + max(ci for ci, s in zip(c, signs) if s == -1)


def check_radon(A, eps, cert) -> bool:
    """Every split of the rows (s_0 = +1, both sides non-empty) has (w, g) with a negative gap."""
    m, N = len(A), len(A[0])
    seen = set()
    for entry in cert["splits"]:
        signs = tuple(as_ints(entry["signs"]))
        if len(signs) != m or any(s not in (1, -1) for s in signs) or signs[0] != 1 or -1 not in signs:
            return False
        w = as_vector(entry["w"], N)
        g = as_matrix(entry["g"], rows=m, cols=N)
        if not split_gap(A, eps, signs, w, g) < 0:
            return False
        seen.add(signs)
    return len(seen) == 2 ** (m - 1) - 1  # seen holds only splits (s_0 = +1, some -1): all of them
