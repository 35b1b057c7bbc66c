"""oracle/threshold_checks.py: every threshold kind of both classes refuses a value moved either
way and the tampered certificates below; a threshold of 0 by the kernel route is accepted.
(tests/oracle/test_checks.py tampers the unrestricted kinds of one square cell.)  Written for
surviving mutants of the mutation run of 2026-12-03 (docs/hardening.md, "Mutation testing")."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from softrank.oracle import check_threshold
from softrank.oracle.search import thresholds

Q = lambda rows: [[F(x) for x in r] for r in rows]
A = Q([[F(1, 2), F(1, 2), 0], [F(1, 5), F(3, 5), F(1, 5)]])  # 2 x 3, stochastic rows


def _moved(c, by):
    q = F(c["value"]) + by
    return dict(c, value=f"{q.numerator}/{q.denominator}")


@pytest.mark.parametrize("klass", ["unrestricted", "stochastic"])
def test_every_kind_refuses_a_moved_value(klass):
    vals, certs = thresholds(A, klass)
    kinds = {c["kind"] for c in certs.values()}
    assert kinds == ({"norm", "cokernel", "zero"} if klass == "unrestricted" else {"rank1-stochastic", "simplex-rows"})
    for k, c in certs.items():
        assert check_threshold(A, c), c["kind"]
        for by in (F(1, 10**9), F(-1, 10**9), F(1, 10), F(-1, 10)):
            if c["kind"] == "zero" or vals[k] + by < 0:
                continue
            assert not check_threshold(A, _moved(c, by)), (c["kind"], by)


def test_rank1_stochastic_dual_must_not_vanish():
    c = thresholds(A, "stochastic")[1][1]
    assert c["kind"] == "rank1-stochastic"
    zero = dict(c, **{"lambda": [["0"] * 3 for _ in range(2)]})
    assert not check_threshold(A, zero)


def test_simplex_rows_speaks_only_for_k_at_least_min_m_n():
    c = thresholds(A, "stochastic")[1][2]
    assert c["kind"] == "simplex-rows"
    assert check_threshold(A, c, k=2) and check_threshold(A, c, k=3)
    assert not check_threshold(A, c, k=1) and not check_threshold(A, c, k=0)


def test_zero_needs_an_exact_factorisation():
    c = {"kind": "zero", "value": "0", "X": [["0"], ["0"]], "Y": [["0"], ["0"], ["0"]], "k": 1}
    assert not check_threshold(A, c)  # X Y^T = 0 <= A entrywise, but not A
    low = {"kind": "zero", "value": "0", "X": [["1"], ["1"]], "Y": [["1/5"], ["1/2"], ["0"]], "k": 1}
    assert not check_threshold(A, low)


def test_kernel_threshold_zero_is_accepted():
    """Dependent columns: w = (1, -1) is in the kernel, so eps*_(N-1) = 0 by the kernel route."""
    B = Q([[1, 1], [2, 2]])
    c = {"kind": "kernel", "value": "0", "column": 1, "w": ["1", "-1"], "k": 1}
    assert check_threshold(B, c)
    assert not check_threshold(B, dict(c, value="1/2"))  # no dual bound reaches 1/2
