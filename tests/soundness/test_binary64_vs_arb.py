"""The binary64-bound route against the Arb route (the float-bound route is cross-checked
against Arb): on random attention-like operators both enclose the same exact
quantity, so their intervals must intersect, and both must reach the same decisions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from flint import arb_mat

from helpers import rowsoftmax_float, softmax_enclosure_of
from softrank.validated.balls import lower_fraction, upper_fraction
from softrank.validated.binary64_norms import frobenius_upper
from softrank.validated.contractive_decoder import decoder_sum_arb, decoder_sum_binary64
from softrank.validated.singular_values import (
    singular_values_enclosed,
    svd_bounds_arb,
    svd_bounds_binary64,
    tail_norm_enclosed,
)


@pytest.mark.parametrize("seed", range(4))
def test_tail_and_singular_value_intervals_intersect(seed):
    rng = np.random.default_rng(40 + seed)
    m, n = int(rng.integers(10, 40)), int(rng.integers(10, 40))
    h = rng.normal(size=(m, n)) * 3
    enc = softmax_enclosure_of(h)
    b64 = svd_bounds_binary64(enc.a_mid, frobenius_upper(enc.a_rad))
    ball = svd_bounds_arb(arb_mat(enc.balls), enc.a_mid)
    for (l1, h1), (l2, h2) in zip(singular_values_enclosed(b64), singular_values_enclosed(ball)):
        assert max(l1, l2) <= min(h1, h2)
        assert h2 - l2 <= h1 - l1  # Arb is the tighter referee
    for k in range(0, min(m, n), 3):
        l1, h1 = tail_norm_enclosed(b64, k)
        l2, h2 = tail_norm_enclosed(ball, k)
        assert max(l1, l2) <= min(h1, h2)
        assert h1 - l1 < Fraction(1, 10**8)


@pytest.mark.parametrize("seed", range(4))
def test_decoder_sum_intervals_intersect(seed):
    rng = np.random.default_rng(80 + seed)
    n = int(rng.integers(8, 30))
    h = rng.normal(size=(n, n)) + np.eye(n) * 8
    a, enc = rowsoftmax_float(h), softmax_enclosure_of(h)
    p = int(rng.integers(2, n))
    rows = np.sort(rng.choice(n, size=p, replace=False)).astype(np.int64)
    w = np.linalg.pinv(a[rows])
    eps = Fraction(int(rng.integers(1, 50)), 100)
    lo, hi = decoder_sum_binary64(enc.a_mid[rows], enc.a_rad[rows], w, eps)
    ball = decoder_sum_arb([enc.balls[i] for i in rows.tolist()], w, eps)
    assert max(lo, lower_fraction(ball)) <= min(hi, upper_fraction(ball))
    assert hi - lo < Fraction(1, 10**10)
