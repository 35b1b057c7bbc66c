"""The exact reductions of the oracle (docs/oracle.md, proofs/oracle_*.md): each builds exact LPs,
solves them with ``softrank.oracle.search.lp`` (certificates checked by ``softrank.exact.lp``) and
turns the LP certificates into the oracle's semantic certificates, which ``softrank.oracle.checks``
re-checks independently.

Every function returns ``(verdict, certificate)`` or a threshold certificate; none of them is
trusted: ``softrank.oracle.search.decide`` re-checks what they return before handing it out.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from softrank.exact.rational import ONE, ZERO, fmt, fmt_mat, fmt_vec, inf_norm, rank_factor, row_l1
from softrank.oracle.check_basics import simplex_distance
from softrank.oracle.search import lp as xlp


def solve_optimal(b, method, stats, what: str):
    """Solve the LP built by ``b`` exactly (``softrank.oracle.search.lp.solve``: a checked certificate),
    count it in ``stats``, and insist on an optimum (these LPs are feasible and bounded)."""
    res = xlp.solve(b.build(), method)
    if stats is not None:
        stats["lps"] = stats.get("lps", 0) + 1
    if res.status != "optimal":  # pragma: no cover - feasible and bounded by construction
        raise xlp.LPVerificationError(f"{what} LP not optimal")
    return res


def witness_certificate(X, Y, **derivation) -> dict:
    cert = {"kind": "witness", "X": fmt_mat(X), "Y": fmt_mat(Y)}
    if derivation:
        cert["derivation"] = derivation
    return cert


def witness_from_matrix(B, **derivation) -> dict:
    """The witness certificate of an explicit rational B, through its exact rank factorisation."""
    X, Y = rank_factor(B)
    return witness_certificate(X, Y, **derivation)


# ---------------------------------------------------------------- k = 0, k >= rank

def k0_unrestricted(A, eps):
    """proofs/oracle_k0.md: feasible iff ||A||_inf <= eps (B = 0)."""
    m, N = len(A), len(A[0])
    norms = [row_l1(r) for r in A]
    worst = max(range(m), key=lambda i: norms[i])
    if norms[worst] <= eps:
        return "feasible", witness_certificate([[] for _ in range(m)], [[] for _ in range(N)], construction="B = 0")
    return "impossible", {"kind": "row-norm", "row": worst, "row_l1": fmt(norms[worst])}


def nearest_probability_vector(a) -> list[Fraction]:
    """A probability vector p with ||a - p||_1 = |P - 1| + Q (proofs/oracle_stochastic_rows.md)."""
    pos = [x if x > 0 else ZERO for x in a]
    P = sum(pos, ZERO)
    if P >= 1:
        return [x / P for x in pos]
    j = max(range(len(a)), key=lambda t: a[t])
    p = list(pos)
    p[j] += 1 - P
    return p


def stochastic_rows(A, eps):
    """Stochastic class, rank unconstrained: feasible iff every row is within eps of the simplex.

    Returns ("impossible", cert) if some row is too far, else ("rows-ok", B) with B the row-wise
    nearest stochastic matrix (its rank may still exceed k)."""
    d = [simplex_distance(r) for r in A]
    worst = max(range(len(A)), key=lambda i: d[i])
    if d[worst] > eps:
        return "impossible", {"kind": "row-simplex-distance", "row": worst, "distance": fmt(d[worst])}
    return "rows-ok", [nearest_probability_vector(r) for r in A]


# ---------------------------------------------------------------- k = 1, unrestricted

def _signed_system(A, eps, rows, signs):
    """The LP of proofs/oracle_k1_unrestricted.md for rows (rows[0] = i0, mu_{i0} = 1) and signs.

    Variables v_j, mu_i (i != i0), t_ij.  Rows, with their labels:
      ("p", i, j):  mu_i a_ij - s_i v_j - t_ij <= 0
      ("n", i, j): -mu_i a_ij + s_i v_j - t_ij <= 0
      ("g", i):     sum_j t_ij - eps mu_i <= 0
    (for i0, mu_{i0} = 1 is substituted, so its constants move to the right-hand side).
    """
    N = len(A[0])
    b = xlp.Builder()
    for j in range(N):
        b.var(("v", j))
    i0 = rows[0]
    for i, s in zip(rows, signs):
        mu = None if i == i0 else ("mu", i)
        for j in range(N):
            a = A[i][j]
            t = ("t", i, j)
            if mu is None:
                b.le({("v", j): -s, t: -1}, -a, ("p", i, j))
                b.le({("v", j): s, t: -1}, a, ("n", i, j))
            else:
                b.le({mu: a, ("v", j): -s, t: -1}, 0, ("p", i, j))
                b.le({mu: -a, ("v", j): s, t: -1}, 0, ("n", i, j))
        g = {("t", i, j): 1 for j in range(N)}
        if mu is None:
            b.le(g, eps, ("g", i))
        else:
            g[mu] = -eps
            b.le(g, 0, ("g", i))
    return b


def _signed_node(A, eps, rows, signs, method):
    b = _signed_system(A, eps, rows, signs)
    res = xlp.feasibility(b.build(), method)
    N = len(A[0])
    if res.feasible:
        v = [b.value(res.x, ("v", j)) for j in range(N)]
        mu = {i: (ONE if i == rows[0] else b.value(res.x, ("mu", i))) for i in rows}
        return True, (v, mu)
    y = b.ub_multipliers(res.y)
    lam = [[y[("p", i, j)] - y[("n", i, j)] for j in range(N)] for i in rows]
    gam = [y[("g", i)] for i in rows]
    return False, {"rows": list(rows), "signs": list(signs), "lambda": fmt_mat(lam), "gamma": fmt_vec(gam)}


def _predicted_signs(A, rows):
    """Heuristic sign order from a float64 rank-1 SVD (ordering only; soundness never depends on it)."""
    try:
        import numpy as np

        M = np.array([[float(x) for x in r] for r in A], dtype=float)
        u = np.linalg.svd(M)[0][:, 0]
        ref = u[rows[0]] if u[rows[0]] != 0 else 1.0
        return {i: (1 if u[i] * ref >= 0 else -1) for i in rows}
    except (ImportError, ValueError, ArithmeticError):  # pragma: no cover - ordering only
        return {i: 1 for i in rows}


def k1_unrestricted(A, eps, method="auto", prune=True, stats=None):
    """proofs/oracle_k1_unrestricted.md.  Depth-first over sign patterns; a refuted partial pattern
    (a subset of rows containing i0) refutes all its extensions.  With ``prune=False`` every full
    pattern (2^(|I|-1) of them) is solved."""
    m, N = len(A), len(A[0])
    stats = stats if stats is not None else {}
    stats.setdefault("lps", 0)
    norms = [row_l1(r) for r in A]
    I = sorted((i for i in range(m) if norms[i] > eps), key=lambda i: (-norms[i], i))
    if not I:
        return "feasible", witness_certificate(
            [[] for _ in range(m)], [[] for _ in range(N)], construction="B = 0: every row has ||a_i||_1 <= eps"
        )
    pred = _predicted_signs(A, I)
    refuted = []
    search = _k1_pruned if prune else _k1_exhaustive
    found = search(A, eps, I, pred, method, stats, refuted)
    if found:
        signs, (v, mu) = found
        return _k1_witness(m, I, signs, v, mu)
    return "impossible", {"kind": "rank1-signed", "rows": list(I), "patterns": refuted}


def _k1_witness(m, I, signs, v, mu):
    """B = x v^T with x_i = sigma_i / mu_i on the rows of I and 0 on the free rows."""
    x = [ZERO] * m
    for i, s in zip(I, signs):
        if mu[i] <= 0:  # pragma: no cover - impossible by the proof; the re-check would catch it
            raise ArithmeticError("mu_i <= 0 in a feasible signed system")
        x[i] = Fraction(s) / mu[i]
    return "feasible", witness_certificate(
        [[xi] for xi in x], [[vj] for vj in v],
        construction="B = x v^T, x_i = sigma_i / mu_i on non-free rows, 0 on free rows",
        free_rows=[i for i in range(m) if i not in I], signs=dict(zip(map(str, I), signs)),
    )


def _k1_exhaustive(A, eps, I, pred, method, stats, refuted):
    """Every full sign pattern in turn; returns (signs, (v, mu)) of the first feasible one, or None."""
    for tail in itertools.product((1, -1), repeat=len(I) - 1):
        signs = [1] + [t * pred[i] for t, i in zip(tail, I[1:])]
        stats["lps"] += 1
        ok, out = _signed_node(A, eps, I, signs, method)
        if ok:
            return signs, out
        refuted.append(out)
    return None


def _k1_pruned(A, eps, I, pred, method, stats, refuted):
    """The predicted full pattern first (for a feasible cell usually one LP), then depth-first
    over partial patterns, dropping every extension of a refuted one."""
    guess = [1] + [pred[i] for i in I[1:]]
    stats["lps"] += 1
    ok, out = _signed_node(A, eps, I, guess, method)
    if ok:
        return guess, out
    refuted.append(out)

    def dfs(signs):
        depth = len(signs)
        if signs == guess:
            return None  # refuted above
        stats["lps"] += 1
        ok, out = _signed_node(A, eps, I[:depth], signs, method)
        if not ok:
            refuted.append(out)
            return None
        if depth == len(I):
            return signs, out
        i = I[depth]
        for s in (pred[i], -pred[i]):
            found = dfs(signs + [s])
            if found:
                return found
        return None

    return dfs([1])


# ---------------------------------------------------------------- k = 1, stochastic

def rank1_stochastic_threshold(A, method="auto", stats=None):
    """min over probability vectors v of max_i ||a_i - v||_1 (one LP), with its certificate.
    proofs/oracle_k1_stochastic.md."""
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    b.var("tau")
    for j in range(N):
        b.le({("v", j): -1}, 0, ("v", j))
    b.eq({("v", j): 1 for j in range(N)}, 1, "sum")
    for i in range(m):
        for j in range(N):
            b.le({("v", j): -1, ("t", i, j): -1}, -A[i][j], ("p", i, j))
            b.le({("v", j): 1, ("t", i, j): -1}, A[i][j], ("n", i, j))
        b.le({**{("t", i, j): 1 for j in range(N)}, "tau": -1}, 0, ("g", i))
    b.minimise({"tau": 1})
    res = solve_optimal(b, method, stats, "rank-1 stochastic")
    mult = b.ub_multipliers(res.y)
    lam = [[mult[("p", i, j)] - mult[("n", i, j)] for j in range(N)] for i in range(m)]
    v = [b.value(res.x, ("v", j)) for j in range(N)]
    return {"kind": "rank1-stochastic", "value": fmt(res.value), "v": fmt_vec(v), "lambda": fmt_mat(lam)}


def rank1_stochastic_decide(A, eps, tcert):
    t = Fraction(tcert["value"])
    m = len(A)
    if t <= eps:
        v = [Fraction(x) for x in tcert["v"]]
        return "feasible", witness_certificate([[ONE] for _ in range(m)], [[x] for x in v], construction="B = 1 v^T")
    return "impossible", {"kind": "rank1-stochastic-dual", "lambda": tcert["lambda"], "threshold": tcert["value"]}


def norm_threshold(A) -> dict:
    return {"kind": "norm", "value": fmt(inf_norm(A))}


def simplex_rows_threshold(A) -> dict:
    return {"kind": "simplex-rows", "value": fmt(max(simplex_distance(r) for r in A))}
