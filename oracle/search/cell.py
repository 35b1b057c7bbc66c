"""Per-cell state shared by the decisions of one cell (and the exception for a failing re-check)."""

from __future__ import annotations

from softrank.exact.rational import rank
from softrank.oracle.search import corank, decoder
from softrank.oracle.search import reductions as red
from softrank.oracle.threshold_checks import check_threshold


class CertificateRejected(AssertionError):
    """A reduction produced a certificate that the independent re-check rejects (a bug)."""


ORTHANT_ROWS = 12  # one LP per orthant or split of the rows (2^(m-1) of them): only while m - 1 <= 12


def _own_k(name, m, N):
    return {"kernel": N - 1, "cokernel": m - 1, "rank1-stochastic": 1, "norm": 0,
            "simplex-rows": min(m, N)}[name]


class CellCache:
    """Per-cell cache of ranks and thresholds shared by decide() calls inside profile()."""

    def __init__(self, A, method="auto", prune=True, stats=None):
        self.A = A
        self.method = method
        self.prune = prune
        self.rank = rank(A)
        self.m, self.N = len(A), len(A[0])
        self.thresholds: dict = {}  # name -> threshold certificate
        self.decoders: dict = {}  # eps -> decoder certificate (or None)
        self.stats = stats if stats is not None else {"lps": 0}

    def threshold(self, name):
        if name not in self.thresholds:
            A, meth, st = self.A, self.method, self.stats
            if name == "kernel":
                t = corank.kernel_threshold(A, meth, st)
            elif name == "cokernel":
                t = corank.cokernel_threshold(A, meth, st)
            elif name == "rank1-stochastic":
                t = red.rank1_stochastic_threshold(A, meth, st)
            elif name == "norm":
                t = red.norm_threshold(A)
            elif name == "simplex-rows":
                t = red.simplex_rows_threshold(A)
            else:  # pragma: no cover
                raise KeyError(name)
            if not check_threshold(A, t, _own_k(name, self.m, self.N)):
                raise CertificateRejected(f"threshold certificate {name} does not re-check")
            self.thresholds[name] = t
        return self.thresholds[name]

    def decoder(self, eps):
        """The greedy decoder of ``softrank.oracle.search.decoder`` at eps (searched once per eps), or None."""
        if eps not in self.decoders:
            self.decoders[eps] = decoder.search(self.A, eps)
        return self.decoders[eps]

    def corank_route(self, k):
        """'kernel' (N LPs) or 'cokernel' (2^(m-1) LPs) for k = N-1 / m-1, the cheaper one; the
        cokernel route only while m - 1 <= ``ORTHANT_ROWS`` (2^(m-1) <= 4,096 LPs; beyond, not tried)."""
        routes = []
        if k == self.N - 1:
            routes.append((self.N, "kernel"))
        if k == self.m - 1 and self.m - 1 <= ORTHANT_ROWS:
            routes.append((2 ** (self.m - 1), "cokernel"))
        return min(routes)[1] if routes else None

    def splits_route(self, k) -> bool:
        """Stochastic k = m - 1 by its 2^(m-1) - 1 split LPs, only while m - 1 <= ``ORTHANT_ROWS``."""
        return k == self.m - 1 and self.m - 1 <= ORTHANT_ROWS

    def sub(self, A):
        """A cache for a sub-cell, counting its LPs with this cell's."""
        return CellCache(A, self.method, self.prune, self.stats)
