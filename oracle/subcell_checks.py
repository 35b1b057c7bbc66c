"""Re-check of a lower bound taken from a sub-cell (kind ``submatrix``): the checker extracts the
sub-cell from A itself and re-checks the embedded impossibility on it.
proofs/oracle_submatrix.md.

The sub-cell keeps the listed rows of A and replaces the columns by group sums: column l of the
sub-cell is the sum of the columns of A in group l.  Groups are disjoint; a group of one column
keeps it, a column in no group is deleted.  For the stochastic class the embedded certificate may
speak for the stochastic class only if the groups cover every column (then B M stays stochastic);
otherwise it must be an unrestricted one.
"""

from __future__ import annotations

from softrank.exact.rational import ZERO
from softrank.oracle.check_basics import as_ints

CLASSES = ("unrestricted", "stochastic")
MAX_NESTING = 16  # submatrix certificates inside one another (a sub-cell of a sub-cell is one of A)


def _nesting(cert) -> int:
    """How many submatrix certificates are nested from ``cert`` down, counted to MAX_NESTING + 1."""
    depth = 0
    while isinstance(cert, dict) and cert.get("kind") == "submatrix" and depth <= MAX_NESTING:
        cert, depth = cert.get("certificate"), depth + 1
    return depth


def _indices(items, bound) -> list[int] | None:
    out = as_ints(items)
    if not out or len(set(out)) != len(out) or any(not 0 <= x < bound for x in out):
        return None
    return out


def subcell(A, rows, groups):
    """The sub-cell: rows of A, columns summed over each group (no checks)."""
    return [[sum((A[i][j] for j in G), ZERO) for G in groups] for i in rows]


def check_submatrix(A, eps, cert, k, klass, recheck) -> bool:
    """The embedded certificate proves the sub-cell impossible at rank k (in an allowed class),
    and the sub-cell is strictly smaller than A; at most ``MAX_NESTING`` levels (each level
    extracts a sub-cell: a long chain cost time and memory cubic in the size of A)."""
    if _nesting(cert) > MAX_NESTING:
        return False
    m, N = len(A), len(A[0])
    rows = _indices(cert["rows"], m)
    groups = [_indices(G, N) for G in cert["columns"]]
    if rows is None or not groups or any(G is None for G in groups):
        return False
    flat = [j for G in groups for j in G]
    if len(set(flat)) != len(flat) or (len(rows) >= m and len(groups) >= N):
        return False
    inner = cert["class"]
    if inner not in CLASSES or (klass == "unrestricted" and inner != "unrestricted"):
        return False
    if inner == "stochastic" and len(flat) != N:
        return False
    return recheck(subcell(A, rows, groups), eps, k, inner, "impossible", cert["certificate"])
