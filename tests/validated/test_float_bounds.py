"""The binary64 rules' environment check: round-to-nearest holds here, and a directed rounding
mode set through C's ``fesetround`` is detected (the replay then uses Arb balls throughout)."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np

from softrank.validated.float_bounds import binary64_environment_ok

# <fenv.h> rounding-mode constants by architecture
FE = {"x86_64": {"nearest": 0x000, "down": 0x400, "up": 0x800},
      "aarch64": {"nearest": 0x000000, "down": 0x800000, "up": 0x400000}}[platform.machine()]


def test_the_default_environment_is_the_assumed_one():
    assert binary64_environment_ok()


def test_a_directed_rounding_mode_is_detected():
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    seen = {}
    try:
        for mode in ("down", "up"):
            assert libm.fesetround(FE[mode]) == 0
            seen[mode] = binary64_environment_ok()
            # the mode really changed numpy's arithmetic: 1 + 3/4 ulp no longer rounds to nearest
            seen[mode + "-effective"] = bool(np.float64(1.0) + np.float64(0.75 * 2.0**-52) != 1.0 + 2.0**-52
                                             or -np.float64(1.0) - np.float64(0.75 * 2.0**-52) != -(1.0 + 2.0**-52))
    finally:
        libm.fesetround(FE["nearest"])
    assert seen == {"down": False, "down-effective": True, "up": False, "up-effective": True}
    assert binary64_environment_ok()


def test_outward_rounding_is_tight_and_in_the_right_direction():
    from fractions import Fraction

    from softrank.validated.balls import float_at_least, float_at_most

    for q in (Fraction(1, 2), Fraction(3), Fraction(-5, 4), Fraction(0)):  # binary64 numbers: exact
        assert float_at_least(q) == float(q) == float_at_most(q)
    third = Fraction(1, 3)
    up, down = float_at_least(third), float_at_most(third)
    assert Fraction(down) < third < Fraction(up) and np.nextafter(down, 1.0) == up


def test_printed_bounds_round_outward():
    """A printed upper bound is never below the rational it prints, a lower bound never above."""
    from decimal import Decimal
    from fractions import Fraction

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from softrank.validated.balls import decimal_at_least, decimal_at_most

    @settings(max_examples=500, deadline=None, derandomize=True)
    @given(st.fractions(min_value=Fraction(-10**6), max_value=Fraction(10**6), max_denominator=10**30),
           st.integers(1, 30))
    def check(q, digits):
        up, down = Fraction(Decimal(decimal_at_least(q, digits))), Fraction(Decimal(decimal_at_most(q, digits)))
        assert down <= q <= up
        assert up - down <= abs(q) * Fraction(2, 10 ** (digits - 1)) + Fraction(1, 10**300)

    check()


def test_the_upper_witness_check_prints_its_bound_rounded_up():
    """The value a PROVED upper-witness check prints is >= the rational bound it proved."""
    from decimal import Decimal
    from fractions import Fraction

    from helpers import rowsoftmax_float, softmax_enclosure_of
    from softrank.validated.upper_witness import check_upper_witness, witness_error_upper_binary64

    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(4, 40))
        h = rng.normal(size=(n, n)) * 3
        a = rowsoftmax_float(h)
        u, s, vt = np.linalg.svd(a)
        k = int(rng.integers(1, n))
        x, y = u[:, :k] * s[:k], vt[:k].T
        enc = softmax_enclosure_of(h)
        bound = witness_error_upper_binary64(enc.a_mid, enc.a_rad, x, y)
        chk = check_upper_witness(enc, x, y, Fraction(10), strict=False)  # eps large: every witness proved
        assert chk.proved and chk.route == "binary64-bound"
        assert Fraction(Decimal(chk.value)) >= bound


class _DenormalsAreZero(np.ndarray):
    """numpy arithmetic as under denormals-are-zero (x86's DAZ): a subnormal operand of a product
    is read as 0 (results are not flushed)."""

    def __mul__(self, other):
        a, b = np.array(self, dtype=np.float64), np.array(other, dtype=np.float64)
        for x in (a, b):
            x[np.abs(x) < np.finfo(np.float64).tiny] = 0.0
        return a * b


def test_denormals_read_as_zero_are_detected(monkeypatch):
    """The last clause of the check: 2^-1074 * 2 must be 2^-1073, not 0."""
    import types

    from softrank.validated import float_bounds

    daz = types.SimpleNamespace(float64=np.float64, dot=np.dot,
                                array=lambda v: np.asarray(v, dtype=np.float64).view(_DenormalsAreZero))
    assert (daz.array([2.0**-1022]) * daz.array([0.5]))[0] == 2.0**-1023  # results stay subnormal
    assert (daz.array([2.0**-1074]) * daz.array([2.0]))[0] == 0.0  # operands are read as 0
    monkeypatch.setattr(float_bounds, "np", daz)
    assert not binary64_environment_ok()


def test_gamma_is_refused_where_n_u_reaches_one():
    import pytest

    from softrank.validated.float_bounds import UNIT_ROUNDOFF, gamma

    assert gamma(3) == 3 * UNIT_ROUNDOFF / (1 - 3 * UNIT_ROUNDOFF)
    for n in (2**53, 2**53 + 1, 2**60):
        with pytest.raises(ValueError, match="n u >= 1"):
            gamma(n)
    assert gamma(2**53 - 1) > 0


def test_a_blas_that_flushes_subnormal_results_is_detected(monkeypatch):
    """The dot-product clause: a BLAS built with flush-to-zero returns 0 for 2^-1022 * 0.5 even when
    numpy's elementwise products keep subnormals."""
    import types

    from softrank.validated import float_bounds

    def flushing_dot(a, b):
        v = float(np.dot(a, b))
        return 0.0 if 0 < abs(v) < np.finfo(np.float64).tiny else v

    ftz = types.SimpleNamespace(float64=np.float64, array=np.array, dot=flushing_dot)
    assert flushing_dot(np.array([2.0**-1022]), np.array([0.5])) == 0.0
    monkeypatch.setattr(float_bounds, "np", ftz)
    assert not binary64_environment_ok()
