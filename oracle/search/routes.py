"""The direct reductions of ``decide``, by class: each returns (verdict, certificate, reduction)
or (verdict, certificate, reduction, note), or None where no direct reduction covers (k, class).

Nothing here is trusted: ``softrank.oracle.search.decide`` re-checks every certificate it hands out.
"""

from __future__ import annotations

from softrank.exact.rational import rank
from softrank.oracle.search import corank, radon
from softrank.oracle.search import reductions as red


def unrestricted(A, eps, k, cell):
    """k >= rank A, k = 0, k = 1, k = N - 1 and k = m - 1 (docs/oracle.md)."""
    if k >= cell.rank:
        return "feasible", red.witness_from_matrix(A, construction="B = A"), "k>=rank"
    if k == 0:
        return (*red.k0_unrestricted(A, eps), "k=0")
    if k == 1:
        return (*red.k1_unrestricted(A, eps, cell.method, cell.prune, cell.stats), "k=1 unrestricted")
    route = cell.corank_route(k)
    if route == "kernel":
        return (*corank.kernel_decide(A, eps, cell.threshold("kernel")), "k=N-1")
    if route == "cokernel":
        return (*corank.cokernel_decide(A, eps, cell.threshold("cokernel")), "k=m-1")
    return None


def stochastic(A, eps, k, cell):
    """Rows too far from the simplex, k >= min(m, N) (row-wise nearest B), k = 0, k = 1,
    k = m - 1 (splits of the rows) and any unrestricted impossibility."""
    status, out = red.stochastic_rows(A, eps)
    if status == "impossible":
        return "impossible", out, "stochastic rows"
    if rank(out) <= k:
        return ("feasible", red.witness_from_matrix(out, construction="row-wise nearest stochastic matrix"),
                "stochastic rows")
    if k == 0:
        return "impossible", {"kind": "zero-not-stochastic"}, "k=0"
    if k == 1:
        return (*red.rank1_stochastic_decide(A, eps, cell.threshold("rank1-stochastic")), "k=1 stochastic")
    if cell.splits_route(k):
        return (*radon.radon_decide(A, eps, cell.method, cell.stats), "k=m-1 stochastic")
    unres = unrestricted(A, eps, k, cell)
    if unres is not None and unres[0] == "impossible":
        return (*unres[:3], "an unrestricted impossibility implies the stochastic one (fewer competitors)")
    return None


def direct(A, eps, k, klass, cell):
    return unrestricted(A, eps, k, cell) if klass == "unrestricted" else stochastic(A, eps, k, cell)
