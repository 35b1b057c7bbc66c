"""Fast-path bracketing: constructions, certificates, brackets on operators with known r_eps, and
the float64 inequalities of every certificate produced."""

from __future__ import annotations

import numpy as np
import pytest

from softrank.fastpath.lower import decoder as dec
from softrank.fastpath.lower import certificates as low
from softrank.fastpath.bracket.matrix import bracket_matrix, resolved, verdict
from softrank.fastpath.upper.constructions import CONSTRUCTIONS
from softrank.fastpath.float64 import decoder_value, max_row_l1
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper.rank_search import MARGIN, search_ranks, tsvd_scan
from softrank.fastpath.upper.refine import shrink


def block_uniform(blocks: int, size: int) -> np.ndarray:
    """Block-diagonal row-stochastic operator with uniform rows: exact rank = blocks, and
    r_eps = blocks for every eps < 1 (decoder with one row per block and W = block indicators)."""
    n = blocks * size
    A = np.zeros((n, n))
    for b in range(blocks):
        A[b * size:(b + 1) * size, b * size:(b + 1) * size] = 1.0 / size
    return A


def near_identity(n: int, delta: float) -> np.ndarray:
    return (1 - delta) * np.eye(n) + delta / n * np.ones((n, n))


def check_certificate_float64(A, eps, cert: low.Certificate):
    """The certificate's inequality (record-format claim) holds in float64."""
    m = A.shape[0]
    k = cert.lower - 1
    if cert.kind == "decoder":
        rows, W = cert.rows, cert.W
        assert W.shape == (A.shape[1], len(rows)) and len(rows) == cert.lower
        assert len(set(rows.tolist())) == len(rows)
        assert decoder_value(A, rows, W, eps) < 1.0
    elif cert.kind == "frobenius":
        s = np.linalg.svd(A, compute_uv=False)
        assert np.sum(s[k:] ** 2) > m * eps * eps
    elif cert.kind == "projected":
        rows, W = cert.rows, cert.W
        sv = np.linalg.svd(A[rows] @ W, compute_uv=False)
        omega2 = np.max(np.sum(W * W, axis=1))
        assert np.sum(sv[k:] ** 2) > len(rows) * eps * eps * omega2
    else:  # pragma: no cover
        raise AssertionError(cert.kind)


@pytest.mark.parametrize("eps", [0.15, 0.25, 0.35])
def test_block_diagonal_known_rank(eps):
    A = block_uniform(5, 4)
    res = bracket_matrix(A, [eps])[eps]
    assert res.lower == 5 and res.upper == 5
    assert resolved(res.lower, res.upper, 20)
    assert max_row_l1(A, res.witness.X, res.witness.Y) <= eps - MARGIN
    assert any(c.kind == "decoder" for c in res.certificates)
    for c in res.certificates:
        check_certificate_float64(A, eps, c)


def test_near_identity_needs_full_rank():
    n = 12
    A = near_identity(n, 0.1)  # ||A - I||_inf = 2 * 0.1 * (n-1)/n < 1 - eps: r_eps = n
    res = bracket_matrix(A, [0.25, 0.35])
    for eps, b in res.items():
        assert b.lower == n and b.upper == n, (eps, b.lower, b.upper)
        assert b.verdicts == {"8": "impossible", "16": "feasible", "32": "feasible"}
        for c in b.certificates:
            check_certificate_float64(A, eps, c)


def test_random_softmax_bracket_is_consistent():
    rng = np.random.default_rng(3)
    Q, K = rng.normal(size=(32, 4)), rng.normal(size=(32, 4))
    A = rowsoftmax64(2.0 * Q @ K.T)
    res = bracket_matrix(A, [0.15, 0.25, 0.35], mode="full")
    prev_L, prev_U = None, None
    for eps in (0.15, 0.25, 0.35):
        b = res[eps]
        assert 1 <= b.lower <= b.upper <= 32
        assert b.upper <= b.baseline_upper and b.lower >= b.baseline_lower
        assert max_row_l1(A, b.witness.X, b.witness.Y) <= eps - MARGIN
        assert b.witness.X.shape == (32, b.upper) and b.witness.Y.shape == (32, b.upper)
        assert b.certificates and all(c.lower == b.lower for c in b.certificates)
        for c in b.certificates:
            check_certificate_float64(A, eps, c)
        # every construction's own rank is at least the best and at least L
        for name, k in b.ranks.items():
            if k is not None:
                assert b.lower <= k and k >= b.upper, name
        if prev_L is not None:  # larger eps: bracket cannot move up
            assert b.lower <= prev_L and b.upper <= prev_U
        prev_L, prev_U = b.lower, b.upper


@pytest.mark.parametrize("name", sorted(CONSTRUCTIONS))
def test_each_construction_gives_checked_witness(name):
    rng = np.random.default_rng(7)
    A = rowsoftmax64(3.0 * rng.normal(size=(24, 3)) @ rng.normal(size=(3, 24)))
    op = OperatorCache(A)
    found = search_ranks(op, name, [0.25], {0.25: 1}, {0.25: 24})
    w = found[0.25]
    assert w is not None, name
    assert w.X.shape == (24, w.rank) and w.Y.shape == (24, w.rank)
    assert max_row_l1(A, w.X, w.Y) == pytest.approx(w.error)
    assert w.error <= 0.25 - MARGIN
    if w.rank > 1:  # one rank less fails for this construction (binary search found the least)
        X, Y = CONSTRUCTIONS[name](op, w.rank - 1, 0.25 - MARGIN)
        assert max_row_l1(A, X, Y) > 0.25 - MARGIN


def test_tsvd_scan_is_least_truncation_rank():
    rng = np.random.default_rng(11)
    A = rowsoftmax64(rng.normal(size=(20, 20)) * 2)
    op = OperatorCache(A)
    w = tsvd_scan(op, [0.25])[0.25]
    U, s, Vt = np.linalg.svd(A)
    errs = [np.abs(A - (U[:, :k] * s[:k]) @ Vt[:k]).sum(axis=1).max() for k in range(21)]
    assert w.rank == next(k for k, e in enumerate(errs) if e <= 0.25 - MARGIN)


def test_decoder_lp_beats_or_matches_pseudoinverse():
    rng = np.random.default_rng(5)
    A = rowsoftmax64(4.0 * rng.normal(size=(16, 16)))
    op = OperatorCache(A)
    rows = np.array([0, 3, 7], dtype=np.int64)
    v_lp, W = dec.decoder_lp(op, rows, 0.25)
    v_pinv = decoder_value(A, rows, np.linalg.pinv(A[rows]), 0.25)
    assert v_lp <= v_pinv + 1e-9
    assert v_lp == pytest.approx(decoder_value(A, rows, W, 0.25))


def test_trivial_lower_one_and_uniform_operator():
    A = np.full((10, 10), 0.1)  # rank one: r_eps = 1
    b = bracket_matrix(A, [0.25])[0.25]
    assert b.lower == 1 and b.upper == 1
    check_certificate_float64(A, 0.25, b.certificates[0])


def test_resolved_rule_and_verdicts():
    assert resolved(5, 10, 128)          # U <= 2L
    assert not resolved(5, 11, 32)
    assert resolved(1, 3, 8)             # U - L <= 2
    assert not resolved(30, 61, 256)     # 61 > 60, 31 > 2, 31 > 25.6
    assert not resolved(3, 20, 128)
    assert resolved(10, 25, 256)         # U > 2L but U - L = 15 <= 25.6
    assert not resolved(2, None, 16)
    assert verdict(8, 3, 8) == "feasible"
    assert verdict(8, 9, 20) == "impossible"
    assert verdict(8, 5, 12) == "unresolved"


def diffuse_softmax(n: int, seed: int, scale: float = 2.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    Q, K = rng.standard_normal((n, 8)), rng.standard_normal((n, 8))
    return rowsoftmax64(scale * Q @ K.T / np.sqrt(8))


def test_decoder_lp_growth_never_loses_and_certificates_hold():
    """Step 3 of the decoder search (LP growth) only adds rows, every set it returns satisfies the
    Lemma D inequality in float64, and on this diffuse operator it adds at least one row."""
    A = diffuse_softmax(64, seed=2, scale=1.5)
    gained = 0
    for eps in (0.15, 0.25, 0.35):
        op = OperatorCache(A)
        plain = dec.decoder_certificate(op, eps, p_hi=64, lp_tries=0, lp_max_p=12)
        grown = dec.decoder_certificate(op, eps, p_hi=64, lp_max_p=12)
        check_certificate_float64(A, eps, plain)
        check_certificate_float64(A, eps, grown)
        assert grown.lower >= plain.lower
        gained += grown.lower - plain.lower
    assert gained >= 1


def test_decoder_poor_start_does_not_limit_the_search():
    """A valid but small start set (from a larger eps) cannot make the result smaller than the
    search from scratch: the greedy runs from both and keeps the larger."""
    A = diffuse_softmax(64, seed=5)
    eps = 0.25
    fresh = dec.decoder_certificate(OperatorCache(A), eps, p_hi=64, lp_max_p=12)
    rows = np.array([int(A.max(axis=1).argmax())], dtype=np.int64)
    poor = low.Certificate("decoder", 1, rows=rows, W=np.ones((64, 1)))
    started = dec.decoder_certificate(OperatorCache(A), eps, p_hi=64, start=poor, lp_max_p=12)
    check_certificate_float64(A, eps, started)
    assert started.lower >= fresh.lower


def test_shrink_gives_checked_lower_rank_witness():
    """Large-step alternating l1 from a truncated-SVD witness: the result is checked in max-row-l1
    and its rank is at most the start's; on this operator it is strictly lower."""
    A = diffuse_softmax(96, seed=1, scale=4.0)
    op = OperatorCache(A)
    eps = 0.25
    w0 = tsvd_scan(op, [eps])[eps]
    assert w0 is not None
    w = shrink(op, w0, eps - MARGIN, lo=1)
    assert w.rank <= w0.rank
    assert max_row_l1(A, w.X, w.Y) <= eps - MARGIN
    assert w.X.shape[1] == w.rank and w.Y.shape[1] == w.rank
    assert w.rank < w0.rank


def local_window_softmax(n: int, seed: int, width: float = 3.0, noise: float = 1.0) -> np.ndarray:
    """Local positional attention with content noise (like the high-rank encoder heads)."""
    rng = np.random.default_rng(seed)
    i = np.arange(n)
    H = -((i[:, None] - i[None, :] + 1.0) ** 2) / (2 * width**2) + noise * rng.standard_normal((n, n))
    return rowsoftmax64(H)


def test_smooth_decoder_growth_adds_rows_past_the_lp():
    """Beyond the LP's reach (here the LP is switched off) the smoothed-CG growth adds rows to a
    valid decoder, every certificate satisfies Lemma D in float64, and it stops at the goal."""
    A = local_window_softmax(64, seed=0)
    eps = 0.25
    op = OperatorCache(A)
    base = dec.decoder_certificate(op, eps, p_hi=64, lp_tries=0, lp_max_p=1)
    check_certificate_float64(A, eps, base)
    grown = dec.grow_decoder_smooth(op, base, eps, goal=base.lower + 8)
    check_certificate_float64(A, eps, grown)
    assert base.lower < grown.lower <= base.lower + 8
    capped = dec.grow_decoder_smooth(op, base, eps, goal=base.lower + 1)
    check_certificate_float64(A, eps, capped)
    assert capped.lower == base.lower + 1


def test_smooth_decoder_growth_screens_only_small_sets_without_subset_screens(monkeypatch):
    """With ``subset_screen=False`` the set oracle screens candidate sets of at most ORACLE_MAX_P
    rows (``screen_max_p`` when given) only; the rows added are the same as with every set screened (a screened-out set is one
    no W fits, so its fit fails too), and the certificate holds in float64."""
    A = local_window_softmax(64, seed=0)
    eps = 0.25
    op = OperatorCache(A)
    base = dec.decoder_certificate(op, eps, p_hi=64, lp_tries=0, lp_max_p=1)
    monkeypatch.setattr(dec, "ORACLE_MAX_P", base.lower + 2)
    seen = []
    real = dec._no_decoder

    def spy(op_, cand, e):
        seen.append(len(cand))
        return real(op_, cand, e)

    monkeypatch.setattr(dec, "_no_decoder", spy)
    every = dec.grow_decoder_smooth(OperatorCache(A), base, eps, goal=base.lower + 6)
    assert max(seen) > base.lower + 2
    seen.clear()
    small = dec.grow_decoder_smooth(OperatorCache(A), base, eps, goal=base.lower + 6, subset_screen=False)
    assert seen and max(seen) <= base.lower + 2
    check_certificate_float64(A, eps, small)
    assert small.lower > base.lower + 2
    assert np.array_equal(small.rows, every.rows)
    seen.clear()
    fewer = dec.grow_decoder_smooth(OperatorCache(A), base, eps, goal=base.lower + 6, subset_screen=False,
                                    screen_max_p=base.lower + 1)
    assert seen and max(seen) == base.lower + 1  # screen_max_p replaces ORACLE_MAX_P
    check_certificate_float64(A, eps, fewer)
    assert fewer.lower > base.lower + 2


def test_smooth_decoder_growth_returns_input_for_invalid_start():
    """An input certificate that does not hold in float64 is returned unchanged (never grown)."""
    A = local_window_softmax(32, seed=1)
    bad = low.Certificate("decoder", 2, rows=np.array([0, 1]), W=10 * np.ones((32, 2)))
    assert dec.grow_decoder_smooth(OperatorCache(A), bad, 0.25, goal=10) is bad


def test_smooth_decoder_is_proved_by_the_validated_checker():
    """The grown decoder (W from the smoothed CG, not an LP) is proved by Lemma D in balls on the
    enclosure of rowsoftmax of the logits, on both routes; one more row claimed is not accepted."""
    from fractions import Fraction

    from softrank.validated.contractive_decoder import check_contractive_decoder
    from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure

    rng = np.random.default_rng(0)
    n = 48
    i = np.arange(n)
    H = -((i[:, None] - i[None, :] + 1.0) ** 2) / 18.0 + rng.standard_normal((n, n))
    enc = rowsoftmax_enclosure(logits_balls(logits=H))
    A = enc.a_mid
    eps = Fraction(1, 4)
    op = OperatorCache(A)
    base = dec.decoder_certificate(op, 0.25, p_hi=n, lp_tries=0, lp_max_p=1)
    grown = dec.grow_decoder_smooth(op, base, 0.25, goal=base.lower + 6)
    assert grown.lower > base.lower
    for strict in (False, True):
        assert check_contractive_decoder(enc, eps, grown.rows, grown.W, strict=strict).proved
    extra = next(r for r in range(n) if r not in set(grown.rows.tolist()))
    rows2 = np.append(grown.rows, extra)
    w2 = np.hstack([grown.W, np.zeros((n, 1))])
    assert not check_contractive_decoder(enc, eps, rows2, w2).proved


@pytest.mark.parametrize(("mode", "lower", "upper", "n", "want"), [
    ("fast", 37, 74, 256, (37, 47)),    # resolved (U <= 2L): growth aims at ceil(U / 1.6)
    ("basic", 37, 74, 256, (37, 37)),   # basic mode stops where the bracket resolves
    ("fast", 10, 40, 256, (15, 25)),    # unresolved: resolving at U - L <= p/10 (p = 256), the aim 25
    ("fast", 5, 7, 256, (5, 5)),        # U / 1.6 is below L already
    ("fast", 60, 118, 256, (60, 64)),   # U / 1.6 = 74 is past the cap: 64^2 * 256 = GROWTH_WORK
    ("fast", 60, 160, 128, (80, 90)),   # at N = 128 the cap is 90 (90^2 * 128 <= GROWTH_WORK < 91^2 * 128)
    ("fast", 1, 250, 256, (125, 125)),  # the resolving size is past the cap: growth still aims at it
    ("basic", 60, 118, 256, (60, 60)),
])
def test_growth_goal_is_the_resolving_size_and_in_fast_mode_u_over_the_ratio_up_to_the_cap(mode, lower, upper, n, want):
    import types

    from softrank.fastpath.bracket import matrix as mx

    s = types.SimpleNamespace(mode=mode, lower={0.25: lower}, upper=lambda e: upper,
                              op=types.SimpleNamespace(p=256, N=n))
    assert mx.GROWTH_RATIO == 1.6 and mx.GROWTH_WORK == 64 * 64 * 256
    assert mx.growth_cap(256) == 64 and mx.growth_cap(128) == 90
    assert mx._growth_goal(s, 0.25) == want


def test_a_bracket_left_unresolved_after_growth_gets_a_second_descent(monkeypatch):
    import contextlib
    import types

    from softrank.fastpath.bracket import matrix as mx
    from softrank.fastpath.upper import minimax

    calls = []

    def fake_descend(op, w, e, lower, budget):
        calls.append((w.rank, budget))
        return types.SimpleNamespace(rank=w.rank - 10, error=w.error), budget

    monkeypatch.setattr(minimax, "descend", fake_descend)
    w = types.SimpleNamespace(rank=90, error=0.1)
    for lower, want in ((40, [(90, mx.MINIMAX_RESOLVE_BUDGET)]),  # 90 > 2 * 40: unresolved
                        (45, [])):  # 90 <= 2 * 45: resolved, nothing to do
        calls.clear()
        s = types.SimpleNamespace(eps_list=[0.25], best={0.25: w}, lower={0.25: lower},
                                  op=types.SimpleNamespace(p=256), timer=lambda name: contextlib.nullcontext())
        mx.resolve_witnesses(s)
        assert calls == want
        assert s.best[0.25].rank == (80 if want else 90)


@pytest.mark.parametrize("mode", ["fast", "basic"])
def test_fast_mode_grows_where_resolving_takes_more_rows_than_growth_may_try(monkeypatch, mode):
    """A bracket whose resolving lower end is more than ``SMOOTH_TRIES`` rows away: basic mode
    leaves it, fast mode grows toward its goal (the rows it adds may narrow it)."""
    import types

    from softrank.fastpath.bracket import matrix as mx

    goals = []
    monkeypatch.setattr(dec, "grow_decoder_smooth", lambda op, start, e, goal, **kw: goals.append(goal) or start)
    rng = np.random.default_rng(4)
    A = rowsoftmax64(1.5 * rng.standard_normal((96, 4)) @ rng.standard_normal((4, 96)))  # low rank: small L
    s = mx.BracketState(op=OperatorCache(A), eps_list=[0.25], mode=mode, timer=mx.Timer())
    mx.scan_baseline(s)
    mx.tail_certificates(s)
    mx.decoder_certificates(s)
    s.best[0.25] = types.SimpleNamespace(rank=96, error=0.0)  # an upper end far above it
    resolve, goal = mx._growth_goal(s, 0.25)
    assert resolve - s.lower[0.25] > dec.SMOOTH_TRIES and goal > s.lower[0.25]
    mx.grow_decoders(s)
    assert goals == ([goal] if mode == "fast" else [])


@pytest.mark.parametrize("mode", ["fast", "basic"])
def test_grow_decoders_gives_fast_mode_the_early_give_up_and_no_subset_screens(monkeypatch, mode):
    """Fast mode grows with ``GIVE_UP``, ``GIVE_UP_EARLY``, ``STALL``, ``ENOUGH``, ``POLISH_ENOUGH``, bordered starts,
    ``FAST_TRIES`` candidates, without the subset screens and without the decoder LP's start W; basic mode is the earlier
    growth step for step (none of these, every set screened)."""
    import types

    from softrank.fastpath.bracket import matrix as mx

    got = []

    def fake_grow(op, start, e, goal, **kwargs):
        got.append(kwargs)
        return start

    monkeypatch.setattr(dec, "grow_decoder_smooth", fake_grow)
    A = local_window_softmax(48, seed=2)
    s = mx.BracketState(op=OperatorCache(A), eps_list=[0.25], mode=mode, timer=mx.Timer())
    mx.scan_baseline(s)
    mx.tail_certificates(s)
    mx.decoder_certificates(s)
    s.best[0.25] = types.SimpleNamespace(rank=min(A.shape[0], 3 * s.lower[0.25] + 3), error=0.0)
    mx.grow_decoders(s)
    assert got == ([{"give_up": dec.GIVE_UP, "give_up_early": dec.GIVE_UP_EARLY, "subset_screen": False,
                     "stall": dec.STALL, "enough": dec.ENOUGH, "polish_enough": dec.POLISH_ENOUGH, "bordered": True, "lp_start": False,
                     "screen_max_p": dec.FAST_SCREEN_MAX_P, "tries": dec.FAST_TRIES}] if mode == "fast"
                   else [{"give_up": (), "give_up_early": (), "subset_screen": True, "stall": None, "enough": None,
                          "polish_enough": None, "bordered": False, "lp_start": True, "screen_max_p": None, "tries": dec.SMOOTH_TRIES}])


@pytest.mark.parametrize("mode", ["fast", "basic"])
def test_decoder_certificates_lead_with_the_residual_order_in_fast_mode_only(monkeypatch, mode):
    from softrank.fastpath.bracket import matrix as mx

    got = []
    real = dec.decoder_certificate

    def spy(op, e, p_hi, **kwargs):
        got.append(kwargs.get("lead"))
        return real(op, e, p_hi, **kwargs)

    monkeypatch.setattr(dec, "decoder_certificate", spy)
    s = mx.BracketState(op=OperatorCache(local_window_softmax(32, seed=3)), eps_list=[0.35, 0.25], mode=mode,
                        timer=mx.Timer())
    mx.scan_baseline(s)
    mx.tail_certificates(s)
    mx.decoder_certificates(s)
    assert got == [mode == "fast"] * 2


@pytest.mark.parametrize("form", ["causal", "window"])
def test_masked_operators_are_bracketed_with_float64_checked_ends(form):
    """A native decoder operator (exact zeros off a causal or sliding-window support, one-hot first
    row): witnesses within eps - MARGIN in float64 and float64-valid lower certificates; no
    construction or certificate assumes positive entries."""
    from softrank.fastpath.store.support import causal_mask, masked_rowsoftmax64, window_mask

    rng = np.random.default_rng(5)
    Q, K = rng.normal(size=(24, 4)), rng.normal(size=(24, 4))
    mask = causal_mask(24, 24, 0) if form == "causal" else window_mask(24, 24, 8, 0)
    A = masked_rowsoftmax64(Q @ K.T, mask)
    assert np.all(A[~mask] == 0.0) and A[0, 0] == 1.0
    res = bracket_matrix(A.copy(), [0.15, 0.35], mode="basic")
    for eps, b in res.items():
        assert 1 <= b.lower <= b.upper <= 24 and np.all(np.isfinite(b.witness.X))
        assert max_row_l1(A, b.witness.X, b.witness.Y) <= eps - MARGIN
        assert b.certificates
        for c in b.certificates:
            check_certificate_float64(A, eps, c)
