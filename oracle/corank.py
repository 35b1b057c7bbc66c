"""The oracle's corank reductions: k = N - 1 (a kernel vector of B) and k = m - 1 (a cokernel
vector), each as exact LPs per column or sign pattern (proofs/oracle_kN_minus_1.md,
proofs/oracle_km_minus_1.md).  Like ``softrank.oracle.reductions``, nothing here is trusted:
``softrank.oracle.decide`` re-checks every certificate returned.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

from softrank.exact import lp as xlp
from softrank.exact.rational import fmt, fmt_vec, matvec, transpose
from softrank.oracle.reductions import witness_from_matrix

ZERO = Fraction(0)
ONE = Fraction(1)


# ---------------------------------------------------------------- k = N - 1

def _kernel_lp(A, j):
    """min tau  s.t.  w_j = 1, |w_l| <= 1, -tau <= (A w)_i <= tau   (w_j substituted)."""
    m, N = len(A), len(A[0])
    b = xlp.Builder()
    b.var("tau")
    for i in range(m):
        coefs = {("w", l): A[i][l] for l in range(N) if l != j}
        b.le({**coefs, "tau": -1}, -A[i][j], ("p", i))
        b.le({**{k: -v for k, v in coefs.items()}, "tau": -1}, A[i][j], ("n", i))
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
    best = None
    ys = []
    for j in range(N):
        b = _kernel_lp(A, j)
        res = xlp.solve(b.build(), method)
        if stats is not None:
            stats["lps"] = stats.get("lps", 0) + 1
        if res.status != "optimal":  # pragma: no cover - feasible and bounded below by 0
            raise xlp.LPVerificationError("kernel LP not optimal")
        mult = b.ub_multipliers(res.y)
        ys.append([mult[("p", i)] - mult[("n", i)] for i in range(m)])
        w = [ONE if l == j else b.value(res.x, ("w", l)) for l in range(N)]
        if best is None or res.value < best[0]:
            best = (res.value, j, w)
    t, j0, w = best
    return {"kind": "kernel", "value": fmt(t), "column": j0, "w": fmt_vec(w), "y": [fmt_vec(y) for y in ys]}


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
        col = {("y", i): A[i][j] for i in range(m)}
        b.le({**col, ("tau", j): -1}, 0, ("p", j))
        b.le({**{k: -v for k, v in col.items()}, ("tau", j): -1}, 0, ("n", j))
    for i in range(m):
        b.le({("y", i): -signs[i]}, 0, ("o", i))
    b.eq({("y", i): signs[i] for i in range(m)}, 1, "sum")
    b.minimise({("tau", j): 1 for j in range(N)})
    return b


def cokernel_threshold(A, method="auto", stats=None):
    """eps*_{m-1} = min_{||y||_1 = 1} ||A^T y||_1, exactly, with its certificate (2^(m-1) LPs).
    proofs/oracle_km_minus_1.md."""
    m, N = len(A), len(A[0])
    best = None
    orthants = []
    for tail in itertools.product((1, -1), repeat=m - 1):
        signs = (1,) + tail
        b = _cokernel_lp(A, signs)
        res = xlp.solve(b.build(), method)
        if stats is not None:
            stats["lps"] = stats.get("lps", 0) + 1
        if res.status != "optimal":  # pragma: no cover
            raise xlp.LPVerificationError("cokernel LP not optimal")
        mult = b.ub_multipliers(res.y)
        w = [mult[("p", j)] - mult[("n", j)] for j in range(N)]
        orthants.append({"signs": list(signs), "w": fmt_vec(w)})
        y = [b.value(res.x, ("y", i)) for i in range(m)]
        if best is None or res.value < best[0]:
            best = (res.value, y)
    t, y = best
    return {"kind": "cokernel", "value": fmt(t), "y": fmt_vec(y), "orthants": orthants}


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
