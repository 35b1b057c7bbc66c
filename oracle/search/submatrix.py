"""Lower bounds from sub-cells (proofs/oracle_submatrix.md): a sub-cell made of some rows of A
and sums of disjoint groups of its columns has r_eps no larger than A's, so an impossibility the
oracle proves on a sub-cell at rank k is one for A at rank k.

Tried where no direct reduction decides (A, eps, k): the (k + 1)-row sub-cells (all columns:
decided at k = m' - 1 in both classes) and the (k + 1)-column ones, by deleting columns or by
merging them into k + 1 groups (all rows: decided at k = N' - 1, unrestricted class); at most
``MAX_SUBCELLS`` sub-cells and ``MAX_LPS`` LPs in all.  Smaller
sub-cells are never needed: a sub-cell of a decided sub-cell has r_eps at most the decided one's.
Nothing here is trusted: ``softrank.oracle.search.decide`` re-checks the certificate, and the re-check
extracts the sub-cell from A itself.
"""

from __future__ import annotations

import itertools

from softrank.advisors import highs
from softrank.exact.rational import fmt_mat
from softrank.oracle.search import corank, decoder, routes
from softrank.oracle.subcell_checks import subcell

MAX_SUBCELLS = 60
MAX_LPS = 4096  # LPs over all the sub-cells of one decision: what one orthant route may take (2^12)


def set_partitions(items, blocks):
    """Every partition of ``items`` into ``blocks`` non-empty groups (each once, as lists)."""
    if blocks == 0:
        if not items:
            yield []
        return
    if len(items) < blocks:
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest, blocks - 1):  # first alone
        yield [[first], *part]
    for part in set_partitions(rest, blocks):  # first joins a group
        for g in range(len(part)):
            yield [grp if t != g else [first, *grp] for t, grp in enumerate(part)]


def candidates(m, N, k, klass):
    """(rows, column groups, class of the sub-cell), largest decided sub-cells first."""
    all_rows, all_cols = list(range(m)), list(range(N))
    if k + 1 < m:
        for rows in itertools.combinations(all_rows, k + 1):
            yield list(rows), [[j] for j in all_cols], klass
    if k + 1 < N:
        for cols in itertools.combinations(all_cols, k + 1):
            yield all_rows, [[j] for j in cols], "unrestricted"
        for groups in set_partitions(all_cols, k + 1):
            yield all_rows, groups, "unrestricted"


def _orthants_above(sub, eps, stats) -> bool:
    """False when some orthant LP of the cokernel threshold (``softrank.oracle.search.corank``) has a
    binary64 value below eps (the sub-cell is then feasible at its k = m' - 1 up to rounding: not
    worth its exact LPs); True otherwise, or when HiGHS is not there to screen."""
    if not highs.available():
        return True
    m = len(sub)
    for tail in itertools.product((1, -1), repeat=m - 1):
        lp = corank._cokernel_lp(sub, (1,) + tail).build()
        stats["lps"] = stats.get("lps", 0) + 1
        x = highs.float_solution(lp)
        if x is not None and float(sum(float(c) * v for c, v in zip(lp.c, x))) < float(eps) - 1e-9:
            return False
    return True


def lower_bound(A, eps, k, klass, cell, decoders=True):
    """A ``submatrix`` certificate of impossibility at rank k (or a ``decoder`` one, for a row
    sub-cell in the unrestricted class), or None (also once the sub-cells tried have used
    ``MAX_LPS`` LPs: 60 sub-cells of 13 rows, each 4,096 orthant LPs, took ~20 min).
    ``decoders=False``: no decoder certificates (the orthant LPs only)."""
    start = cell.stats.get("lps", 0)
    for rows, groups, inner in itertools.islice(candidates(cell.m, cell.N, k, klass), MAX_SUBCELLS):
        if cell.stats.get("lps", 0) - start >= MAX_LPS:
            return None
        sub = subcell(A, rows, groups)
        if inner == "unrestricted" and len(rows) < cell.m and len(groups) == cell.N:
            # k + 1 rows, every column: a decoder on these rows (one binary64 LP) proves the same
            # impossibility as the sub-cell's 2^k exact orthant LPs when it exists (it need not:
            # the orthant LPs are the stronger test); else the orthants are screened in binary64
            # and the exact ones run only when no orthant is seen below eps
            cell.stats["lps"] = cell.stats.get("lps", 0) + 1
            found = decoder.best_w(A, eps, rows) if decoders else None
            if found is not None:
                return {"kind": "decoder", "rows": rows, "W": fmt_mat(found[0])}
            if not _orthants_above(sub, eps, cell.stats):
                continue
        out = routes.direct(sub, eps, k, inner, cell.sub(sub))
        if out is not None and out[0] == "impossible":
            return {"kind": "submatrix", "rows": rows, "columns": groups, "class": inner,
                    "reduction": out[2], "certificate": out[1]}
    return None
