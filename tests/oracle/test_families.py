"""Exact closure of the grid and gauge families (oracle/families.py), and the families CLI."""

import json
import math
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest
from softrank.oracle import families as fam
from softrank.errors import InputError

REFERENCE_R2 = {3: (12.2411, 9), 5: (48.9643, 25), 8: (149.9533, 64), 12: (370.2928, 144), 20: (1104.7578, 400)}


@pytest.mark.parametrize("L", sorted(REFERENCE_R2))
def test_grid_reference_values_r2(L):
    out = fam.close_grid_family(2, L, "1/4")
    kappa, rank = REFERENCE_R2[L]
    assert out.proved
    js = out.as_json()
    assert js["rank_C"] == 2 and js["approximation_rank"] == rank
    assert round(js["kappa"], 4) == kappa
    assert out.kappa_over_s_upper == Fraction(2 * (L - 1) ** 2, 2)


@pytest.mark.parametrize("L", [2, 3, 5, 8])
def test_grid_r3_closed(L):
    out = fam.close_grid_family(3, L, Fraction(1, 4))
    assert out.proved and out.as_json()["approximation_rank"] == L**3
    assert out.kappa_over_s_lower == Fraction(3 * (L - 1) ** 2, 2)


def test_grid_attention_matches_float_softmax_and_product_structure():
    r, L, eps = 2, 4, Fraction(1, 4)
    a = fam.grid_attention_exact(r, L, eps)
    pts = np.array(fam.grid_points(r, L), dtype=float)
    s = math.log(8 * r / (1 - 0.25))
    h = 2 * s * pts @ pts.T - s * (pts**2).sum(1)[None, :]
    af = np.exp(h - h.max(1, keepdims=True))
    af /= af.sum(1, keepdims=True)
    assert np.max(np.abs(np.array(a, dtype=float) - af)) < 1e-12
    # ||A - I||_inf from the dense exact matrix equals the product-structure value of Lemma D.
    dense = max(sum(abs(x - (1 if i == j else 0)) for j, x in enumerate(row)) for i, row in enumerate(a))
    passes, value = fam.check_grid_lemma_D_identity(r, L, eps)
    assert passes and dense + eps == value


def test_grid_lemma_D_value_is_exact_and_below_one():
    # ||A - I||_inf + eps = 2 (1 - 1/zmax^r) + eps, strictly between eps and 1 for this family.
    for r, L, eps in [(1, 2, Fraction(9, 10)), (2, 7, Fraction(1, 100)), (3, 4, Fraction(1, 2))]:
        passes, value = fam.check_grid_lemma_D_identity(r, L, eps)
        assert passes and eps < value < 1 and isinstance(value, Fraction)


def test_grid_rank_C_exact_small():
    assert fam.check_grid_rank_C(2, 2) and fam.check_grid_rank_C(3, 3)


@pytest.mark.parametrize("t,gamma", [(2, 5), (5, 26), (10, 101)])
def test_gauge_gamma_and_kappa(t, gamma):
    out = fam.close_gauge_family(1, t)
    assert out.invariant and out.proved
    assert out.gamma == gamma and out.kappa_lower == out.kappa_upper == 1
    assert [round(x, 2) for x in out.first_row_A] == [0.53, 0.07, 0.20, 0.20]


@pytest.mark.parametrize("beta", ["3/7", "5", "0.125"])
def test_gauge_kappa_equals_beta_rational(beta):
    out = fam.close_gauge_family(beta, "1/3")
    b = Fraction(beta)
    assert out.proved and out.kappa_upper == b
    assert out.gamma == b * (1 + Fraction(1, 9))


def test_gauge_radius_lemma_rejects_asymmetric_cloud():
    import sympy as sp
    assert fam.chebyshev_radius_sq_symmetric(sp.Matrix([[1, 0], [0, 1]])) is None


@pytest.mark.parametrize("args", [
    ["grid", "--r", "2", "--L", "1"], ["grid", "--r", "0", "--L", "3"],
    ["grid", "--r", "2", "--L", "3", "--eps", "1"], ["grid", "--r", "2", "--L", "3", "--eps", "0"],
    ["grid", "--r", "2", "--L", "3", "--eps", "abc"], ["gauge", "--beta", "0"], ["gauge", "--beta=-1/2"],
])
def test_cli_bad_arguments_exit_2(args):
    from softrank.cli import main
    assert main(["families", *args]) == 2


def test_cli_json_interfaces(capsys):
    from softrank.cli import main
    assert main(["families", "grid", "--r", "2", "--L", "3", "--eps", "1/4", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["rank_C"] == 2 and js["approximation_rank"] == 9 and js["proved"] is True
    assert isinstance(js["rank_C"], int) and abs(js["kappa"] - 12.2411) < 1e-4
    assert main(["families", "gauge", "--beta", "1", "--t", "2", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["gamma"] == 5 and js["kappa"] == 1 and js["invariant"] is True


def test_cli_error_is_one_line_subprocess():
    p = subprocess.run([sys.executable, "-m", "softrank", "families", "grid", "--r", "2", "--L", "1"],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1


def test_input_error_direct():
    with pytest.raises(InputError):
        fam.close_grid_family(2, 3, "3/2")


def test_huge_arguments_are_refused_before_any_work():
    """The library entry points bound their arguments themselves: r = 10^11 (L^r was computed:
    hang) and beta "1e-100000000" (read by Fraction: hang) are one-line InputErrors at once."""
    import time

    t = time.perf_counter()
    with pytest.raises(InputError, match="beyond this exact check"):
        fam.close_grid_family(10 ** 11, 2, "1/4")
    with pytest.raises(InputError, match="beta"):
        fam.close_gauge_family("1e-100000000", 2)
    with pytest.raises(InputError, match="eps"):
        fam.close_grid_family(2, 3, "1/1" + "0" * 10 ** 6)
    assert time.perf_counter() - t < 5
    assert fam.close_gauge_family("1/2", "2").proved and fam.close_grid_family(2, 3, "0.25").proved


def test_grid_row_factor_sums_by_prefix_sums_equal_the_definition():
    for L in range(2, 9):
        for q in (Fraction(3, 32), Fraction(1, 7), Fraction(9, 10)):
            direct = [sum(q ** ((v - w) ** 2) for w in range(L)) for v in range(L)]
            assert fam.grid_row_factor_sums(L, q) == direct


def test_grid_family_at_two_hundred_points_closes():
    """L = 200 (exact powers q^(d^2) up to d = 199: it used to run for minutes)."""
    out = fam.close_grid_family(1, 200, Fraction(1, 4))
    assert out.lemma_D_passes and out.proved and out.as_json()["approximation_rank"] == 200
