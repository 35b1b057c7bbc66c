"""Exact closure of the gauge and grid families (softrank.oracle.families), value by value: the argument
checks at their limits, the symbolic gauge steps (Chebyshev radii, Gamma(t), kappa bounds), the exact
grid quantities (q, A, the row-factor numerators, the Lemma D value, rank C, kappa(C)/s) against
independent computations in Fractions, and what the closures report (proved, JSON fields)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import mpmath
import pytest
import sympy as sp

from softrank.oracle import families as fam
from softrank.errors import InputError


# ---------------------------------------------------------------- reading arguments

def test_integers_and_fractions_are_taken_exactly_whatever_their_size():
    assert fam.parse_rational(3, "w", "x") == 3 and isinstance(fam.parse_rational(3, "w", "x"), F)
    assert fam.parse_rational(F(-2, 9), "w", "x") == F(-2, 9)
    big = 10 ** 500  # more digits than text may have: an int is not read as text
    assert fam.parse_rational(big, "w", "x") == big
    assert fam.parse_rational(F(1, big), "w", "x") == F(1, big)


@pytest.mark.parametrize("text,value", [("1/4", F(1, 4)), (" 3 / 7 ", F(3, 7)), ("0.25", F(1, 4)), ("-2", F(-2)),
                                        ("1e-3", F(1, 1000))])
def test_rational_text_is_read_exactly(text, value):
    assert fam.parse_rational(text, "families grid", "eps") == value


@pytest.mark.parametrize("bad", [True, False, "abc", "1/0x", "", None])
def test_booleans_and_text_that_is_no_rational_are_refused_naming_the_field(bad):
    with pytest.raises(InputError) as e:
        fam.parse_rational(bad, "families gauge", "beta")
    assert e.value.field == "beta" and e.value.where == "families gauge"


def _grid_refusal(field, r, L, eps):
    with pytest.raises(InputError) as e:
        fam._check_grid_args(r, L, eps)
    assert e.value.field == field and e.value.where == "families grid"


@pytest.mark.parametrize("r", [0, -1, 2.0, "2", None, True])
def test_grid_dimension_must_be_an_integer_at_least_one(r):
    _grid_refusal("r", r, 3, F(1, 4))
    with pytest.raises(InputError):
        fam.close_grid_family(r, 3, "1/4")


@pytest.mark.parametrize("L", [1, 0, -2, 3.0, "3", True, False])
def test_grid_side_must_be_an_integer_at_least_two(L):
    _grid_refusal("L", 2, L, F(1, 4))
    with pytest.raises(InputError):
        fam.close_grid_family(2, L, "1/4")


@pytest.mark.parametrize("eps", [F(0), F(-1, 2), F(-2), F(1), F(3, 2), F(2), F(1) + F(1, 10 ** 9)])
def test_grid_eps_outside_the_open_unit_interval_is_refused(eps):
    _grid_refusal("eps", 1, 2, eps)
    with pytest.raises(InputError):
        fam.close_grid_family(1, 2, eps)


@pytest.mark.parametrize("eps", [F(1, 10 ** 9), F(1, 2), F(1) - F(1, 10 ** 9)])
def test_grid_eps_just_inside_the_open_unit_interval_closes(eps):
    out = fam.close_grid_family(1, 2, eps)
    assert out.proved and out.eps == eps and out.q == (1 - eps) / 8


def test_the_grid_size_limit_is_two_hundred_thousand_points():
    for r, L in [(1, 2), (1, 200_000), (2, 447), (17, 2), (5, 11)]:  # 447^2 = 199809, 2^17 = 131072
        assert fam._check_grid_args(r, L, F(1, 4)) is None
    for r, L in [(1, 200_001), (2, 448), (18, 2), (3, 59), (12, 3)]:  # 448^2 = 200704, 59^3 = 205379
        _grid_refusal("L", r, L, F(1, 4))


# ---------------------------------------------------------------- gauge example (symbolic)

@pytest.fixture(scope="module")
def gauge_3_7():
    return fam.close_gauge_family("3/7", -2)


def test_gauge_closure_at_beta_three_sevenths(gauge_3_7):
    out = gauge_3_7
    assert (out.beta, out.t) == (F(3, 7), F(-2))
    assert out.invariant is True and out.proved is True
    assert out.gamma == F(3, 7) * (1 + 4) and out.kappa_lower == out.kappa_upper == F(3, 7)
    e = [math.exp(3 / 7), math.exp(-3 / 7), 1.0, 1.0]
    assert out.first_row_A == pytest.approx([x / sum(e) for x in e], rel=1e-14, abs=0)
    js = out.as_json()
    assert js["kappa"] == 3 / 7 and js["kappa_exact"] == "3/7" and js["gamma_exact"] == "15/7"
    assert js["proved"] is True and js["invariant"] is True and js["beta"] == "3/7" and js["t"] == "-2"


@pytest.mark.parametrize("beta,t", [(F(1, 2), F(0)), (F(5), F(-3, 2)), (F(1, 10 ** 6), F(7))])
def test_gauge_gamma_is_beta_times_one_plus_t_squared(beta, t):
    out = fam.close_gauge_family(beta, t)
    assert out.gamma == beta * (1 + t * t)
    assert out.kappa_lower == out.kappa_upper == beta and out.proved


@pytest.mark.parametrize("beta", [F(0), F(-1, 2), F(-5), "-1/1000000"])
def test_gauge_scale_must_be_positive(beta):
    with pytest.raises(InputError) as e:
        fam.close_gauge_family(beta, 1)
    assert e.value.field == "beta"


def test_gamma_formula_is_beta_one_plus_t_squared_in_a_positive_beta_and_a_real_t():
    g = fam.native_gamma_gauge_symbolic()
    syms = {s.name: s for s in g.free_symbols}
    beta, t = syms["beta"], syms["t"]
    assert beta.is_positive is True and t.is_real is True
    assert sp.expand(g - beta * (1 + t ** 2)) == 0
    assert fam.check_gauge_invariance_symbolic() is True


def test_chebyshev_radius_of_the_sheared_clouds_is_the_largest_squared_norm():
    t = sp.Symbol("t", real=True)
    # Q S_t: the largest norm comes first; K S_t^{-T}: it comes last
    assert sp.expand(fam.chebyshev_radius_sq_symmetric(sp.Matrix([[1, t], [-1, -t], [0, 1], [0, -1]])) - (1 + t ** 2)) == 0
    assert sp.expand(fam.chebyshev_radius_sq_symmetric(sp.Matrix([[1, 0], [-1, 0], [-t, 1], [t, -1]])) - (1 + t ** 2)) == 0
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix([[0, 1], [0, -1], [2, 0], [-2, 0]])) == 4
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix([[3, 0], [0, 1], [-3, 0], [0, -1]])) == 9
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix([[0, 0]])) == 0


@pytest.mark.parametrize("rows", [
    [[1, 0], [0, 1]],
    [[1, 0], [2, 0]],
    [[1, 0], [-1, 0], [0, 1]],
    [[1, 0], [-1, 0], [0, 1], [0, 1]],  # (0, 1) twice but its negative never: a multiset, not a set
    [[1, 0], [1, 0], [-1, 0], [0, 0]],
])
def test_a_cloud_that_is_not_centrally_symmetric_has_no_radius_here(rows):
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix(rows)) is None


def test_a_symmetric_cloud_without_a_certain_largest_norm_has_no_radius_here():
    t = sp.Symbol("t", real=True)
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix([[1, 0], [-1, 0], [0, t], [0, -t]])) is None


def test_when_a_radius_is_not_determined_the_gauge_closure_refuses(monkeypatch):
    real = fam.chebyshev_radius_sq_symmetric
    for which in (1, 2):  # the radius of Q S_t, then that of K S_t^-T, is not determined
        calls = []

        def fake(cloud, which=which, calls=calls):
            calls.append(cloud)
            return None if len(calls) == which else real(cloud)

        monkeypatch.setattr(fam, "chebyshev_radius_sq_symmetric", fake)
        assert fam.native_gamma_gauge_symbolic() is None and len(calls) == 2
        calls.clear()
        with pytest.raises(ArithmeticError, match="Chebyshev radius"):
            fam.close_gauge_family(1, 2)


def test_gauge_kappa_bounds_scale_with_the_clouds(monkeypatch):
    assert fam.check_gauge_kappa_exact(F(3, 7)) == (F(3, 7), F(3, 7))
    q, _, shear = fam.gauge_clouds()
    # Q -> 3 Q, K -> 2 K: rad(Q) rad(K) = 6 and the rectangle contrast is 6 beta
    monkeypatch.setattr(fam, "gauge_clouds", lambda: (3 * q, 2 * q, shear))
    assert fam.check_gauge_kappa_exact(F(3, 7)) == (F(18, 7), F(18, 7))
    assert fam.check_gauge_kappa_exact(F(5)) == (F(30), F(30))


def test_gauge_kappa_refuses_a_factorization_bound_that_is_not_rational(monkeypatch):
    q, _, shear = fam.gauge_clouds()
    k = sp.Matrix([[1, 1], [-1, -1], [1, -1], [-1, 1]])  # rad(K)^2 = 2: beta sqrt(2) is irrational
    monkeypatch.setattr(fam, "gauge_clouds", lambda: (q, k, shear))
    with pytest.raises(ArithmeticError, match="not the expected rational"):
        fam.check_gauge_kappa_exact(F(1))


def _gauge(lo, up, beta, invariant=True):
    return fam.GaugeClosure(beta=beta, t=F(0), invariant=invariant, gamma_symbolic="beta*(t**2 + 1)",
                            gamma=F(beta), kappa_lower=lo, kappa_upper=up)


def test_a_gauge_closure_is_proved_only_when_invariant_and_both_bounds_equal_beta():
    assert _gauge(F(1, 2), F(1, 2), F(1, 2)).proved is True
    assert _gauge(F(1, 2), F(1, 2), F(1, 2), invariant=False).proved is False
    for lo, up, beta in [(F(1, 4), F(1, 2), F(1, 2)), (F(1), F(1, 2), F(1, 2)), (F(1, 2), F(1, 4), F(1, 2)),
                         (F(1, 2), F(1), F(1, 2)), (F(1, 2), F(1, 2), F(1, 4)), (F(1, 2), F(1, 2), F(1)),
                         (F(1, 4), F(1, 4), F(1, 2)), (F(1), F(1), F(1, 2))]:
        out = _gauge(lo, up, beta)
        assert out.proved is False, (lo, up, beta)
        js = out.as_json()
        assert js["proved"] is False and js["kappa"] is None and js["kappa_exact"] is None
        assert js["kappa_lower"] == str(lo) and js["kappa_upper"] == str(up)
    assert _gauge(F(1, 2), F(1, 2), F(1, 2)).as_json()["kappa_exact"] == "1/2"
    assert _gauge(F(1, 2), F(1, 2), F(1, 2)).first_row_A == []


# ---------------------------------------------------------------- grid family (exact rationals)

def test_grid_q_is_one_minus_eps_over_eight_r():
    assert fam.grid_q(2, F(1, 4)) == F(3, 64)
    assert fam.grid_q(3, F(2, 5)) == F(1, 40)
    assert fam.grid_q(1, F(1, 2)) == F(1, 16)
    assert fam.grid_q(5, F(9, 10)) == F(1, 400)


def _z(L, q):
    """z(v) = sum_w q^{(v - w)^2}, directly."""
    return [sum(q ** ((v - w) ** 2) for w in range(L)) for v in range(L)]


def test_grid_attention_is_the_product_of_one_dimensional_softmax_factors():
    for r, L, eps in [(1, 3, F(1, 4)), (2, 3, F(1, 4)), (2, 2, F(2, 3)), (3, 2, F(1, 2))]:
        q = (1 - eps) / (8 * r)
        z = _z(L, q)
        pts = list(itertools.product(range(L), repeat=r))
        want = [[math.prod(q ** ((x - y) ** 2) / z[x] for x, y in zip(a, b)) for b in pts] for a in pts]
        got = fam.grid_attention_exact(r, L, eps)
        assert got == want and all(sum(row) == 1 for row in got)
    q = F(3, 32)  # r = 1, L = 3, eps = 1/4 by hand
    assert fam.grid_attention_exact(1, 3, F(1, 4))[0] == [x / (1 + q + q ** 4) for x in (1, q, q ** 4)]


@pytest.mark.parametrize("L,q", [(2, F(3, 64)), (3, F(3, 64)), (4, F(3, 64)), (5, F(2, 7)), (4, F(1, 40))])
def test_grid_row_factor_numerators_over_b_to_the_squared_side(L, q):
    N, B = fam.grid_row_factor_numerators(L, q)
    D = (L - 1) ** 2
    assert B == q.denominator ** D
    assert N == [sum(q.numerator ** ((v - w) ** 2) * q.denominator ** (D - (v - w) ** 2) for w in range(L))
                 for v in range(L)]
    assert [F(n, B) for n in N] == _z(L, q) == fam.grid_row_factor_sums(L, q)


def _lemma_d_value(r, L, eps):
    """2 (1 - 1/zmax^r) + eps, directly (the grid's ||A - I||_inf + eps with W = I)."""
    q = (1 - eps) / (8 * r)
    return 2 * (1 - 1 / max(_z(L, q)) ** r) + eps


def _dense_lemma_d_value(r, L, eps):
    a = fam.grid_attention_exact(r, L, eps)
    return max(sum(abs(x - (i == j)) for j, x in enumerate(row)) for i, row in enumerate(a)) + eps


@pytest.mark.parametrize("r,L,eps", [(2, 3, F(1, 4)), (3, 2, F(1, 2)), (2, 4, F(1, 3)), (1, 5, F(1, 10)),
                                     (3, 3, F(7, 8))])
def test_grid_lemma_d_value_is_exact(r, L, eps):
    passes, value = fam.check_grid_lemma_D_identity(r, L, eps)
    assert value == _lemma_d_value(r, L, eps) and passes is True and value < 1
    if L ** r <= 16:
        assert value == _dense_lemma_d_value(r, L, eps)
    if (r, L, eps) == (2, 3, F(1, 4)):
        assert value == F(2833, 4900)


def test_grid_lemma_d_check_is_strict_at_value_one():
    # eps = 1: q = 0, A = I, the value is exactly eps = 1 and the check fails
    assert fam.check_grid_lemma_D_identity(1, 2, F(1)) == (False, F(1))
    assert fam.check_grid_lemma_D_identity(2, 3, F(1)) == (False, F(1))
    # just below: passes; past 1 (q < 0): fails
    eps = F(1) - F(1, 10 ** 6)
    assert fam.check_grid_lemma_D_identity(1, 2, eps) == (True, _lemma_d_value(1, 2, eps))
    passes, value = fam.check_grid_lemma_D_identity(1, 2, F(9, 8))
    assert value == _lemma_d_value(1, 2, F(9, 8)) == F(551, 504) and passes is False


@pytest.mark.parametrize("r,L", [(1, 2), (1, 5), (2, 2), (2, 3), (3, 2), (3, 3), (4, 2)])
def test_grid_rank_of_c_is_r(r, L):
    assert fam.check_grid_rank_C(r, L) is True


@pytest.mark.parametrize("r,points,full", [
    (2, [(1, 0), (2, 1), (3, 2)], False),  # collinear, not through the origin
    (2, [(0, 0), (1, 1), (2, 2), (5, 5)], False),
    (2, [(1, 1), (1, 1)], False),
    (2, [(0, 0), (1, 0), (0, 1)], True),
    (2, [(1, 2), (3, 1), (2, 5), (4, 4)], True),
    (3, [(1, 0, 0), (0, 1, 0), (0, 0, 1)], False),  # affine rank 2
    (3, [(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, 0)], True),
    (3, [(2, 1, 0), (4, 2, 0), (0, 0, 0), (6, 3, 0)], False),
])
def test_rank_check_sees_a_point_set_that_spans_fewer_dimensions(monkeypatch, r, points, full):
    """check_grid_rank_C computes rank (Z^T P Z) exactly: on point sets other than the grid (patched
    in), it fails exactly when the centred points span fewer than r dimensions."""
    monkeypatch.setattr(fam, "grid_points", lambda r_, L_: list(points))
    assert fam.check_grid_rank_C(r, 3) is full


@pytest.mark.parametrize("r,L", [(1, 2), (1, 3), (2, 2), (2, 5), (3, 4), (4, 3), (5, 2)])
def test_grid_kappa_over_s_bounds_meet_at_r_times_side_squared_over_two(r, L):
    want = F(r * (L - 1) ** 2, 2)
    pts = list(itertools.product(range(L), repeat=r))
    centre = F(L - 1, 2)
    assert fam.grid_kappa_over_s_upper(r, L) == want == 2 * max(sum((x - centre) ** 2 for x in a) for a in pts)
    corners = list(itertools.product((0, L - 1), repeat=r))
    var = sum(F(sum(c[k] ** 2 for c in corners), len(corners)) - F(sum(c[k] for c in corners), len(corners)) ** 2
              for k in range(r))
    assert fam.grid_kappa_over_s_lower(r, L) == want == 2 * var


@pytest.mark.parametrize("r,eps", [(2, F(1, 4)), (3, F(2, 5)), (1, F(7, 9))])
def test_grid_s_ball_encloses_the_log_tightly(r, eps):
    ball = fam.grid_s_ball(r, eps)
    with mpmath.workprec(300):
        s = mpmath.log(mpmath.mpf(8 * r) / (1 - mpmath.mpf(eps.numerator) / eps.denominator))
        assert abs(mpmath.mpf(ball.mid().str(60, radius=False)) - s) < mpmath.mpf(10) ** -35
    assert float(ball.rad()) < 1e-35


@pytest.mark.parametrize("r,L,eps,k", [(1, 2, F(1, 4), F(1, 2)), (3, 2, F(1, 4), F(3, 2)), (2, 3, F(2, 5), F(4))])
def test_grid_kappa_is_s_times_the_closed_ratio(r, L, eps, k):
    out = fam.close_grid_family(r, L, eps)
    assert out.proved and out.kappa_over_s_upper == k
    s = math.log(8 * r / (1 - eps.numerator / eps.denominator))
    assert out.as_json()["kappa"] == pytest.approx(float(k) * s, rel=1e-15, abs=0)
    assert float(out.kappa_ball().rad()) < 1e-30


def _digits(ball_text):
    assert ball_text.startswith("[") and " +/- " in ball_text
    mid = ball_text[1:].split(" +/- ")[0]
    return len(mid.replace(".", "").replace("-", "").lstrip("0"))


def test_grid_json_reports_the_exact_closure():
    js = fam.close_grid_family(2, 3, "1/4").as_json()
    assert js["family"] == "grid" and (js["r"], js["L"], js["eps"], js["q"]) == (2, 3, "1/4", "3/64")
    assert js["n_points"] == 9 and js["rank_C"] == 2 and js["approximation_rank"] == 9
    assert js["kappa_over_s"] == js["kappa_over_s_lower"] == js["kappa_over_s_upper"] == "4"
    assert js["s"] == "log(16/(1 - 1/4))"
    assert js["lemma_D_value"] == 2833 / 4900 and js["lemma_D_value_exact_below_1"] is True
    assert js["proved"] is True
    assert _digits(js["kappa_ball"]) == 20 and _digits(js["s_ball"]) == 20
    assert js["kappa"] == pytest.approx(4 * math.log(64 / 3), rel=1e-15, abs=0)
    js = fam.close_grid_family(3, 2, "2/5").as_json()
    assert js["n_points"] == 8 and js["approximation_rank"] == 8 and js["s"] == "log(24/(1 - 2/5))"


def _grid(lo, up, rank_ok=True, lemma_ok=True):
    return fam.GridClosure(r=2, L=3, eps=F(1, 4), q=F(3, 64), rank_C_is_r=rank_ok, kappa_over_s_lower=lo,
                           kappa_over_s_upper=up, s_ball=fam.grid_s_ball(2, F(1, 4)), lemma_D_value=F(2833, 4900),
                           lemma_D_passes=lemma_ok)


def test_a_grid_closure_is_proved_only_when_every_part_holds():
    assert _grid(F(4), F(4)).proved is True and _grid(F(4), F(4)).kappa_closed is True
    for lo, up in [(F(7, 2), F(4)), (F(9, 2), F(4))]:
        out = _grid(lo, up)
        assert out.kappa_closed is False and out.proved is False
        js = out.as_json()
        assert js["kappa"] is None and js["kappa_ball"] is None and js["kappa_over_s"] is None
        assert js["kappa_over_s_lower"] == str(lo) and js["kappa_over_s_upper"] == "4"
        assert js["rank_C"] == 2 and js["approximation_rank"] == 9
    out = _grid(F(4), F(4), rank_ok=False)
    assert out.proved is False and out.as_json()["rank_C"] is None and out.as_json()["proved"] is False
    out = _grid(F(4), F(4), lemma_ok=False)
    assert out.proved is False and out.as_json()["approximation_rank"] is None
    assert out.as_json()["lemma_D_value_exact_below_1"] is False
    assert _grid(F(4), F(4), rank_ok=False, lemma_ok=False).proved is False
