"""The eps* LP of a decoder row set by a small primal-dual interior-point method that uses the
LP's structure (untrusted, float64; the set oracle's solver).

The LP is ``decoder_oracle``'s: for M (p x c), max z over D (c x p) with P = M D,
z <= P_ii - sum_{k != i} |P_ik| (each i) and sum_k |D_jk| <= 1 (each j).  In standard form
(min c^T x, A x = b, x >= 0) its variables are D+, D- (c p each), R+, R- (the off-diagonal
|P_ik|, p^2 - p each), z, the margin slacks s (p) and the norm slacks t (c); its rows are the
p^2 entries of P (off-diagonal: P_ik - R+_ik + R-_ik = 0; diagonal: the margin row
-P_ii + sum_k (R+_ik + R-_ik) + z + s_i = 0) and the c norm rows (= 1).

A Mehrotra predictor-corrector step solves the normal equations A Theta A^T dy = r.  Their
matrix is [[F, C], [C^T, diag(h)]] with F (p^2 x p^2) block-diagonal by the column of P apart
from the R and z couplings, C (p^2 x c) and the norm rows' block diagonal, so the step costs one
p^2 x p^2 Cholesky factorization of the Schur complement F - C diag(1/h) C^T: a few
milliseconds at p = 15 where a general sparse interior-point solver takes several times that.
Stopped early, the iterate still gives valid bounds: the caller evaluates its D (a lower bound on
eps*) and its row duals, cast into the dual form (an upper bound), on the exact matrix.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg.lapack as lapack
import scipy.sparse as sp

GAP_TOL = 1e-7  # a run stops when the relative gap and both infeasibilities are below this
STEP = 0.99  # fraction of the step to the boundary


class _Structure:
    """Index maps and the sparse constraint matrix of the standard-form LP for M."""

    def __init__(self, M: np.ndarray):
        p, c = M.shape
        self.M, self.p, self.c = M, p, c
        nD, no = c * p, p * p - p
        self.nD, self.no = nD, no
        off = ~np.eye(p, dtype=bool)
        self.off_i, self.off_k = np.nonzero(off)  # row-major off-diagonal entries (i, k)
        self.sign = np.where(off, 1.0, -1.0)  # sigma_ik: P_ik enters its row with this sign
        # column offsets: D+ | D- | R+ | R- | z | s | t
        self.oR, self.oz, self.os, self.ot = 2 * nD, 2 * nD + 2 * no, 2 * nD + 2 * no + 1, 2 * nD + 2 * no + 1 + p
        self.n = self.ot + c
        self.A = self._matrix()
        self._constants()
        self.b = np.r_[np.zeros(p * p), np.ones(c)]
        self.cost = np.zeros(self.n)
        self.cost[self.oz] = -1.0

    def _matrix(self) -> sp.csr_matrix:
        p, c, M = self.p, self.c, self.M
        j, k = np.divmod(np.arange(self.nD), p)  # D_jk at j p + k
        i = np.arange(p)
        d_rows = (i[None, :] * p + k[:, None]).ravel()  # P entry (i, k), row i p + k
        d_cols = np.repeat(np.arange(self.nD), p)
        d_vals = (self.sign[i[None, :], k[:, None]] * M[i[None, :], j[:, None]]).ravel()
        fi, fk = self.off_i, self.off_k
        t = np.arange(self.no)
        rows = [d_rows, d_rows, p * p + j, p * p + j,
                fi * p + fk, fi * p + fi, fi * p + fk, fi * p + fi,
                i * p + i, i * p + i, p * p + np.arange(c)]
        cols = [d_cols, d_cols + self.nD, np.arange(self.nD), self.nD + np.arange(self.nD),
                self.oR + t, self.oR + t, self.oR + self.no + t, self.oR + self.no + t,
                np.full(p, self.oz), self.os + i, self.ot + np.arange(c)]
        vals = [d_vals, -d_vals, np.ones(self.nD), np.ones(self.nD),
                -np.ones(self.no), np.ones(self.no), np.ones(self.no), np.ones(self.no),
                np.ones(p), np.ones(p), np.ones(c)]
        return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                             shape=(p * p + c, self.n))

    def _constants(self) -> None:
        """The parts of the normal matrix that do not depend on theta."""
        p, M = self.p, self.M
        self.block_sign = self.sign.T[:, :, None] * self.sign.T[:, None, :]  # [k, i, i'] = s_ik s_i'k
        self.C_base = self.sign[:, :, None] * M[:, None, :]  # [i, k, j] = s_ik M_ij
        self.a, self.d = self.off_i * p + self.off_k, self.off_i * p + self.off_i  # (i, k) and (i, i) rows
        self.diag = np.arange(p) * (p + 1)
        self.diag_pairs = np.ix_(self.diag, self.diag)
        self.kk = np.arange(p)

    def normal_solver(self, theta: np.ndarray):
        """A solver of (A diag(theta) A^T) y = r, by the Schur complement on the P rows."""
        p, c, M, nD, no = self.p, self.c, self.M, self.nD, self.no
        tp, tm = theta[:nD].reshape(c, p), theta[nD:2 * nD].reshape(c, p)
        rp, rm = theta[self.oR:self.oR + no], theta[self.oR + no:self.oz]
        phi, delta = tp + tm, tp - tm
        h = phi.sum(axis=1) + theta[self.ot:]
        # F: per column k of P, sigma sigma^T o (M diag(phi_k) M^T), at rows (i, k), (i', k)
        F4 = np.zeros((p, p, p, p))  # F[i, k, i', k']
        blocks = np.matmul(M[None, :, :] * phi.T[:, None, :], M.T)  # [k, i, i'], by BLAS
        blocks *= self.block_sign
        F4[:, self.kk, :, self.kk] = blocks
        F = F4.reshape(p * p, p * p)
        a, d, diag = self.a, self.d, self.diag
        F[a, a] += rp + rm  # (a, a) and (a, d) pairs are distinct: plain indexing adds once each
        F[a, d] += rm - rp
        F[d, a] += rm - rp
        F[diag, diag] += np.bincount(self.off_i, weights=rp + rm, minlength=p) + theta[self.os:self.ot]
        F[self.diag_pairs] += theta[self.oz]  # z: every pair of margin rows
        C = (self.C_base * delta.T[None, :, :]).reshape(p * p, c)  # C[(i, k), j] = s_ik M_ij delta_jk
        Ch = C / h
        S = F - Ch @ C.T
        S[np.diag_indices_from(S)] += 1e-14 * max(1.0, float(np.abs(np.diag(S)).max()))
        L, info = lapack.dpotrf(S, lower=1, clean=0, overwrite_a=1)
        if info != 0:
            raise np.linalg.LinAlgError("the Schur complement is not positive definite")

        def solve(r: np.ndarray) -> np.ndarray:
            rf, rh = r[:p * p], r[p * p:]
            yf, _ = lapack.dpotrs(L, rf - Ch @ rh, lower=1)
            return np.concatenate([yf, (rh - C.T @ yf) / h])

        return solve


def eps_star_ipm(M: np.ndarray, iterations: int | None = None, max_iterations: int = 60):
    """The eps* LP of the rows M by the structured interior-point method, stopped after
    ``iterations`` if given: (D (c x p), y_P (p x p): the duals of the P rows, diagonal: margin
    rows), or (zeros, None) when a step fails before any iterate."""
    st = _Structure(np.asarray(M, dtype=np.float64))
    A, b, cost = st.A, st.b, st.cost
    AT = A.T.tocsr()
    limit = max_iterations if iterations is None else int(iterations)
    try:
        x, y, s = _start(st, A, AT, b, cost)
    except (np.linalg.LinAlgError, ValueError):
        return np.zeros((st.c, st.p)), None
    n = st.n
    for _ in range(limit):
        rp, rd = b - A @ x, cost - AT @ y - s
        mu = float(x @ s) / n
        pobj, dobj = float(cost @ x), float(b @ y)
        if (abs(pobj - dobj) <= GAP_TOL * (1.0 + abs(pobj)) and np.abs(rp).max() <= GAP_TOL
                and np.abs(rd).max() <= GAP_TOL):
            break
        theta = x / s
        try:
            solve = st.normal_solver(theta)
        except (np.linalg.LinAlgError, ValueError):
            break

        def direction(rc):
            dy = solve(rp + A @ (theta * rd - rc / s))
            ds = rd - AT @ dy
            return (rc - x * ds) / s, dy, ds

        dx, dy, ds = direction(-x * s)
        ap, ad = min(1.0, _max_step(x, dx)), min(1.0, _max_step(s, ds))  # the affine step
        mu_aff = float((x + ap * dx) @ (s + ad * ds)) / n
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        dx, dy, ds = direction(-x * s + sigma * mu - dx * ds)
        ap, ad = min(1.0, STEP * _max_step(x, dx)), min(1.0, STEP * _max_step(s, ds))
        xn, yn, sn = x + ap * dx, y + ad * dy, s + ad * ds
        if not (np.all(np.isfinite(xn)) and np.all(np.isfinite(yn)) and np.all(np.isfinite(sn))):
            break
        x, y, s = xn, yn, sn
    D = (x[:st.nD] - x[st.nD:2 * st.nD]).reshape(st.c, st.p)
    return D, y[:st.p * st.p].reshape(st.p, st.p)


def _max_step(v: np.ndarray, dv: np.ndarray) -> float:
    """The largest a with v + a dv >= 0 (inf when dv >= 0)."""
    neg = dv < 0
    return float((-v[neg] / dv[neg]).min()) if neg.any() else np.inf


def _start(st: _Structure, A, AT, b, cost):
    """Mehrotra's starting point: least-norm x and least-squares (y, s), shifted positive."""
    solve = st.normal_solver(np.ones(st.n))
    x = AT @ solve(b)
    y = solve(A @ cost)
    s = cost - AT @ y
    x = x + max(-1.5 * float(x.min()), 0.0)
    s = s + max(-1.5 * float(s.min()), 0.0)
    xs = float(x @ s)
    x = x + 0.5 * xs / max(float(s.sum()), 1e-300)
    s = s + 0.5 * xs / max(float(x.sum()), 1e-300)
    if not (x.min() > 0 and s.min() > 0):
        x, s = np.maximum(x, 1e-2), np.maximum(s, 1e-2)
    return x, y, s
