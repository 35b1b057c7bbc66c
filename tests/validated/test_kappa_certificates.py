"""kappa(T) brackets: validated/kappa_certificates.py (Lemmas K1-K3) and studies/theorem/kappa_sdp.py."""

import itertools
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from softrank.validated import kappa_certificates as kc


def test_gauge_example_bracket_is_beta():
    from softrank.studies.theorem.kappa_sdp import bracket_kappa

    q = np.array([[1, 0], [-1, 0], [0, 1], [0, -1]], float)
    for beta in (1.0, 2.5):
        b = bracket_kappa(beta * q, q)
        assert b.lower <= beta <= b.upper and b.rel_gap < 1e-6
        assert b.contrast_lower == beta


def test_grid_family_bracket_matches_exact_value():
    from softrank.studies.theorem.kappa_sdp import balanced_factors, bracket_kappa

    r, L = 2, 4
    s = math.log(8 * r / (1 - 0.25))
    z = np.array(list(itertools.product(range(L), repeat=r)), float)
    zc = z - z.mean(0)
    x0, y0 = balanced_factors(2 * s * zc @ zc.T, r)
    b = bracket_kappa(x0, y0)
    exact = s * r * (L - 1) ** 2 / 2
    assert b.lower <= exact * (1 + 1e-12) and b.upper >= exact * (1 - 1e-12) and b.rel_gap < 1e-6


def test_random_bracket_sound_and_tight():
    from softrank.studies.theorem.kappa_sdp import bracket_kappa

    rng = np.random.default_rng(0)
    x0, y0 = rng.standard_normal((40, 4)), rng.standard_normal((36, 4))
    b = bracket_kappa(x0, y0)
    assert 0 < b.lower <= b.upper and b.rel_gap < 1e-5
    assert b.contrast_lower <= b.upper and b.upper <= b.kappa_bal_upper * (1 + 1e-9)


def test_dual_bound_is_gauge_invariant_and_sound_for_any_k():
    rng = np.random.default_rng(3)
    x0, y0 = rng.standard_normal((20, 3)), rng.standard_normal((25, 3))
    p, q = rng.random(20), rng.random(25)
    from softrank.studies.theorem.kappa_sdp import polar_k

    k = polar_k(x0, y0, p, q)
    v0 = kc.kappa_lower_dual(x0, y0, p, q, k)
    s = rng.standard_normal((3, 3)) + 2 * np.eye(3)
    x1, y1 = x0 @ s, y0 @ np.linalg.inv(s).T
    k1 = polar_k(x1, y1, p, q)
    v1 = kc.kappa_lower_dual(x1, y1, p, q, k1)
    assert abs(float(v0) - float(v1)) < 1e-9 * float(v0)
    # Any K gives a valid (possibly weak) bound: never above the primal upper bound.
    up = kc.kappa_upper_primal(x0, y0, np.eye(3), x0.mean(0), y0.mean(0))
    for _ in range(5):
        v = kc.kappa_lower_dual(x0, y0, p, q, rng.standard_normal((3, 3)))
        assert v is None or v <= up


def test_primal_rejects_singular_s_and_contrast_exact():
    x0 = np.array([[1.0, 0], [0, 1]])
    assert kc.kappa_upper_primal(x0, x0, np.zeros((2, 2)), np.zeros(2), np.zeros(2)) is None
    # T = X0 Y0^T = I (2 x 2): contrast |1 - 0 - 0 + 1| / 4 = 1/2 exactly
    assert kc.kappa_lower_contrast(x0, x0, 0, 1, 0, 1) == Fraction(1, 2)
    assert kc.radius_upper(np.array([[3.0, 4.0]]), np.zeros(2)) >= 5


def test_weights_must_be_valid():
    with pytest.raises(ValueError):
        kc.weighted_covariance_ball(np.ones((3, 2)), np.zeros(3))


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from softrank.fastpath.store.writer import RecordWriter, write_index

    folder = tmp_path_factory.mktemp("kstore")
    rng = np.random.default_rng(7)
    for i in range(2):
        q, k = rng.standard_normal((20, 6)), rng.standard_normal((20, 6))
        h = 0.7 * q @ k.T
        a = np.exp(h - h.max(1, keepdims=True))
        a /= a.sum(1, keepdims=True)
        w = RecordWriter(folder, f"k-{i}", {"model": "synthetic", "family": "synthetic", "layer": 0, "head": i})
        w.set_qk(q, k, 0.7)
        w.set_a_hat(a)
        w.commit()
    write_index(folder)
    return folder


def test_cli_kappa_store(store, capsys, tmp_path):
    from softrank.cli import main

    out_csv = tmp_path / "k.csv"
    assert main(["kappa", str(store), "--rank", "2,3", "--json", "--out", str(out_csv)]) == 0
    js = json.loads(capsys.readouterr().out)
    assert js["summary"]["operators"] == 2 and js["summary"]["lower_validated"] == 2
    assert js["summary"]["ranks"] == [2, 3] and js["summary"]["max_rel_gap"] < 1e-4
    assert all(r["kappa_bal"] >= r["lower"] for r in js["rows"])
    assert out_csv.read_text().count("\n") == 3


def test_cli_kappa_bad_arguments(store):
    from softrank.cli import main

    assert main(["kappa", str(store), "--rank", "x"]) == 2
    assert main(["kappa", str(store), "--limit", "0"]) == 2
    assert main(["kappa", str(store / "nowhere")]) == 2


def test_similarity_makes_rank_deficient_dual_bound_sharp_and_invariant():
    """m = r points in r dimensions: the centred covariances are singular, G is a skew projector and
    ||G||_inf overshoots its spectral radius; the eigenvector similarity recovers the nuclear norm."""
    from softrank.studies.theorem.kappa_sdp import dual_lower_best, eigen_similarity, polar_k

    rng = np.random.default_rng(5)
    r = 6
    x0, y0 = rng.standard_normal((r, r)) * rng.uniform(0.1, 3, r), rng.standard_normal((r, r))
    p, q = np.ones(r), np.ones(r)
    u = (x0 - x0.mean(0)) / np.sqrt(r)
    v = (y0 - y0.mean(0)) / np.sqrt(r)
    nuc = np.linalg.svd(u @ v.T, compute_uv=False).sum()
    k = polar_k(x0, y0, p, q)
    plain = kc.kappa_lower_dual(x0, y0, p, q, k)
    d = eigen_similarity(x0, y0, p, q, k)
    assert d is not None
    sharp = kc.kappa_lower_dual(x0, y0, p, q, k, similarity=d)
    assert float(sharp) <= nuc * (1 + 1e-12) and float(sharp) > nuc * (1 - 1e-8)
    assert plain is None or plain <= sharp
    s = np.diag(np.exp(rng.uniform(-2, 2, r)))
    best = float(dual_lower_best(x0 @ s, y0 @ np.linalg.inv(s).T, p, q))
    assert abs(best - nuc) < 1e-7 * nuc
    # A singular similarity gives no bound (never a wrong one).
    assert kc.kappa_lower_dual(x0, y0, p, q, k, similarity=np.zeros((r, r))) is None


def test_polar_k_with_different_ranks_is_sound():
    from softrank.studies.theorem.kappa_sdp import dual_lower_best

    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((15, 2)) @ rng.standard_normal((2, 5))  # rank 2 in 5 dimensions
    y0 = rng.standard_normal((17, 5))
    p, q = np.ones(15), np.ones(17)
    u = (x0 - x0.mean(0)) / np.sqrt(15)
    v = (y0 - y0.mean(0)) / np.sqrt(17)
    nuc = np.linalg.svd(u @ v.T, compute_uv=False).sum()
    v_best = dual_lower_best(x0, y0, p, q)
    assert v_best is not None and float(v_best) <= nuc * (1 + 1e-12)
