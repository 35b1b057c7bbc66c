"""The critical tolerance of a decoder row set (untrusted, float64), shared by every eps.

For rows S (p of them) let M = A_S.  A decoder ``||M W - I||_inf + eps max_j ||W_j||_1 < 1``
exists exactly when W = 0 is not optimal, i.e. when

    eps*(S) = max { min_i (P_ii - sum_{k != i} |P_ik|) : P = M D, max_j ||D_j||_1 <= 1 }  >  eps,

and then ``W = D / max_i P_ii`` has value ``1 - (margin - eps ||D||) / max_i P_ii < 1``.  By LP
duality eps*(S) = min { sum_j max_k |(M^T Y)_jk| : Y_ii = -y_i, |Y_ik| <= y_i, y >= 0,
sum y = 1 }, so any such Y bounds eps*(S) from above and any D from below.  One bracket
[lb, ub] decides the set at every tolerance outside it; eps* falls as rows are added (a subset's
bracket bounds a superset's from above, a superset's a subset's from below).

``SetOracle`` brackets a set first with the LP on columns merged into groups of similar profile
(a restriction: its D is a valid D on all columns, its dual Y is evaluated on all columns), then,
only when a tolerance falls inside the bracket, with the LP on all columns.  Every W it returns is
checked in float64 (value <= 1 - MARGIN); nothing here is trusted.
"""

from __future__ import annotations

from dataclasses import dataclass

import highspy
import numpy as np
import scipy.sparse as sp

from softrank.advisors.highs import new_highs
from softrank.fastpath.float64 import MARGIN, decoder_value
from softrank.fastpath.lower.decoder_ipm import eps_star_ipm
from softrank.fastpath.operator_cache import OperatorCache

GROUPS = 96  # column groups of the first, merged LP
KMEANS_STEPS = 8
EARLY_ITERATIONS = 15  # first LP of a set: the interior-point iterate after this many iterations
IPM_TOL = 1e-6  # HiGHS interior-point optimality tolerance of the eps* LPs it solves
IPM_MAX_P = 56  # eps* LPs of up to this many rows by the structured interior-point method
# (a complete solve 3-5x faster than HiGHS IPX at p = 16-40, 1.6x at p = 56; its memory grows as p^4)
SCREEN_ROWS = 3  # a set is first screened by the subset of its last row and the rows most like it


@dataclass
class SetBracket:
    rows: np.ndarray  # the order of D's columns
    lb: float
    ub: float
    D: np.ndarray | None  # N x p with max_j ||D_j||_1 <= 1 achieving lb
    stage: int  # LP stages done (``SetOracle._stages``); 0: implied by other sets only


def margin_of(M: np.ndarray, D: np.ndarray) -> float:
    """min_i (P_ii - sum_{k != i} |P_ik|) / max_j ||D_j||_1 for P = M D (a lower bound on eps*)."""
    norm = float(np.abs(D).sum(axis=1).max()) if D.size else 0.0
    if norm <= 0.0:
        return 0.0
    P = M @ D
    d = np.diag(P)
    return float((d - (np.abs(P).sum(axis=1) - np.abs(d))).min() / norm)


def dual_bound(M: np.ndarray, Y: np.ndarray) -> float:
    """sum_j max_k |(M^T Y)_jk| for a Y of the dual form (an upper bound on eps*)."""
    return float(np.abs(M.T @ Y).max(axis=1).sum())


def _structured(y: np.ndarray, off: np.ndarray) -> np.ndarray:
    """The dual form: Y_ii = -y_i, |Y_ik| <= y_i, y >= 0 with sum 1."""
    y = np.maximum(y, 0.0)
    y = y / y.sum() if y.sum() > 0 else np.full(len(y), 1.0 / len(y))
    Y = np.clip(off, -y[:, None], y[:, None])
    np.fill_diagonal(Y, -y)
    return Y


def _dual_candidates(margin_duals: np.ndarray, lam: np.ndarray) -> list[np.ndarray]:
    """The dual-form Y of an LP iterate: y = |duals of the margin rows|, off-diagonal entries from
    the duals ``lam`` of the P rows, with both signs (the solvers' sign conventions differ)."""
    y = np.abs(margin_duals)
    return [_structured(y, lam), _structured(y, -lam)]


def _lp_matrix(M: np.ndarray) -> sp.csc_matrix:
    """The constraint matrix of ``_lp_model`` (rows: the p^2 - p off-diagonal P_ik = (M D)_ik,
    the p margin rows, the c rows ||D_j||_1 <= 1; columns: D+, D- (D_jk at j p + k), R+, R- of
    the off-diagonal P, z), assembled from coordinates."""
    p, c = M.shape
    no, nD = p * p - p, c * p
    ii, kk = np.nonzero(~np.eye(p, dtype=bool))  # off-diagonal (i, k), row-major: LP row t
    t_of = np.zeros((p, p), dtype=np.int64)
    t_of[ii, kk] = np.arange(no)
    col = np.arange(nD)
    j, k = np.divmod(col, p)
    I = np.broadcast_to(np.arange(p)[None, :], (nD, p))
    keep = I != k[:, None]
    e_rows = t_of[I, k[:, None]][keep]
    e_cols = np.broadcast_to(col[:, None], (nD, p))[keep]
    e_vals = M[I, j[:, None]][keep]
    d_rows = np.concatenate([e_rows, no + k, no + p + j])
    d_cols = np.concatenate([e_cols, col, col])
    d_vals = np.concatenate([e_vals, -M[k, j], np.ones(nD)])
    m_vals = np.concatenate([-e_vals, M[k, j], np.ones(nD)])
    t = np.arange(no)
    r0, z = 2 * nD, 2 * nD + 2 * no
    rows = np.concatenate([d_rows, d_rows, t, no + ii, t, no + ii, no + np.arange(p)])
    cols = np.concatenate([d_cols, d_cols + nD, r0 + t, r0 + t, r0 + no + t, r0 + no + t, np.full(p, z)])
    vals = np.concatenate([d_vals, m_vals, -np.ones(no), np.ones(no), np.ones(no), np.ones(no), np.ones(p)])
    return sp.csc_matrix((vals, (rows, cols)), shape=(no + p + c, z + 1))


def _lp_model(M: np.ndarray):
    """max z  s.t.  P_off = M D (+/- split), z <= P_ii - sum_k |P_ik|, sum_k |D_jk| <= 1."""
    p, c = M.shape
    off = ~np.eye(p, dtype=bool)
    no, nD = p * p - p, c * p
    A = _lp_matrix(M)
    nv = A.shape[1]
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = nv, A.shape[0]
    lp.col_cost_ = np.r_[np.zeros(nv - 1), -1.0]
    lp.col_lower_ = np.r_[np.zeros(nv - 1), -highspy.kHighsInf]
    lp.col_upper_ = np.full(nv, highspy.kHighsInf)
    lp.row_lower_ = np.r_[np.zeros(no), np.full(p + c, -highspy.kHighsInf)]
    lp.row_upper_ = np.r_[np.zeros(no + p), np.ones(c)]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = A.indptr, A.indices, A.data
    return lp, off, no, nD


def eps_star_lp(M: np.ndarray, iterations: int | None = None):
    """The LP for eps*(rows of M) by the structured interior-point method
    (``decoder_ipm.eps_star_ipm``) up to ``IPM_MAX_P`` rows, else (or when its first step fails)
    by HiGHS, stopped after ``iterations`` if given (the iterate still gives valid bounds):
    (D, [Y candidates])."""
    if M.shape[0] > IPM_MAX_P:
        return eps_star_highs(M, iterations)
    D, yP = eps_star_ipm(M, iterations)
    if yP is None:
        return eps_star_highs(M, iterations)
    return D, _dual_candidates(np.diag(yP), np.where(~np.eye(M.shape[0], dtype=bool), yP, 0.0))


def eps_star_highs(M: np.ndarray, iterations: int | None = None):
    """The LP for eps*(rows of M) by HiGHS interior point (no crossover), stopped after
    ``iterations`` if given (the iterate still gives valid bounds): (D, [Y candidates])."""
    p, c = M.shape
    lp, off, no, nD = _lp_model(M)
    h = new_highs()
    for name, value in (("output_flag", False), ("solver", "ipm"), ("run_crossover", "off"),
                        ("presolve", "off"), ("time_limit", 20.0), ("ipm_optimality_tolerance", IPM_TOL)):
        h.setOptionValue(name, value)
    if iterations is not None:
        h.setOptionValue("ipm_iteration_limit", int(iterations))
    h.passModel(lp)
    h.run()
    sol = h.getSolution()
    x, rd = np.asarray(sol.col_value), np.asarray(sol.row_dual)
    if x.size != lp.num_col_ or rd.size != lp.num_row_:
        return np.zeros((c, p)), []
    D = (x[:nD] - x[nD:2 * nD]).reshape(c, p)
    lam = np.zeros((p, p))
    lam[off] = rd[:no]
    return D, _dual_candidates(rd[no:no + p], lam)


def column_groups(M: np.ndarray, k: int) -> np.ndarray:
    """Labels of the columns of M in k groups of similar profile (mass-weighted k-means on the
    columns scaled to unit l1 norm; started from the k heaviest columns)."""
    c = M.shape[1]
    if k >= c:
        return np.arange(c)
    mass = M.sum(axis=0) + 1e-300
    U = M / mass
    C = U[:, np.argsort(-mass, kind="stable")[:k]].copy()
    lab = np.zeros(c, dtype=np.int64)
    for _ in range(KMEANS_STEPS):
        d = (U * U).sum(axis=0)[:, None] - 2.0 * U.T @ C + (C * C).sum(axis=0)[None, :]
        lab = d.argmin(axis=1)
        w = np.zeros((M.shape[0], k))
        np.add.at(w.T, lab, (U * mass).T)
        tot = np.bincount(lab, weights=mass, minlength=k)
        keep = tot > 0
        C[:, keep] = w[:, keep] / tot[keep]
    return lab


def decoder_from(A: np.ndarray, rows: np.ndarray, D: np.ndarray, eps: float):
    """W = D / max_i P_ii (P = A_S D) and its float64 decoder value."""
    P = A[rows] @ D
    top = float(np.diag(P).max()) if len(rows) else 0.0
    if top <= 0.0:
        return np.inf, None
    W = D / top
    return decoder_value(A, rows, W, eps), W


class SetOracle:
    """Brackets of eps*(S) for the row sets of one operator, cached by set."""

    def __init__(self, A: np.ndarray, groups: int = GROUPS):
        self.A, self.groups = A, groups
        self.known: dict[frozenset, SetBracket] = {}
        self.lp_solves = 0

    def _stages(self, p: int) -> list[tuple[bool, int | None]]:
        """(merged columns, iteration limit) of the LPs tried in turn on a set of p rows."""
        if p > 1 and self.A.shape[1] > self.groups:
            return [(True, EARLY_ITERATIONS), (True, None), (False, None)]
        return [(False, EARLY_ITERATIONS), (False, None)]

    def _solve(self, rows: np.ndarray, merged: bool, iterations: int | None, stage: int) -> SetBracket:
        M = self.A[rows]
        lab = column_groups(M, self.groups) if merged else np.arange(M.shape[1])
        Mg = np.zeros((len(rows), int(lab.max()) + 1))
        np.add.at(Mg.T, lab, M.T)
        self.lp_solves += 1
        Dg, Ys = eps_star_lp(Mg, iterations)
        D = Dg[lab]
        lb = margin_of(M, D)
        ub = min([dual_bound(M, Y) for Y in Ys] + [1.0])
        return SetBracket(rows, max(lb, 0.0), max(ub, lb), D, stage)

    def bracket(self, rows, eps: float | None = None) -> SetBracket:
        """The bracket of the set: implied by known sets, else LPs of growing cost (merged columns
        and few iterations first) until ``eps`` falls outside it (without ``eps``: until the first
        complete LP)."""
        rows = np.asarray(rows, dtype=np.int64)
        key = frozenset(rows.tolist())
        b = self.known.get(key)
        if b is None:
            b = self._implied(key, rows)
            if eps is not None and not _decides(b, eps) and len(rows) >= 2 * (SCREEN_ROWS + 1):
                self._screen(rows, eps)
                b = self._implied(key, rows)
            if eps is not None and _decides(b, eps):
                return b
        stages = self._stages(len(rows))
        while b.stage < len(stages) and not (_decides(b, eps) if eps is not None else
                                             any(it is None for _, it in stages[:b.stage])):
            merged, iterations = stages[b.stage]
            b = _meet(b, self._solve(rows, merged, iterations, b.stage + 1))
        self.known[key] = b
        return b

    def _screen(self, rows: np.ndarray, eps: float) -> None:
        """Bracket a small subset at ``eps``: the last row with the rows most like it (largest
        overlap ``sum_j min(a_i, a_k)``); eps* of a subset bounds eps* of the set from above.  The
        subset's LPs stop as soon as its bracket decides ``eps`` (its first, early-stopped LP does
        nearly always: a complete LP after it cost as much again and decided no more sets)."""
        last = rows[-1]
        overlap = np.minimum(self.A[rows[:-1]], self.A[last]).sum(axis=1)
        sub = np.append(rows[:-1][np.argsort(-overlap, kind="stable")[:SCREEN_ROWS]], last)
        self.bracket(sub, eps)

    def _implied(self, key: frozenset, rows: np.ndarray) -> SetBracket:
        """The bracket implied by the known subsets (ub) and supersets (lb, with their D)."""
        out = SetBracket(rows, 0.0, 1.0, None, 0)
        for other, b in self.known.items():
            if other <= key and b.ub < out.ub:
                out.ub = b.ub
            if key <= other and b.lb > out.lb and b.D is not None:
                pos = [int(np.nonzero(b.rows == i)[0][0]) for i in rows]
                out.lb, out.D = b.lb, b.D[:, pos]
        out.ub = max(out.ub, out.lb)
        return out

    def decide(self, rows, eps: float):
        """(float64 value, W) of a decoder at ``eps`` when eps*(S) > eps; (inf, None) when
        eps*(S) <= eps; None when the bracket cannot tell (the caller solves the decoder LP)."""
        rows = np.asarray(rows, dtype=np.int64)
        b = self.bracket(rows, eps)
        if b.ub <= eps:
            return np.inf, None
        if b.lb <= eps or b.D is None:
            return None
        pos = [int(np.nonzero(b.rows == i)[0][0]) for i in rows]
        v, W = decoder_from(self.A, rows, b.D[:, pos], eps)
        return (v, W) if v <= 1.0 - MARGIN else None


def _decides(b: SetBracket, eps: float) -> bool:
    return b.ub <= eps or (b.lb > eps and b.D is not None)


def _meet(a: SetBracket, b: SetBracket) -> SetBracket:
    """The intersection of two brackets of one set (D from the larger lower end)."""
    hi = a if (a.lb >= b.lb and a.D is not None) or b.D is None else b
    ub = min(a.ub, b.ub)
    return SetBracket(hi.rows, hi.lb, max(ub, hi.lb), hi.D, max(a.stage, b.stage))


def set_oracle(op: OperatorCache) -> SetOracle:
    """The operator's ``SetOracle``, built on first use and kept with the operator's other factorizations."""
    got = op.derived.get("set_oracle")
    if got is None:
        got = op.derived["set_oracle"] = SetOracle(op.A)
    return got
