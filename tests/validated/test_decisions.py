"""The certain comparisons every acceptance ends in, at their boundaries: the tail decision of
Lemmas F and P, the ball comparisons, outward rounding at overflow, and the choice between the
direct and the chi route of Lemma U.  (Written to kill the mutants that survived mutation
testing of these modules; see docs/hardening.md.)"""

from __future__ import annotations

import math
import sys
from fractions import Fraction as F

import numpy as np
import pytest
from flint import arb

from helpers import rowsoftmax_float, softmax_enclosure_of
from softrank.validated.balls import certainly_gt, certainly_le, float_at_least, float_at_most
from softrank.validated.outcome import Outcome
from softrank.validated.tail_decision import decide_tail
from softrank.validated.upper_witness import check_upper_witness


@pytest.mark.parametrize("lo, hi, thr, thr_lo, want", [
    (F(3), F(4), F(8), None, Outcome.PROVED),  # 9 > 8
    (F(3), F(4), F(9), None, Outcome.UNRESOLVED),  # 9 > 9 fails: strict
    (F(1, 2), F(2), F(1, 5), None, Outcome.PROVED),  # 1/4 > 1/5
    (F(0), F(1, 10), F(0), None, Outcome.UNRESOLVED),  # lo must be > 0 and hi^2 <= thr fails
    (F(1), F(2), F(4), None, Outcome.REFUTED),  # hi^2 = 4 <= 4
    (F(1), F(2), F(5), F(4), Outcome.REFUTED),  # against the lower threshold
    (F(1), F(2), F(5), F(3), Outcome.UNRESOLVED),
    (F(2), F(3), F(5), None, Outcome.UNRESOLVED),  # 4 <= 5 < 9
])
def test_tail_decision_at_its_boundaries(lo, hi, thr, thr_lo, want):
    chk = decide_tail("lemma", "what", lo, hi, thr, "arb", "a", thr_lo=thr_lo)
    assert chk.outcome is want and chk.assumptions[0] == "a" and chk.route == "arb"
    assert F(chk.value) <= lo * lo  # the printed value is lo^2 rounded down
    if want is not Outcome.PROVED and thr > 0:
        assert f"relative margin {float((lo * lo - thr) / thr):+.3e}" in chk.reason


def test_ball_comparisons_are_certain_at_equality():
    half = arb(0.5)  # an exact ball
    assert certainly_le(half, F(1, 2)) and not certainly_gt(half, F(1, 2))
    assert certainly_gt(half, F(1, 3)) and not certainly_le(half, F(1, 3))
    assert not certainly_le(arb(0.5, 0.1), F(1, 2)) and not certainly_gt(arb(0.5, 0.1), F(1, 2))


def test_outward_rounding_at_overflow():
    big = F(10**400)
    assert float_at_least(big) == math.inf and float_at_most(-big) == -math.inf
    assert float_at_least(-big) == -sys.float_info.max >= -big  # still >= q, and the closest such
    assert float_at_most(big) == sys.float_info.max <= big


def _case(seed=0, n=12):
    rng = np.random.default_rng(seed)
    h = rng.normal(size=(n, n)) * 2
    a = rowsoftmax_float(h)
    u, s, vt = np.linalg.svd(a)
    return h, a, u[:, :4] * s[:4], vt[:4].T


def test_the_tighter_binary64_route_is_the_one_used():
    h, a, x, y = _case()
    enc = softmax_enclosure_of(h)
    direct = check_upper_witness(enc, x, y, F(10))
    assert direct.proved and direct.route == "binary64-bound"
    # a chi route with chi = 0 and A_hat = a_mid is tighter (no a_rad): it must be chosen
    via = check_upper_witness(enc, x, y, F(10), chi=F(0), a_hat=enc.a_mid)
    assert via.proved and via.route == "binary64-bound+chi" and F(via.value) <= F(direct.value)
    # a huge chi makes the direct route the tighter one again
    big = check_upper_witness(enc, x, y, F(10), chi=F(5), a_hat=enc.a_mid)
    assert big.route == "binary64-bound" and big.value == direct.value
    # the assumptions name the operator only when one is given
    assert "" not in direct.assumptions
    assert "op" in check_upper_witness(enc, x, y, F(10), operator_assumption="op").assumptions


def test_an_overflowing_witness_is_never_proved_by_a_bound():
    h, a, x, y = _case(1)
    enc = softmax_enclosure_of(h)
    huge = x * 1e300  # products overflow: no binary64 bound exists
    chk = check_upper_witness(enc, huge, y, F(1, 2))
    assert chk.outcome is not Outcome.PROVED and chk.route == "arb"


def test_exact_fractions_of_large_binary64_numbers():
    from softrank.validated.balls import exact_fraction

    for x in (2.0 ** 60, 3 * 2.0 ** 55, 1.5, 2.0 ** -30, 12345.0):
        assert exact_fraction(arb(x)) == F(x)


def test_printed_bounds_have_seventeen_significant_digits_rounded_outward():
    from softrank.validated.balls import decimal_at_least, decimal_at_most

    assert decimal_at_least(F(1, 3)) == "0.33333333333333334"
    assert decimal_at_most(F(2, 3)) == "0.66666666666666666"


def test_a_missed_tail_threshold_reports_its_relative_margin():
    chk = decide_tail("L", "tail", F(1, 10), F(1, 5), F(1, 10), "exact")  # 0.01 .. 0.04 vs 0.1
    assert chk.outcome is Outcome.REFUTED and "relative margin -9.000e-01" in chk.reason


def test_printed_integers_and_zero():
    from softrank.validated.balls import decimal_at_least, decimal_at_most

    assert decimal_at_most(F(-1)) == "-1" and decimal_at_least(F(-1)) == "-1"
    assert decimal_at_least(F(0)) == "0" and decimal_at_most(F(-0)) == "0"


def test_exact_fraction_refuses_a_ball_with_a_radius():
    from softrank.validated.balls import exact_fraction

    with pytest.raises(ValueError):
        exact_fraction(arb(1, 0.5))


def test_outward_rounding_does_not_step_past_a_float_that_already_bounds():
    assert float_at_least(F(1, 10)) == 0.1  # binary64(0.1) > 1/10 already
    assert float_at_most(F(1, 3)) == 1 / 3  # binary64(1/3) < 1/3 already


def test_a_tail_whose_lower_end_is_negative_is_never_proved():
    chk = decide_tail("L", "tail", F(-1, 2), F(2), F(1, 10), "exact")  # lo^2 = 1/4 > 1/10, but lo < 0
    assert chk.outcome is Outcome.UNRESOLVED


def test_ball_end_points_beyond_the_exponent_limit_are_rounded_outward():
    """Arb exponents are unbounded: exp(-1e308) is a ball near 2^(-1.4e308), whose exact end point
    as a Fraction would never be written.  Such end points are replaced by a bound on their outer
    side; a finite upper end above 2^EXP_LIMIT has none (OverflowError, an ArithmeticError)."""
    import time

    from softrank.validated.balls import EXP_LIMIT, lower_fraction, upper_fraction

    t = time.perf_counter()
    near0 = arb(-1e308).exp()  # at this precision a ball around 0 of radius about 2^(-1.4e308)
    assert -F(1, 2 ** EXP_LIMIT) <= lower_fraction(near0) <= 0 <= upper_fraction(near0) <= F(1, 2 ** EXP_LIMIT)
    tiny = arb(3) * arb(2) ** (-(2 ** 40))
    assert tiny > 0
    assert lower_fraction(tiny) == 0 and 0 < upper_fraction(tiny) <= F(1, 2 ** EXP_LIMIT)
    assert upper_fraction(-tiny) == 0 and -F(1, 2 ** EXP_LIMIT) <= lower_fraction(-tiny) < 0
    huge = arb(2) ** (2 ** 20)
    assert lower_fraction(huge) == 2 ** EXP_LIMIT and upper_fraction(-huge) == -(2 ** EXP_LIMIT)
    with pytest.raises(OverflowError):
        upper_fraction(huge)
    assert time.perf_counter() - t < 5
    from flint import ctx

    from softrank.validated.balls import exact_fraction
    from softrank.validated.precision import PRECISION

    for x in (arb(0), arb(1.5), arb(2.0 ** -1074), arb(-(2.0 ** 1023)), arb("1 +/- 1e-30")):
        with ctx.workprec(PRECISION["ball_end_points"]):
            lo, hi = exact_fraction(x.lower()), exact_fraction(x.upper())
        assert lower_fraction(x) == lo and upper_fraction(x) == hi
        # at least as tight as the end points at binary64's precision (which round outward to 53 bits)
        assert exact_fraction(x.lower()) <= lo <= hi <= exact_fraction(x.upper())
    with ctx.workprec(128):
        x = arb(1) - arb(2) ** -100  # exact at 128 bits, not at 53
    assert upper_fraction(x) == 1 - F(1, 2 ** 100) == lower_fraction(x) and exact_fraction(x.upper()) == 1
    # the precision is 256 bits, as documented: an exact 256-bit integer reads exactly, a 257-bit one
    # (odd) is rounded outward by one unit of the 256th bit
    m = 2 ** 255 + 12345
    assert upper_fraction(arb(m)) == m == lower_fraction(arb(m))
    m = 2 ** 256 + 1
    assert upper_fraction(arb(m)) == m + 1 and lower_fraction(arb(m)) == m - 1


def test_strict_projected_tail_on_a_vanishing_entry_of_A():
    """A tampered projected certificate whose W picks an entry of A near exp(-1e308): the strict route
    read that ball's end points exactly (MemoryError after a minute at 3.4 GB); now it decides at once."""
    import time

    from softrank.validated.projected_tail import check_projected_tail

    h = np.array([[0.0, -1e308, 1.0, 2.0], [0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0], [5.0, 4.0, 3.0, 2.0]])
    enc = softmax_enclosure_of(h)
    w = np.zeros((4, 1))
    w[1, 0] = 1.0
    t = time.perf_counter()
    chk = check_projected_tail(enc, F(1, 4), 1, np.array([0]), w, strict=True)
    assert chk.outcome is not Outcome.PROVED  # the tail (that entry, about 0) is far below eps
    assert time.perf_counter() - t < 5
    # an honest certificate on the same operator is still accepted
    assert check_projected_tail(enc, F(1, 100), 1, np.array([0, 2, 3]), np.eye(4), strict=True).proved


def test_scientific_text_beyond_binary64():
    from softrank.validated.balls import scientific_text

    assert scientific_text(F(-1, 100)) == "-1.000e-02" and scientific_text(F(3, 2)) == "+1.500e+00"
    assert scientific_text(F(10**400 + 7, 3)) == "+3.333e+399"  # toward zero
    assert scientific_text(F(-(10**400) - 7, 3)) == "-3.333e+399"
    assert scientific_text(F(1, 10**400)) == "+0.000e+00"  # underflows to zero: no error


def test_ball_end_points_of_moderate_size_with_long_mantissas_are_exact():
    """A number near 1 whose last bit lies below 2^-EXP_LIMIT (exponent below -EXP_LIMIT, magnitude
    moderate) is read exactly, not as a tiny or a huge bound; below 2^-EXP_LIMIT the outer bound is
    2^-EXP_LIMIT itself (or 0 on the inner side), whatever the mantissa."""
    from flint import ctx

    from softrank.validated.balls import EXP_LIMIT, lower_fraction, upper_fraction

    with ctx.workprec(EXP_LIMIT + 64):
        x = arb(1) + arb(2) ** (-(EXP_LIMIT + 10))  # exact at this precision
        assert x.is_exact()
        want = 1 + F(1, 2 ** (EXP_LIMIT + 10))
        assert lower_fraction(x) == want == upper_fraction(x)
        assert lower_fraction(-x) == -want == upper_fraction(-x)
    one_bit = arb(2) ** (-(2 ** 40))  # mantissa 1
    assert lower_fraction(one_bit) == 0 and upper_fraction(one_bit) == F(1, 2 ** EXP_LIMIT)
    assert upper_fraction(-one_bit) == 0 and lower_fraction(-one_bit) == -F(1, 2 ** EXP_LIMIT)


def test_ball_end_points_at_the_exponent_limit_itself():
    """The three branch tests of the end-point reader at their boundaries: a number of magnitude in
    [2^-EXP_LIMIT - 1, 2^-EXP_LIMIT) is read exactly, one just below it is bounded by 2^-EXP_LIMIT (or
    0 on the inner side), a short mantissa whose exponent is below -EXP_LIMIT but whose magnitude is
    not is read exactly, and the sign decides which side of a huge end point has a bound: the lower
    end of -2^(EXP_LIMIT + 100) has none (OverflowError), its upper end is -2^EXP_LIMIT."""
    from flint import ctx

    from softrank.validated.balls import EXP_LIMIT, lower_fraction, upper_fraction

    limit = F(1, 2 ** EXP_LIMIT)
    at = arb(2) ** (-(EXP_LIMIT + 1))  # 2^-(L+1): its top bit is 2^-(L+1), exponent -(L+1) = top - 1
    assert upper_fraction(at) == F(1, 2 ** (EXP_LIMIT + 1)) == lower_fraction(at)
    below = arb(2) ** (-(EXP_LIMIT + 2))
    assert upper_fraction(below) == limit and lower_fraction(below) == 0
    assert lower_fraction(-below) == -limit and upper_fraction(-below) == 0
    with ctx.workprec(64):
        short = arb(1025) * arb(2) ** (-(EXP_LIMIT + 4))  # mantissa 11 bits, magnitude about 2^-(L-6)
    assert short.is_exact()
    want = F(1025, 2 ** (EXP_LIMIT + 4))
    assert lower_fraction(short) == want == upper_fraction(short)
    assert lower_fraction(-short) == -want == upper_fraction(-short)
    huge = arb(2) ** (EXP_LIMIT + 100)
    assert upper_fraction(-huge) == -(2 ** EXP_LIMIT) and lower_fraction(huge) == 2 ** EXP_LIMIT
    for end, x in ((lower_fraction, -huge), (upper_fraction, huge)):
        with pytest.raises(OverflowError):
            end(x)


def test_the_exponent_limit_is_the_one_the_proof_states():
    """proofs/exact_rationals.md: end points below 2^-65537 in magnitude are replaced by 0 or
    +-2^-65536, those of 2^65536 and above by +-2^65536 on their outer side; in between they are
    exact, up to magnitudes just below 2^65536 (a mistaken ``>=`` at the top would bound
    -1.5 * 2^65535 from above by -2^65536, below it)."""
    from flint import ctx

    from softrank.validated.balls import exact_fraction, lower_fraction, upper_fraction

    small = arb(3) * arb(2) ** -65539  # 3/8 * 2^-65536 < 2^-65537
    assert upper_fraction(small) == F(1, 2 ** 65536) and lower_fraction(small) == 0
    kept = arb(3) * arb(2) ** -65538  # 3/4 * 2^-65536, not below 2^-65537: exact
    assert upper_fraction(kept) == F(3, 2 ** 65538) == lower_fraction(kept)
    near_top = arb(3) * arb(2) ** 65534  # 3/2 * 2^65535 < 2^65536
    for x, want in ((near_top, 3 * 2 ** 65534), (-near_top, -3 * 2 ** 65534)):
        assert upper_fraction(x) == want == lower_fraction(x) == exact_fraction(x)
    big = arb(3) * arb(2) ** 65535  # 3/2 * 2^65536
    assert lower_fraction(big) == 2 ** 65536 and upper_fraction(-big) == -(2 ** 65536)
    with ctx.workprec(128):
        odd = (arb(2) ** 60 + 1) / 2  # exponent -1, a 61-bit mantissa: no float may stand in
    assert exact_fraction(odd) == F(2 ** 60 + 1, 2)


def test_arb_max_contains_the_largest_and_returns_a_single_ball_unchanged():
    from softrank.validated.balls import arb_max

    x = arb("1 +/- 0.1")
    one = arb_max([x])
    assert one.mid() == x.mid() and one.rad() == x.rad()  # no max of a ball with itself (it widens)
    got = arb_max([arb(1) / 3, x, arb(-2)])
    assert got.contains(x) and got.contains(arb(1.1)) and not got.contains(arb(1) / 3 - arb(0.5))
