"""Float64 HiGHS as an untrusted advisor: it proposes a basis; the certificate is rebuilt exactly.

Nothing HiGHS computes is used as a number: only its basis (which rows are active, which free
columns are non-basic at zero).  The basis system is solved in rationals (FLINT ``fmpq_mat``) and
the caller (``softrank.exact.lp.solve``) checks the resulting certificate exactly.

HiGHS is reached through the public ``highspy`` package; if it is not importable this returns
``None`` and the exact simplex runs.
"""

from __future__ import annotations

import os
import sys
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from softrank.advisors import Proposal

try:
    import highspy as _hs
except ImportError:  # pragma: no cover - highspy is a declared dependency; without it the simplex runs
    _hs = None

_silenced = False


def new_highs():
    """A ``highspy.Highs`` instance; the first one in a process prints HiGHS's banner on the C-level
    stdout before any option can be set, so that one construction runs with fd 1 on /dev/null."""
    global _silenced
    if _silenced:
        return _hs.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            try:
                return _hs.Highs()
            finally:
                os.dup2(saved, 1)
                _silenced = True
    finally:
        os.close(saved)


def available() -> bool:
    return _hs is not None


def _float_solve(lp):
    """Run HiGHS in binary64; return (status_is_optimal, col_status, row_status) or None."""
    n, p, q = lp.n, len(lp.A_ub), len(lp.A_eq)
    inf = _hs.kHighsInf
    cols: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for i, row in enumerate(lp.A_ub + lp.A_eq):
        for j, a in enumerate(row):
            if a:
                cols[j].append((i, float(a)))
    start, index, value = [0], [], []
    for col in cols:
        index.extend(i for i, _ in col)
        value.extend(a for _, a in col)
        start.append(len(index))
    model = _hs.HighsLp()
    model.num_col_ = n
    model.num_row_ = p + q
    model.col_cost_ = np.array([float(a) for a in lp.c], dtype=float)
    model.col_lower_ = np.full(n, -inf)
    model.col_upper_ = np.full(n, inf)
    model.row_lower_ = np.array([-inf] * p + [float(b) for b in lp.b_eq], dtype=float)
    model.row_upper_ = np.array([float(b) for b in lp.b_ub] + [float(b) for b in lp.b_eq], dtype=float)
    model.a_matrix_.format_ = _hs.MatrixFormat.kColwise
    model.a_matrix_.start_ = np.array(start, dtype=np.int32)
    model.a_matrix_.index_ = np.array(index, dtype=np.int32)
    model.a_matrix_.value_ = np.array(value, dtype=float)
    h = new_highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("solver", "simplex")
    h.passModel(model)
    h.run()
    status = h.getModelStatus()
    if status != _hs.HighsModelStatus.kOptimal:
        return None
    basis = h.getBasis()
    if not basis.valid:
        return None
    basic = _hs.HighsBasisStatus.kBasic
    col_basic = [s == basic for s in basis.col_status]
    row_basic = [s == basic for s in basis.row_status]
    return col_basic, row_basic


def solve_via_basis(lp) -> Proposal | None:
    """A candidate optimal certificate from HiGHS's basis, solved exactly; ``None`` if none."""
    if _hs is None or lp.n == 0:
        return None
    try:
        out = _float_solve(lp)
    except Exception:  # pragma: no cover - HiGHS failure is never fatal: the simplex runs
        return None
    if out is None:
        return None
    col_basic, row_basic = out
    n, p = lp.n, len(lp.A_ub)
    rows = lp.A_ub + lp.A_eq
    rhs = lp.b_ub + lp.b_eq
    active = [i for i, b in enumerate(row_basic) if not b]
    zero_cols = [j for j, b in enumerate(col_basic) if not b]
    if len(active) + len(zero_cols) != n:
        return None
    M = fmpq_mat(n, n)
    for r, i in enumerate(active):
        for j, a in enumerate(rows[i]):
            if a:
                M[r, j] = fmpq(a.numerator, a.denominator)
    for r, j in enumerate(zero_cols, start=len(active)):
        M[r, j] = 1
    b = fmpq_mat(n, 1, [fmpq(rhs[i].numerator, rhs[i].denominator) for i in active] + [fmpq(0)] * len(zero_cols))
    negc = fmpq_mat(n, 1, [fmpq(-a.numerator, a.denominator) for a in lp.c])
    try:
        xs = M.solve(b)
        lam = M.transpose().solve(negc)
    except ZeroDivisionError:
        return None
    x = [Fraction(int(xs[j, 0].p), int(xs[j, 0].q)) for j in range(n)]
    lamf = [Fraction(int(lam[t, 0].p), int(lam[t, 0].q)) for t in range(n)]
    if any(v != 0 for v in lamf[len(active) :]):
        return None  # a free column non-basic with a non-zero reduced cost: not optimal
    y = [Fraction(0)] * p
    z = [Fraction(0)] * len(lp.A_eq)
    for t, i in enumerate(active):
        if i < p:
            y[i] = lamf[t]
        else:
            z[i - p] = lamf[t]
    value = sum((a * v for a, v in zip(lp.c, x)), Fraction(0))
    return Proposal("optimal", x=x, y=y, z=z, value=value, route="highs-basis")
