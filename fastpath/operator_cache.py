"""One operator A (float64, m x N) with the factorizations its constructions and certificates
share, each computed on first use: the SVD, the column- and row-pivoted QR, the row-reweighted
SVD bases by rank and the greedy order of representative rows."""

from __future__ import annotations

import numpy as np
import scipy.linalg


class OperatorCache:
    """``A`` with cached factorizations; ``lp_solves`` counts the linear programs solved on it."""

    def __init__(self, A: np.ndarray):
        self.A = np.ascontiguousarray(A, dtype=np.float64)
        self.m, self.N = self.A.shape
        self.p = min(self.m, self.N)
        self._svd = None
        self._cpqr = None
        self._rpqr = None
        self._peaks = None
        self.derived: dict[str, object] = {}  # objects its consumers build from A, by name
        self.rw_bases: dict[int, np.ndarray] = {}  # rank -> best row-reweighted basis (N x k)
        self.rep_order: np.ndarray | None = None  # greedy order of representative rows
        self.lp_solves = 0

    @property
    def svd(self):
        """(U, s, Vt) of the thin SVD of A."""
        if self._svd is None:
            U, s, Vt = np.linalg.svd(self.A, full_matrices=False)
            self._svd = (U, s, Vt)
        return self._svd

    @property
    def peaks(self) -> np.ndarray:
        """Column of each row's largest entry."""
        if self._peaks is None:
            self._peaks = self.A.argmax(axis=1)
        return self._peaks

    @property
    def cpqr(self):
        """(Q, pivots) of the column-pivoted QR of A."""
        if self._cpqr is None:
            Q, R, piv = scipy.linalg.qr(self.A, pivoting=True, mode="economic")
            self._cpqr = (Q, piv)
        return self._cpqr

    @property
    def rpqr(self):
        """Row pivots of A: the column pivots of the QR of A^T."""
        if self._rpqr is None:
            _, _, piv = scipy.linalg.qr(self.A.T, pivoting=True, mode="economic")
            self._rpqr = piv
        return self._rpqr
