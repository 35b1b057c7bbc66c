"""The kappa(T) bounds of validated/kappa_certificates.py pinned to their formulas in
proofs/kappa_duality_contrast.md on small exact inputs: the weighted covariance Sig_p, the dual
lower bound tr(K^T Sig_p Sig_q) / sqrt(||D^-1 G D||_inf) (Lemmas K1, K1'), the 2 x 2 contrast
(Lemma K2), the primal upper bound (Lemma K3), the radius bound and the native Gamma bound, with
the cases that must give no bound and the inputs that must be refused."""

import math
from fractions import Fraction

import numpy as np
import pytest
from flint import arb

from softrank.validated import kappa_certificates as kc
from softrank.validated.balls import lower_fraction, upper_fraction

TIGHT = Fraction(1, 2**45)  # relative slack allowed between a returned bound and the exact value


# ---- exact reference arithmetic (Fractions) --------------------------------------------------

def _fr(a):
    return [[Fraction(float(v)) for v in row] for row in np.atleast_2d(a)]


def _matmul(a, b):
    return [[sum((a[i][k] * b[k][j] for k in range(len(b))), Fraction(0)) for j in range(len(b[0]))]
            for i in range(len(a))]


def _transpose(a):
    return [list(col) for col in zip(*a)]


def _covariance(x, p):
    """Sig_p = sum_i w_i (x_i - xbar)(x_i - xbar)^T with w = p / sum(p), exactly."""
    xs, ps = _fr(x), [Fraction(float(v)) for v in p]
    w = [v / sum(ps) for v in ps]
    r = len(xs[0])
    mean = [sum(w[i] * xs[i][k] for i in range(len(xs))) for k in range(r)]
    return [[sum(w[i] * (xs[i][a] - mean[a]) * (xs[i][b] - mean[b]) for i in range(len(xs))) for b in range(r)]
            for a in range(r)]


def _dual_parts(x0, y0, p, q, k, d=None):
    """(trace, rho) of Lemma K1': tr(K^T Sig_p Sig_q) and the max row sum of |D^-1 G D|."""
    sp, sq, km = _covariance(x0, p), _covariance(y0, q), _fr(k)
    kt = _transpose(km)
    prod = _matmul(_matmul(kt, sp), sq)
    trace = sum(prod[i][i] for i in range(len(prod)))
    g = _matmul(_matmul(_matmul(kt, sp), km), sq)
    if d is not None:
        dm = _fr(d)
        (a, b), (c, e) = dm
        det = a * e - b * c
        dinv = [[e / det, -b / det], [-c / det, a / det]]
        g = _matmul(_matmul(dinv, g), dm)
    rows = [sum(abs(v) for v in row) for row in g]
    return trace, rows


def _assert_lower_is_tight(v, trace, rho):
    """v <= trace / sqrt(rho) and v is within TIGHT of it (squares compared exactly)."""
    assert v is not None and v > 0
    assert v * v * rho <= trace * trace
    assert (v * (1 + TIGHT)) ** 2 * rho >= trace * trace


def _assert_upper_is_tight(v, square):
    """v >= sqrt(square) and v is within TIGHT of it."""
    assert v * v >= square
    assert (v * (1 - TIGHT)) ** 2 <= square


def _ball_holds(ball, exact):
    lo, hi = lower_fraction(ball), upper_fraction(ball)
    assert lo <= exact <= hi
    assert hi - lo <= TIGHT * (1 + abs(exact))


# small data: m = 3 points of X0, N = 4 points of Y0, r = 2 (m, N and r all differ)
X0 = np.array([[1.0, 2.0], [-0.5, 0.25], [3.0, -1.0]])
Y0 = np.array([[0.5, 1.0], [2.0, -1.5], [-1.0, 0.75], [0.25, 0.5]])
P = np.array([1.0, 2.0, 1.0])  # sums to 4: the normalised weights are exact
Q = np.array([1.0, 1.0, 3.0, 3.0])  # sums to 8


# ---- weighted covariance ---------------------------------------------------------------------

def test_weighted_covariance_ball_matches_its_definition_entry_by_entry():
    ball = kc.weighted_covariance_ball(X0, P)
    exact = _covariance(X0, P)
    assert (ball.nrows(), ball.ncols()) == (2, 2)
    for a in range(2):
        for b in range(2):
            _ball_holds(ball[a, b], exact[a][b])


def test_weighted_covariance_with_weights_that_do_not_normalise_exactly_still_contains_sig_p():
    p = np.array([1.0, 1.0, 1.0])  # w = 1/3: inexact in binary, enclosed in balls
    ball = kc.weighted_covariance_ball(X0, p)
    exact = _covariance(X0, p)
    for a in range(2):
        for b in range(2):
            _ball_holds(ball[a, b], exact[a][b])


def test_zero_weights_drop_their_points_and_small_weights_are_kept():
    # two points with weight 1/2 each: Sig = (x1 - x2)(x1 - x2)^T / 4; the zero-weight point is ignored
    x = np.array([[0.0, 0.0], [100.0, -7.0], [2.0, 1.0]])
    ball = kc.weighted_covariance_ball(x, np.array([0.5, 0.0, 0.5]))
    exact = [[Fraction(1), Fraction(1, 2)], [Fraction(1, 2), Fraction(1, 4)]]
    for a in range(2):
        for b in range(2):
            _ball_holds(ball[a, b], exact[a][b])


@pytest.mark.parametrize("p", [[-0.5, 1.0, 1.0], [1.0, -2.0, 3.0], [0.0, 0.0, 0.0], [float("nan")] * 3],
                         ids=["small-negative", "negative", "all-zero", "nan"])
def test_invalid_weights_are_refused(p):
    with pytest.raises(ValueError, match="weights must be non-negative and not all zero"):
        kc.weighted_covariance_ball(X0, np.array(p))


# ---- dual lower bound (Lemmas K1, K1') -------------------------------------------------------

K_ROW0 = np.array([[1.0, 0.5], [-0.25, 0.125]])  # the largest row sum of |G| is row 0
K_ROW1 = np.array([[0.125, -0.25], [0.5, 1.0]])  # the largest row sum of |G| is row 1


@pytest.mark.parametrize("k, top", [(K_ROW0, 0), (K_ROW1, 1)], ids=["row0-max", "row1-max"])
def test_dual_bound_is_trace_over_sqrt_of_max_row_sum(k, top):
    trace, rows = _dual_parts(X0, Y0, P, Q, k)
    assert rows[top] > rows[1 - top]  # the example exercises the intended row
    rho = max(rows)
    assert rho.denominator > 1 and trace > 0
    v = kc.kappa_lower_dual(X0, Y0, P, Q, k)
    _assert_lower_is_tight(v, trace, rho)


def test_dual_bound_with_a_trace_below_one_and_rho_below_one():
    k = np.array([[0.03125, 0.0], [0.0, 0.015625]])
    trace, rows = _dual_parts(X0, Y0, P, Q, k)
    rho = max(rows)
    assert 0 < trace < 1 and rho < 1
    _assert_lower_is_tight(kc.kappa_lower_dual(X0, Y0, P, Q, k), trace, rho)


def test_dual_bound_with_a_similarity_uses_d_inverse_g_d():
    d = np.array([[2.0, 1.0], [-1.0, 1.0]])  # det 3: D^-1 is not binary64, the solve encloses it
    trace, rows = _dual_parts(X0, Y0, P, Q, K_ROW0, d)
    plain_rows = _dual_parts(X0, Y0, P, Q, K_ROW0)[1]
    assert max(rows) != max(plain_rows)
    v = kc.kappa_lower_dual(X0, Y0, P, Q, K_ROW0, similarity=d)
    _assert_lower_is_tight(v, trace, max(rows))


def test_dual_bound_with_inexact_weights_stays_below_the_exact_value():
    p = np.array([1.0, 1.0, 1.0])
    q = np.array([1.0, 2.0, 3.0, 5.0])
    trace, rows = _dual_parts(X0, Y0, p, q, K_ROW1)
    _assert_lower_is_tight(kc.kappa_lower_dual(X0, Y0, p, q, K_ROW1), trace, max(rows))


@pytest.mark.parametrize("scale, low, high", [(1.0, -4, -1), (0.125, -1, 0)], ids=["below-minus-one", "above-minus-one"])
def test_dual_bound_is_none_when_the_trace_is_negative(scale, low, high):
    k = -scale * np.eye(2)
    trace, _ = _dual_parts(X0, Y0, P, Q, k)
    assert low < trace < high
    assert kc.kappa_lower_dual(X0, Y0, P, Q, k) is None


def test_dual_bound_is_none_when_the_trace_is_exactly_zero():
    # Sig_p = Sig_q = I/2 (the points +-e_1, +-e_2): a skew K gives tr(K^T Sig_p Sig_q) = 0, rho > 0
    x = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    ones = np.ones(4)
    k = np.array([[0.0, 1.0], [-1.0, 0.0]])
    trace, rows = _dual_parts(x, x, ones, ones, k)
    assert trace == 0 and max(rows) > 0
    assert kc.kappa_lower_dual(x, x, ones, ones, k) is None


def test_dual_bound_is_none_for_a_singular_similarity():
    assert kc.kappa_lower_dual(X0, Y0, P, Q, K_ROW0, similarity=np.array([[1.0, 2.0], [0.5, 1.0]])) is None


def test_dual_bound_refuses_non_finite_k():
    with pytest.raises(ValueError, match="non-finite entry"):
        kc.kappa_lower_dual(X0, Y0, P, Q, np.array([[1.0, np.nan], [0.0, 1.0]]))


# ---- contrast (Lemma K2) ---------------------------------------------------------------------

def test_contrast_is_the_rectangle_over_four():
    x0 = np.array([[3.0, 1.5], [0.5, -2.0], [-1.25, 0.75]])
    y0 = np.array([[1.0, 2.0], [-1.25, 0.75], [0.375, -3.0]])
    t = _matmul(_fr(x0), _transpose(_fr(y0)))
    a, a2, b, b2 = 2, 0, 1, 2
    expected = abs(t[a][b] - t[a][b2] - t[a2][b] + t[a2][b2]) / 4
    assert expected > 0
    assert kc.kappa_lower_contrast(x0, y0, a, a2, b, b2) == expected


def test_contrast_larger_than_one_is_exact():
    x0 = np.array([[4.0, 1.0], [0.5, 3.0]])
    y0 = np.array([[2.0, -1.0], [-3.0, 0.5]])
    # (x_0 - x_1) . (y_0 - y_1) = 3.5 * 5 + (-2) * (-1.5) = 20.5
    assert kc.kappa_lower_contrast(x0, y0, 0, 1, 0, 1) == Fraction(41, 8)


def test_contrast_is_zero_not_negative_when_the_ball_contains_zero():
    # the terms 2^200, 1, -2^200 cancel beyond 106 bits: the ball for the sum contains 0 (and 1/4)
    big = 2.0**100
    x0 = np.array([[big, 1.0, big], [0.0, 0.0, 0.0]])
    y0 = np.array([[big, 1.0, -big], [0.0, 0.0, 0.0]])
    assert kc.kappa_lower_contrast(x0, y0, 0, 1, 0, 1) == 0
    # with enough precision the same rectangle is exact: 1/4
    assert kc.kappa_lower_contrast(x0, y0, 0, 1, 0, 1, prec_bits=256) == Fraction(1, 4)


def test_default_working_precision_is_106_bits():
    # T_ab - T_ab' - T_a'b + T_a'b' = 2^e + 1 - 2^e with e = 105 needs 106 bits (resolved: 1/4);
    # with e = 106 it needs 107 bits, so the ball contains 0 and the bound is 0
    for e, expected in ((105, Fraction(1, 4)), (106, Fraction(0))):
        x0 = np.array([[2.0 ** (e - 53), 1.0, 2.0 ** (e - 53)], [0.0, 0.0, 0.0]])
        y0 = np.array([[2.0**53, 1.0, -(2.0**53)], [0.0, 0.0, 0.0]])
        assert kc.kappa_lower_contrast(x0, y0, 0, 1, 0, 1) == expected


# ---- radius, primal upper bound (Lemma K3) and native Gamma ----------------------------------

def test_radius_upper_is_the_largest_distance_to_the_centre():
    x = np.array([[4.0, 6.0], [1.0, 3.0], [2.5, 2.0]])  # distances to (1, 2): 5, 1, 1.5
    assert kc.radius_upper(x, np.array([1.0, 2.0])) == 5


def test_radius_upper_irrational_distance_is_a_tight_upper_bound():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [3.0, 0.0]])  # distances to (1, 2): sqrt 5, 1, sqrt 8
    _assert_upper_is_tight(kc.radius_upper(x, np.array([1.0, 2.0])), Fraction(8))


def test_radius_upper_refuses_non_finite_points():
    with pytest.raises(ValueError, match="non-finite entry"):
        kc.radius_upper(np.array([[np.inf, 0.0]]), np.zeros(2))


def _primal_square(x0, y0, s, c, d):
    """max_i ||S^T x_i - c||^2 * max_j ||S^-1 y_j - d||^2, exactly."""
    sm = _fr(s)
    (a, b), (e, f) = sm
    det = a * f - b * e
    sinv = [[f / det, -b / det], [-e / det, a / det]]
    xs = _matmul(_fr(x0), sm)  # rows x_i^T S
    ys = _matmul(_fr(y0), _transpose(sinv))  # rows y_j^T S^-T
    cx, dy = [Fraction(float(v)) for v in c], [Fraction(float(v)) for v in d]
    rx = max(sum((v - w) ** 2 for v, w in zip(row, cx)) for row in xs)
    ry = max(sum((v - w) ** 2 for v, w in zip(row, dy)) for row in ys)
    return rx * ry


@pytest.mark.parametrize("s", [np.array([[2.0, 1.0], [0.0, 1.0]]), np.array([[2.0, 1.0], [-1.0, 1.0]])],
                         ids=["exact-inverse", "inexact-inverse"])
def test_primal_bound_is_the_product_of_the_two_radii(s):
    c, d = np.array([0.5, -0.25]), np.array([-1.0, 0.75])
    v = kc.kappa_upper_primal(X0, Y0, s, c, d)
    _assert_upper_is_tight(v, _primal_square(X0, Y0, s, c, d))


def test_primal_bound_with_identity_is_the_plain_radius_product():
    c, d = np.array([1.0, 0.5]), np.array([0.5, -0.25])
    v = kc.kappa_upper_primal(X0, Y0, np.eye(2), c, d)
    assert v >= kc.radius_upper(X0, c) * kc.radius_upper(Y0, d) * (1 - TIGHT)
    _assert_upper_is_tight(v, _primal_square(X0, Y0, np.eye(2), c, d))


def test_primal_bound_is_none_for_a_singular_s():
    assert kc.kappa_upper_primal(X0, Y0, np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros(2), np.zeros(2)) is None


def test_native_gamma_is_scale_times_both_radii():
    queries = np.array([[4.0, 6.0], [1.0, 2.0], [0.0, 2.0]])  # radius about (1, 2): 5
    keys = np.array([[0.0, 2.5], [1.5, 0.0]])  # radius about (0, 0): 2.5
    cq, ck = np.array([1.0, 2.0]), np.zeros(2)
    assert kc.native_gamma_upper(queries, keys, 0.75, cq, ck) == Fraction(75, 8)
    assert kc.native_gamma_upper(queries, keys, 3.0, cq, ck) == Fraction(75, 2)


def test_native_gamma_accepts_zero_scale_and_refuses_negative_scale():
    x = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert kc.native_gamma_upper(x, x, 0.0, np.zeros(2), np.zeros(2)) == 0
    for scale in (-0.5, -2.0):
        with pytest.raises(ValueError, match="scale must be >= 0"):
            kc.native_gamma_upper(x, x, scale, np.zeros(2), np.zeros(2))



@pytest.mark.parametrize("bad", [[math.nan, 1.0, 1.0], [1.0, math.inf, 1.0], [math.nan, math.nan, math.nan]])
def test_non_finite_weights_are_refused_not_dropped(bad):
    """A NaN or infinite weight is malformed input: refused, never read as a zero weight."""
    x0 = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match="non-negative"):
        kc.weighted_covariance_ball(x0, np.array(bad))


def test_returned_bounds_keep_the_working_precision():
    """The bounds are the ball end points at the working precision (106 bits), not rounded again to
    53: against exact values, the contrast bound is within 2^-90 and the primal bound's square within
    2^-90 (relative); a 53-bit end point is about 2^-53 away."""
    rng = np.random.default_rng(3)
    x0, y0 = rng.standard_normal((5, 2)), rng.standard_normal((4, 2))
    exact = abs(sum((Fraction(x0[0, i]) - Fraction(x0[1, i])) * (Fraction(y0[0, i]) - Fraction(y0[1, i]))
                    for i in range(2))) / 4
    low = kc.kappa_lower_contrast(x0, y0, 0, 1, 0, 1)
    assert low <= exact and (exact - low) / exact < Fraction(1, 2**90)
    up = kc.kappa_upper_primal(x0, y0, np.eye(2), np.zeros(2), np.zeros(2))
    sq = lambda z: max(sum(Fraction(v) ** 2 for v in row) for row in z)  # noqa: E731
    assert up * up >= sq(x0) * sq(y0) and (up * up - sq(x0) * sq(y0)) / (sq(x0) * sq(y0)) < Fraction(1, 2**90)
