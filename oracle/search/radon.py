"""Stochastic class at k = m - 1: one exact LP per split of the rows into two sides
(proofs/oracle_radon_stochastic.md).

A row-stochastic B has rank <= m - 1 iff two convex combinations of its rows, over disjoint
non-empty sets of rows P and Q, coincide.  With weights mu_i and u_i = mu_i b_i every condition is
linear, so each split {P, Q} of all m rows (row 0 in P; rows with mu_i = 0 take part in name
only) is one exact feasibility LP.  A feasible split gives a witness; every split infeasible
gives, per split, the reduced Farkas vector (w, g) that ``softrank.oracle.radon_checks`` re-checks.
Nothing here is trusted: ``softrank.oracle.search.decide`` re-checks what it returns.
"""

from __future__ import annotations

import itertools

from softrank.exact.rational import fmt_mat, fmt_vec
from softrank.oracle.search import lp as xlp
from softrank.oracle.search.reductions import nearest_probability_vector, witness_from_matrix


def splits(m: int) -> list[tuple[int, ...]]:
    """Every side vector s in {+1, -1}^m with s_0 = +1 and some -1: 2^(m-1) - 1 of them."""
    return [(1,) + tail for tail in itertools.product((1, -1), repeat=m - 1) if -1 in tail]


def radon_lp(A, eps, signs):
    """Rows (labels) of the split LP, variables mu_i, u_ij, t_ij:

      ("nn", i, j):  -u_ij <= 0                          ("g", i):  sum_j t_ij - eps mu_i <= 0
      ("p", i, j):   mu_i a_ij - u_ij - t_ij <= 0        ("sum", i): sum_j u_ij - mu_i = 0
      ("n", i, j):  -mu_i a_ij + u_ij - t_ij <= 0        ("side", s): sum_{s_i = s} mu_i = 1
      ("meet", j):   sum_i s_i u_ij = 0
    """
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    for i in range(m):
        mu = ("mu", i)
        for j in range(N):
            u, t = ("u", i, j), ("t", i, j)
            b.le({u: -1}, 0, ("nn", i, j))
            b.le({mu: A[i][j], u: -1, t: -1}, 0, ("p", i, j))
            b.le({mu: -A[i][j], u: 1, t: -1}, 0, ("n", i, j))
        b.le({**{("t", i, j): 1 for j in range(N)}, mu: -eps}, 0, ("g", i))
        b.eq({**{("u", i, j): 1 for j in range(N)}, mu: -1}, 0, ("sum", i))
    for s in (1, -1):
        b.eq({("mu", i): 1 for i in range(m) if signs[i] == s}, 1, ("side", s))
    for j in range(N):
        b.eq({("u", i, j): signs[i] for i in range(m)}, 0, ("meet", j))
    return b


def _witness(A, b, x):
    """b_i = u_i / mu_i where mu_i > 0, else the nearest probability vector to a_i."""
    m, N = len(A), len(A[0])
    rows = []
    for i in range(m):
        mu = b.value(x, ("mu", i))
        if mu > 0:
            rows.append([b.value(x, ("u", i, j)) / mu for j in range(N)])
        else:
            rows.append(nearest_probability_vector(A[i]))
    return rows


def _separation(A, b, res, signs):
    """The split's Farkas vector reduced to w (multipliers of "meet") and g_i = beta_i - alpha_i
    (the "n" minus the "p" multipliers); the checker recomputes everything else."""
    m, N = len(A), len(A[0])
    y, z = b.ub_multipliers(res.y), b.eq_multipliers(res.z)
    w = [-z[("meet", j)] for j in range(N)]
    g = [[y[("n", i, j)] - y[("p", i, j)] for j in range(N)] for i in range(m)]
    return {"signs": list(signs), "w": fmt_vec(w), "g": fmt_mat(g)}


def radon_decide(A, eps, method="auto", stats=None):
    """Feasible (a witness of rank <= m - 1) or impossible (kind ``radon-separation``).

    Assumes every row is within eps of the simplex (checked before by the oracle)."""
    refuted = []
    for signs in splits(len(A)):
        b = radon_lp(A, eps, signs)
        res = xlp.feasibility(b.build(), method)
        if stats is not None:
            stats["lps"] = stats.get("lps", 0) + 1
        if res.feasible:
            return "feasible", witness_from_matrix(
                _witness(A, b, res.x), construction="rows of the two sides meet (Radon split)",
                signs=list(signs))
        refuted.append(_separation(A, b, res, signs))
    return "impossible", {"kind": "radon-separation", "splits": refuted}
