"""The oracle's corank reductions: k = N - 1 (a kernel vector of B) and k = m - 1 (a cokernel
vector), each as exact LPs per column or sign pattern (proofs/oracle_kN_minus_1.md,
proofs/oracle_km_minus_1.md).  Like ``softrank.oracle.search.reductions``, nothing here is trusted:
``softrank.oracle.search.decide`` re-checks every certificate returned.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from softrank.exact.rational import ONE, ZERO, fmt, fmt_vec, matvec, transpose
from softrank.oracle.search import lp as xlp
from softrank.oracle.search.reductions import solve_optimal, witness_from_matrix


# ---------------------------------------------------------------- k = N - 1

def _abs_at_most(b, coefs, const, tau, tag) -> None:
    """The two rows of ``|coefs . x + const| <= tau``, named ("p", tag) and ("n", tag)."""
    b.le({**coefs, tau: -1}, -const, ("p", tag))
    b.le({**{k: -v for k, v in coefs.items()}, tau: -1}, const, ("n", tag))


def _abs_multipliers(b, res, count: int) -> list:
    """Multipliers of the pairs ``|...| <= tau`` of ``_abs_at_most``: ("p", t) minus ("n", t)."""
    mult = b.ub_multipliers(res.y)
    return [mult[("p", t)] - mult[("n", t)] for t in range(count)]


def _kernel_lp(A, j):
    """min tau  s.t.  w_j = 1, |w_l| <= 1, -tau <= (A w)_i <= tau   (w_j substituted)."""
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    b.var("tau")
    for i in range(m):
        _abs_at_most(b, {("w", l): A[i][l] for l in range(N) if l != j}, A[i][j], "tau", i)
    for l in range(N):
        if l != j:
            b.le({("w", l): 1}, 1, ("u", l))
            b.le({("w", l): -1}, 1, ("d", l))
    b.minimise({"tau": 1})
    return b


def kernel_threshold(A, method="auto", stats=None):
    """eps*_{N-1} = min_{||w||_inf = 1} ||A w||_inf, exactly, with its certificate (N LPs).
    proofs/oracle_kN_minus_1.md."""
    m, N = len(A), len(A[0])
    runs = [(j, *_solved(_kernel_lp(A, j), method, stats, "kernel")) for j in range(N)]
    j0, b, res = _first_least(runs)
    w = [ONE if l == j0 else b.value(res.x, ("w", l)) for l in range(N)]
    ys = [_abs_multipliers(b_j, res_j, m) for _, b_j, res_j in runs]
    return {"kind": "kernel", "value": fmt(res.value), "column": j0, "w": fmt_vec(w), "y": [fmt_vec(y) for y in ys]}


def _solved(b, method, stats, what):
    return b, solve_optimal(b, method, stats, what)


def _first_least(runs):
    """The (key, builder, result) with the least optimum; the first one on ties."""
    return min(runs, key=lambda run: run[2].value)


def kernel_decide(A, eps, tcert):
    """Decision at k = N - 1 from the threshold certificate (proofs/oracle_kN_minus_1.md)."""
    t = Fraction(tcert["value"])
    if t <= eps:
        w = [Fraction(x) for x in tcert["w"]]
        j = int(tcert["column"])
        Aw = matvec(A, w)
        B = [[A[i][l] - (Aw[i] * w[j] if l == j else ZERO) for l in range(len(w))] for i in range(len(A))]
        return "feasible", witness_from_matrix(
            B, construction="B = A - (A w)(w_j e_j)^T, B w = 0", w=tcert["w"], column=j
        )
    return "impossible", {"kind": "kernel-dual", "y": tcert["y"], "threshold": tcert["value"]}


# ---------------------------------------------------------------- k = m - 1

def _cokernel_lp(A, signs):
    """min sum_j tau_j  s.t.  -tau <= A^T y <= tau, s_i y_i >= 0, sum_i s_i y_i = 1."""
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    for i in range(m):
        b.var(("y", i))
    for j in range(N):
        _abs_at_most(b, {("y", i): A[i][j] for i in range(m)}, 0, ("tau", j), j)
    for i in range(m):
        b.le({("y", i): -signs[i]}, 0, ("o", i))
    b.eq({("y", i): signs[i] for i in range(m)}, 1, "sum")
    b.minimise({("tau", j): 1 for j in range(N)})
    return b


def cokernel_threshold(A, method="auto", stats=None):
    """eps*_{m-1} = min_{||y||_1 = 1} ||A^T y||_1, exactly, with its certificate (2^(m-1) LPs).
    proofs/oracle_km_minus_1.md."""
    m, N = len(A), len(A[0])
    patterns = [(1,) + tail for tail in itertools.product((1, -1), repeat=m - 1)]
    runs = [(signs, *_solved(_cokernel_lp(A, signs), method, stats, "cokernel")) for signs in patterns]
    orthants = [{"signs": list(signs), "w": fmt_vec(_abs_multipliers(b, res, N))} for signs, b, res in runs]
    _, b, res = _first_least(runs)
    y = [b.value(res.x, ("y", i)) for i in range(m)]
    return {"kind": "cokernel", "value": fmt(res.value), "y": fmt_vec(y), "orthants": orthants}


def cokernel_decide(A, eps, tcert):
    """Decision at k = m - 1 from the threshold certificate (proofs/oracle_km_minus_1.md)."""
    t = Fraction(tcert["value"])
    if t <= eps:
        y = [Fraction(x) for x in tcert["y"]]
        z = [ONE if yi > 0 else (-ONE if yi < 0 else ZERO) for yi in y]
        g = matvec(transpose(A), y)  # A^T y
        B = [[A[i][j] - z[i] * g[j] for j in range(len(g))] for i in range(len(A))]
        return "feasible", witness_from_matrix(
            B, construction="B = A - sign(y) (A^T y)^T, y^T B = 0", y=tcert["y"]
        )
    return "impossible", {"kind": "cokernel-dual", "orthants": tcert["orthants"], "threshold": tcert["value"]}
