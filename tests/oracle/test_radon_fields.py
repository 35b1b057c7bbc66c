"""oracle/radon_checks.py: a radon-separation certificate is sharp and sound at the threshold.  For
the 3 x 3 identity in the stochastic class at rank 2 the certificate found at eps = 1/2 proves
every eps below 1, and at eps = 1 a stochastic competitor of rank 2 exists (its witness re-checks),
so the separation must fail there.  (tests/oracle/test_radon.py tampers with numbers and signs at
one eps.)  The same on an asymmetric cell, whose certificate has non-zero terms
max_j (s w_j - g_ij) and unequal sides (the identity's has neither), and a certificate whose
w-term was made positive.  Written for surviving mutants of the mutation run of 2026-12-03
(docs/hardening.md, "Mutation testing")."""

from __future__ import annotations

import copy
from fractions import Fraction as F

from softrank.oracle import recheck
from softrank.oracle.search import decide

ID3 = [[F(int(i == j)) for j in range(3)] for i in range(3)]


def test_radon_separation_holds_below_the_threshold_and_fails_at_it():
    cert = decide(ID3, F(1, 2), 2, "stochastic").certificate
    assert cert["kind"] == "radon-separation"
    witness = decide(ID3, F(1), 2, "stochastic", nerves=False, decoders=False)
    assert witness.verdict == "feasible"
    assert recheck(ID3, F(1), 2, "stochastic", "feasible", witness.certificate)
    assert not recheck(ID3, F(1), 2, "stochastic", "impossible", cert)
    assert recheck(ID3, 1 - F(1, 10**9), 2, "stochastic", "impossible", cert)
    for eps in (F(1, 100), F(1, 2), F(9, 10)):
        assert recheck(ID3, eps, 2, "stochastic", "impossible", cert), eps


def test_radon_separation_on_an_asymmetric_cell():
    A = [[F(7, 10), F(2, 10), F(1, 10)], [F(1, 10), F(6, 10), F(3, 10)], [F(2, 10), F(1, 10), F(7, 10)]]
    cert = decide(A, F(17, 40), 2, "stochastic", nerves=False, decoders=False).certificate
    assert cert["kind"] == "radon-separation"
    assert recheck(A, F(17, 40), 2, "stochastic", "impossible", cert)
    witness = decide(A, F(9, 20), 2, "stochastic", nerves=False, decoders=False)
    assert witness.verdict == "feasible"
    assert recheck(A, F(9, 20), 2, "stochastic", "feasible", witness.certificate)
    assert not recheck(A, F(9, 20), 2, "stochastic", "impossible", cert)


def _gap(A, eps, split):
    """R3 of proofs/oracle_radon_stochastic.md, transcribed: c_i = a_i.g_i + eps ||g_i||_inf
    + max_j (s_i w_j - g_ij); the split's gap is the largest c_i on side +1 plus the largest on -1."""
    w = [F(x) for x in split["w"]]
    c = {1: [], -1: []}
    for a, s, g in zip(A, split["signs"], split["g"]):
        g = [F(x) for x in g]
        c[s].append(sum(x * y for x, y in zip(a, g)) + eps * max(abs(x) for x in g)
                    + max(s * wj - gj for wj, gj in zip(w, g)))
    return max(c[1]) + max(c[-1])


def test_radon_separation_fails_where_its_own_gap_reaches_zero():
    """The eps at which the first split's gap (computed here) reaches 0, bracketed to 2^-40: the
    certificate holds just below and fails just above, on the asymmetric cell."""
    A = [[F(7, 10), F(2, 10), F(1, 10)], [F(1, 10), F(6, 10), F(3, 10)], [F(2, 10), F(1, 10), F(7, 10)]]
    cert = decide(A, F(17, 40), 2, "stochastic", nerves=False, decoders=False).certificate
    lo, hi = F(17, 40), F(9, 20)
    assert all(_gap(A, lo, s) < 0 for s in cert["splits"]) and not all(_gap(A, hi, s) < 0 for s in cert["splits"])
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if all(_gap(A, mid, s) < 0 for s in cert["splits"]) else (lo, mid)
    assert recheck(A, lo, 2, "stochastic", "impossible", cert)
    assert not recheck(A, hi, 2, "stochastic", "impossible", cert)


def test_radon_separation_counts_the_w_term_with_its_sign():
    """The term max_j (s_i w_j - g_ij) is added to c_i.  Moving w_0 of the first split by 1/100
    makes that term positive where it was 0 and the split's gap non-negative: refused."""
    A = [[F(7, 10), F(2, 10), F(1, 10)], [F(1, 10), F(6, 10), F(3, 10)], [F(2, 10), F(1, 10), F(7, 10)]]
    cert = decide(A, F(17, 40), 2, "stochastic", nerves=False, decoders=False).certificate
    bad = copy.deepcopy(cert)
    bad["splits"][0]["w"][0] = str(F(bad["splits"][0]["w"][0]) + F(1, 100))
    assert _gap(A, F(17, 40), bad["splits"][0]) >= 0
    assert not recheck(A, F(17, 40), 2, "stochastic", "impossible", bad)
