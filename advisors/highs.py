"""Float64 HiGHS as an untrusted advisor: it proposes a basis; the certificate is rebuilt exactly.

Nothing HiGHS computes is used as a number: only its basis (which rows are active, which free
columns are non-basic at zero).  The basis system is solved in rationals (``softrank.advisors.sparse_solve``) and
the caller (``softrank.oracle.search.lp.solve``) checks the resulting certificate exactly.

HiGHS is reached through the public ``highspy`` package; if it is not importable this returns
``None`` and the exact simplex runs.
"""

from __future__ import annotations

import os
import sys
from fractions import Fraction

import numpy as np
from softrank.advisors import Proposal, entries, sparse_solve

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


#: HiGHS settings tried in turn (``solve_via_basis(lp, attempt)``): a basis that is optimal in binary64
#: can be infeasible in exact arithmetic (found on a 60 x 60 rank-1 cell, 3,720 columns); tighter
#: tolerances, no presolve, or the interior point method with crossover then give another basis
OPTION_SETS = (
    {},
    {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    {"presolve": "off"},
    {"solver": "ipm", "run_crossover": "on"},
)
ATTEMPTS = len(OPTION_SETS)


def _run(lp, options=None):
    """HiGHS run in binary64 on ``lp`` with ``options`` (default: simplex, default tolerances);
    the ``Highs`` object if it reports an optimum, else None."""
    n, p, q = lp.n, len(lp.A_ub), len(lp.A_eq)
    inf = _hs.kHighsInf
    cols: list[list[tuple[int, float]]] = [[] for _ in range(n)]
    for i, row in enumerate(lp.A_ub + lp.A_eq):
        for j, a in entries(row):
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
    for key, value in (options or {}).items():
        h.setOptionValue(key, value)
    h.passModel(model)
    h.run()
    return h if h.getModelStatus() == _hs.HighsModelStatus.kOptimal else None


def float_solution(lp, options=None):
    """An optimal point of ``lp`` in binary64 (a numpy vector), or None: a proposal only, for
    searches whose result the core re-checks exactly (``softrank.oracle.search.decoder``)."""
    if _hs is None or lp.n == 0:
        return None
    try:
        h = _run(lp, options)
    except Exception:  # pragma: no cover - a HiGHS failure only means no proposal
        return None
    return None if h is None else np.array(h.getSolution().col_value, dtype=float)


def _float_solve(lp, options=None):
    """(col_basic, row_basic) of an optimal basis from ``_run``, or None."""
    h = _run(lp, options)
    if h is None:
        return None
    basis = h.getBasis()
    if not basis.valid:
        return None
    basic = _hs.HighsBasisStatus.kBasic
    col_basic = [s == basic for s in basis.col_status]
    row_basic = [s == basic for s in basis.row_status]
    return col_basic, row_basic


def solve_via_basis(lp, attempt: int = 0) -> Proposal | None:
    """A candidate optimal certificate from HiGHS's basis (settings ``OPTION_SETS[attempt]``),
    solved exactly; ``None`` if none."""
    if _hs is None or lp.n == 0 or not 0 <= attempt < ATTEMPTS:
        return None
    try:
        out = _float_solve(lp, OPTION_SETS[attempt])
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
    # the basis system: the active rows as equations, and x_j = 0 for the non-basic free columns
    M = [{j: a for j, a in entries(rows[i]) if a} for i in active] + [{j: Fraction(1)} for j in zero_cols]
    b = [rhs[i] for i in active] + [Fraction(0)] * len(zero_cols)
    Mt: list[dict] = [{} for _ in range(n)]
    for r, row in enumerate(M):
        for j, a in row.items():
            Mt[j][r] = a
    x = sparse_solve.solve(M, b, n)
    lamf = None if x is None else sparse_solve.solve(Mt, [-a for a in lp.c], n)
    if lamf is None:
        return None
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
