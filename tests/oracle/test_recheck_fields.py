"""oracle/checks.py: each field of a certificate is checked as its proof file says, and bounds are
compared with eps exactly where the proof puts them.  The bounds here are computed independently
of the checker (from the formulas of proofs/oracle_kN_minus_1.md and
proofs/oracle_k1_unrestricted.md), so a checker that inflates its own bound is caught; the
sharpness tests of tests/oracle/test_checks.py compute the bound with the checker's functions.
Written for surviving mutants of the mutation run of 2026-12-03 (docs/hardening.md, "Mutation
testing")."""

from __future__ import annotations

import copy
from fractions import Fraction as F

import pytest
from softrank.oracle import recheck
from softrank.oracle.search import decide, thresholds

Q = lambda rows: [[F(x) for x in r] for r in rows]
ID3 = Q([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
TRI = Q([[2, 1, 0], [1, 3, 1], [0, 1, 4]])


def _kernel_bound(A, y):
    """min_j (g_j - sum_(l != j) |g_l|) / ||y_j||_1 for g = A^T y_j (proofs/oracle_kN_minus_1.md)."""
    out = []
    for j, yj in enumerate(y):
        yj = [F(x) for x in yj]
        g = [sum(A[i][l] * yj[i] for i in range(len(A))) for l in range(len(A[0]))]
        out.append((g[j] - sum(abs(g[l]) for l in range(len(g)) if l != j)) / sum(abs(x) for x in yj))
    return min(out)


def test_kernel_dual_fails_at_its_own_bound_and_at_the_threshold():
    """k = N - 1: the certificate proves 'no B within eps' exactly for eps below its bound; at the
    exact threshold eps*_(N-1) a competitor exists, so no certificate may pass there."""
    vals, certs = thresholds(TRI)
    k = len(TRI[0]) - 1
    assert certs[k]["kind"] == "kernel"
    t = vals[k]
    v = decide(TRI, t * F(99, 100), k)
    cert = v.certificate
    assert cert["kind"] == "kernel-dual" and recheck(TRI, t * F(99, 100), k, "unrestricted", "impossible", cert)
    b = _kernel_bound(TRI, cert["y"])
    assert t * F(99, 100) < b <= t
    assert recheck(TRI, b * (1 - F(1, 10**12)), k, "unrestricted", "impossible", cert)
    assert not recheck(TRI, b, k, "unrestricted", "impossible", cert)
    assert not recheck(TRI, t, k, "unrestricted", "impossible", cert)


def _signed():
    cert = decide(ID3, F(1, 2), 1, prune=False).certificate
    assert cert["kind"] == "rank1-signed"
    return cert


def _signed_bound(A, cert):
    """The largest eps at which every gap a_i.lambda_i - eps gamma_i of every pattern is >= 0."""
    out = []
    for p in cert["patterns"]:
        for i, lam, g in zip(p["rows"], p["lambda"], p["gamma"]):
            if F(g) > 0:
                out.append(sum(a * F(x) for a, x in zip(A[i], lam)) / F(g))
    return min(out)


def test_rank1_signed_fails_once_a_gap_is_negative():
    """C1: a_i.lambda_i - eps gamma_i >= 0 for every row of every pattern.  Just above the eps where
    a gap turns negative the certificate proves nothing, though each a_i.lambda_i stays positive."""
    cert = _signed()
    b = _signed_bound(ID3, cert)
    assert recheck(ID3, b, 1, "unrestricted", "impossible", cert)
    assert not recheck(ID3, b * (1 + F(1, 10**9)), 1, "unrestricted", "impossible", cert)


@pytest.mark.parametrize("rows", [[], [0, 0, 1, 2], [0, 1, 2, 3], [0, 1, -1]])
def test_rank1_signed_rows_must_be_distinct_in_range_and_non_empty(rows):
    bad = copy.deepcopy(_signed())
    bad["rows"] = rows
    assert not recheck(ID3, F(1, 2), 1, "unrestricted", "impossible", bad)


def test_rank1_signed_pattern_needs_one_sign_per_row():
    """A pattern lists one sign per row.  With a sign left out, the dual sum would skip that row
    while its gap still counted: on this rank-1 cell (feasible at every eps) two such patterns
    would 'refute' every sign vector with the gap of row 2 alone."""
    A = Q([[1, 1], [2, 2], [1, 1]])
    assert decide(A, F(1, 2), 1).verdict == "feasible"
    fake = {"kind": "rank1-signed", "rows": [0, 1, 2], "patterns": [
        {"rows": [0, 1, 2], "signs": s, "lambda": [["0", "0"], ["0", "0"], ["1", "1"]], "gamma": ["0", "0", "1"]}
        for s in ([1, 1], [1, -1])]}
    assert not recheck(A, F(1, 2), 1, "unrestricted", "impossible", fake)
    cert = _signed()
    for cut in (1, 2):
        bad = copy.deepcopy(cert)
        for p in bad["patterns"]:
            p["signs"] = p["signs"][:-cut]
        assert not recheck(ID3, F(1, 2), 1, "unrestricted", "impossible", bad), cut


def test_row_simplex_distance_on_any_row():
    """The row of a row-simplex-distance certificate may be any row of A (here row 1)."""
    A = Q([[0, 1], [2, 0]])
    v = decide(A, F(1, 2), 1, "stochastic")
    assert v.certificate == {"kind": "row-simplex-distance", "row": 1, "distance": "1"}
    assert recheck(A, F(1, 2), 1, "stochastic", "impossible", v.certificate)
    assert not recheck(A, F(1, 2), 1, "stochastic", "impossible", dict(v.certificate, row=2))


CASES = [  # (A, eps, k, klass): impossible cells, one per kind the search gives here
    (ID3, F(1, 2), 1, "unrestricted"), (ID3, F(1, 2), 2, "unrestricted"), (TRI, F(1, 2), 0, "unrestricted"),
    (Q([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]]), F(1, 2), 2, "unrestricted"),
    (Q([[0, 1], [2, 0]]), F(1, 2), 1, "stochastic"), (ID3, F(1, 2), 2, "stochastic"),
]


@pytest.mark.parametrize(("A", "eps", "k", "klass"), CASES)
def test_an_impossibility_speaks_for_every_smaller_rank_and_no_negative_one(A, eps, k, klass):
    """The module's rule: an impossibility at rank K is one at every k <= K; a negative rank is
    malformed and refused."""
    v = decide(A, eps, k, klass)
    assert v.verdict == "impossible"
    for j in range(k + 1):
        assert recheck(A, eps, j, klass, "impossible", v.certificate), (v.certificate["kind"], j)
    assert not recheck(A, eps, -1, klass, "impossible", v.certificate)


def test_one_row_cells():
    """A 1 x N cell: the checks index the first row for the column count (there is no second)."""
    A = Q([[1, 2]])
    v = decide(A, F(1, 2), 0)
    assert v.verdict == "impossible" and recheck(A, F(1, 2), 0, "unrestricted", "impossible", v.certificate)
    cert = {"kind": "kernel-dual", "y": [["1"], ["1"]]}  # g = (1, 2): 1 - 2 < 0, fails; 2 - 1 = 1 > eps
    assert not recheck(A, F(1, 2), 1, "unrestricted", "impossible", cert)
    cert = {"kind": "cokernel-dual", "orthants": [{"signs": [1], "w": ["0", "1"]}]}
    assert recheck(A, F(1, 2), 0, "unrestricted", "impossible", cert)  # 2 > 1/2: no B of rank 0
    assert not recheck(A, F(2), 0, "unrestricted", "impossible", cert)
    one = Q([[2]])  # 1 x 1: k = N - 1 = 0 by the kernel route
    assert recheck(one, F(1, 2), 0, "unrestricted", "impossible", {"kind": "kernel-dual", "y": [["1"]]})
    assert not recheck(one, F(2), 0, "unrestricted", "impossible", {"kind": "kernel-dual", "y": [["1"]]})
