"""Float64 HiGHS as an untrusted advisor for the nerve search (``softrank.oracle.search.nerve``): a point
in the intersection of signed row cones.  The point is only proposed; the caller checks the strict
inequalities it needs in exact rationals.
"""

from __future__ import annotations

import numpy as np

from softrank.advisors.highs import _hs, new_highs


def cone_point(M: np.ndarray, floor: float) -> np.ndarray | None:
    """y maximising ``min_l (M y)_l`` over ``||y||_inf <= 1`` when that maximum exceeds ``floor``
    (HiGHS, binary64), else None.  M: k x N, the signed rows."""
    if _hs is None:  # pragma: no cover - highspy is a declared dependency
        return None
    k, n = M.shape
    h = new_highs()
    h.setOptionValue("output_flag", False)
    inf = _hs.kHighsInf
    lp = _hs.HighsLp()
    lp.num_col_, lp.num_row_ = n + 1, k
    lp.col_cost_ = np.r_[np.zeros(n), -1.0]
    lp.col_lower_ = np.r_[-np.ones(n), -inf]
    lp.col_upper_ = np.r_[np.ones(n), inf]
    lp.row_lower_ = np.zeros(k)
    lp.row_upper_ = np.full(k, inf)
    full = np.hstack([M, -np.ones((k, 1))])  # rows: M y - t >= 0
    lp.a_matrix_.format_ = _hs.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.arange(0, (n + 1) * k + 1, n + 1, dtype=np.int32)
    lp.a_matrix_.index_ = np.tile(np.arange(n + 1, dtype=np.int32), k)
    lp.a_matrix_.value_ = full.ravel()
    h.passModel(lp)
    h.run()
    if h.getModelStatus() != _hs.HighsModelStatus.kOptimal:
        return None
    x = np.asarray(h.getSolution().col_value)
    if x.size != n + 1 or not np.all(np.isfinite(x)) or x[-1] <= floor:
        return None
    return x[:n]
