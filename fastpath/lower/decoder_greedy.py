"""Cheap decoder sets (untrusted, float64): exact right inverses of ``A_S`` updated one row at a
time, and the greedy first-fit over candidate rows built on them.

For a row set S the two cheap right inverses of ``fastpath/lower/decoder.py`` are kept up to date as
rows are added, in O(N p) (pseudoinverse) and O(p^2) (peak-column inverse) per candidate instead
of a fresh SVD or inverse:

- the pseudoinverse ``W = pinv(A_S)``: with an orthonormal basis Q of the row space, the part r
  of a new row a outside it gives ``pinv([A_S; a]) = [W - r (a W) / |r|^2, r / |r|^2]``;
- the inverse of the square block ``A[S, T]`` on the rows' peak columns T (all distinct), by
  bordering.

A candidate's value is estimated as ``eps * max_j ||W_j||_1`` (``A_S W = I`` up to rounding); the
float64 decoder value of the chosen W is computed exactly before a set is returned, and a set whose
exact value misses the margin is cut back to its longest valid prefix (a prefix of a valid set,
with the matching columns of W, is valid).
"""

from __future__ import annotations

import numpy as np

from softrank.fastpath.float64 import decoder_value
from softrank.fastpath.lower.certificates import MARGIN

DEPENDENT = 1e-12  # a row whose part outside the span of the others is below this (relative) is dependent


def _ok(value: float) -> bool:
    return value <= 1.0 - MARGIN


class RightInverses:
    """Pseudoinverse and peak-column inverse of ``A_S`` for a growing row set S."""

    def __init__(self, A: np.ndarray, peaks: np.ndarray):
        self.A, self.peaks = A, peaks
        n = A.shape[1]
        self.rows: list[int] = []
        self.Q = np.zeros((n, 0))
        self.P = np.zeros((n, 0))  # pinv(A_S)
        self.cols: list[int] = []
        self.Binv: np.ndarray | None = np.zeros((0, 0))  # inverse of A[S, cols]; None once unusable

    @classmethod
    def of(cls, A: np.ndarray, peaks: np.ndarray, rows) -> RightInverses:
        ri = cls(A, peaks)
        for i in rows:
            ri.add(int(i), ri.candidate(int(i)))
        return ri

    def candidate(self, i: int) -> dict:
        """The pieces of S + {i}: the pinv update and the bordered peak inverse (or None)."""
        a = self.A[i]
        h = self.Q.T @ a
        r = a - self.Q @ h
        h2 = self.Q.T @ r  # one re-orthogonalisation
        r -= self.Q @ h2
        nr2 = float(r @ r)
        out: dict = {"pinv": None, "peak": None}
        if nr2 > (DEPENDENT * float(np.linalg.norm(a))) ** 2:
            out["pinv"] = (r, nr2, a @ self.P)
        ci = int(self.peaks[i])
        if self.Binv is not None and ci not in self.cols:
            b = self.A[self.rows, ci]
            arow = self.A[i, self.cols]
            u = self.Binv @ b
            s = float(self.A[i, ci] - arow @ u)
            if abs(s) > DEPENDENT:
                v = arow @ self.Binv
                q = len(u)
                B = np.empty((q + 1, q + 1))  # [[Binv + u v^T / s, -u / s], [-v / s, 1 / s]]
                np.divide(np.outer(u, v), s, out=B[:q, :q])
                B[:q, :q] += self.Binv
                B[:q, q] = -u / s
                B[q, :q] = -v / s
                B[q, q] = 1.0 / s
                out["peak"] = B
        return out

    def estimates(self, cand: dict, eps: float) -> tuple[float, float]:
        """Estimated decoder values (pinv, peak) of S + {i}: eps * max_j ||W_j||_1."""
        vp = vk = np.inf
        if cand["pinv"] is not None:
            r, nr2, coef = cand["pinv"]
            D = np.multiply.outer(r, coef)  # |P - r coef^T / nr2|, one buffer
            np.divide(D, nr2, out=D)
            np.subtract(self.P, D, out=D)
            np.abs(D, out=D)
            l1 = D.sum(axis=1) + np.abs(r) / nr2
            vp = eps * float(l1.max())
        if cand["peak"] is not None:
            vk = eps * float(np.abs(cand["peak"]).sum(axis=1).max())
        return vp, vk

    def add(self, i: int, cand: dict) -> None:
        if cand["pinv"] is None:
            raise np.linalg.LinAlgError("dependent row")
        r, nr2, coef = cand["pinv"]
        self.P = np.hstack([self.P - np.outer(r, coef) / nr2, (r / nr2)[:, None]])
        self.Q = np.hstack([self.Q, (r / np.sqrt(nr2))[:, None]])
        self.Binv = cand["peak"]
        if self.Binv is not None:
            self.cols.append(int(self.peaks[i]))
        self.rows.append(i)

    def matrices(self) -> list[np.ndarray]:
        """The right inverses of the current set as N x p matrices."""
        out = [self.P.copy()]
        if self.Binv is not None and self.rows:
            W = np.zeros_like(self.P)
            W[self.cols] = self.Binv
            out.append(W)
        return out


def best_inverse(A: np.ndarray, rows: np.ndarray, inverses: RightInverses, eps: float):
    """(exact float64 value, W) of the better right inverse of the set."""
    best = (np.inf, None)
    for W in inverses.matrices():
        v = decoder_value(A, rows, W, eps)
        if v < best[0]:
            best = (v, W)
    return best


def first_fit(A: np.ndarray, peaks: np.ndarray, start_rows, start_W, orders, eps: float, p_hi: int):
    """Greedy first-fit from a valid start: every candidate row of ``orders`` (not yet in the set)
    is added when a cheap right inverse keeps the decoder value <= 1 - MARGIN.  Returns
    (rows, W, exact value), the start itself when nothing was added."""
    rows0 = np.asarray(start_rows, dtype=np.int64)
    inv = RightInverses.of(A, peaks, rows0)
    member = set(rows0.tolist())
    for order in orders:
        for i in order:
            if len(inv.rows) >= p_hi:
                break
            i = int(i)
            if i in member:
                continue
            cand = inv.candidate(i)
            if _ok(min(inv.estimates(cand, eps))):
                inv.add(i, cand)
                member.add(i)
    if len(inv.rows) == len(rows0):
        return rows0, np.asarray(start_W, dtype=np.float64), decoder_value(A, rows0, start_W, eps)
    return _exact(A, inv, eps, rows0, start_W)


def _exact(A, inv: RightInverses, eps: float, rows0, W0):
    """The grown set with the exact value of its better right inverse; when rounding made it miss
    the margin, the longest valid prefix (not shorter than the start)."""
    rows = np.asarray(inv.rows, dtype=np.int64)
    v, W = best_inverse(A, rows, inv, eps)
    while not _ok(v) and len(rows) > len(rows0):
        rows, W = rows[:-1], W[:, :-1]
        v = decoder_value(A, rows, W, eps)
    if not _ok(v):
        return np.asarray(rows0, dtype=np.int64), np.asarray(W0, dtype=np.float64), decoder_value(A, rows0, W0, eps)
    return rows, W, v
