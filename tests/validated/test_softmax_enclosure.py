"""The masked enclosures (validated/softmax_enclosure.py, the Arb route; validated/softmax_binary64.py,
Step Z) against a 300-bit mpmath softmax over the support: every entry of the truth lies in both
enclosures, hidden entries are exactly 0 with radius 0, on random and adversarial rows (huge
spreads, ties, one visible key, every visible logit at -700 or +700, huge hidden logits)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from softrank.validated.softmax_binary64 import softmax_binary64_enclosure
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure

def truth(h_rows, mask):
    """The masked softmax at 300 bits: rows of mpf, exact 0 off the mask."""
    out = []
    with mpmath.workprec(300):
        for row, seen in zip(h_rows, mask):
            top = max(x for x, v in zip(row, seen) if v)
            e = [mpmath.exp(x - top) if v else mpmath.mpf(0) for x, v in zip(row, seen)]
            total = mpmath.fsum(e)
            out.append([x / total for x in e])
    return out


def assert_encloses(enc, true_rows, mask):
    with mpmath.workprec(300):
        for i, row in enumerate(true_rows):
            for j, t in enumerate(row):
                mid, rad = enc.a_mid[i, j], enc.a_rad[i, j]
                if not mask[i, j]:
                    assert mid == 0.0 and rad == 0.0
                else:
                    assert abs(t - mpmath.mpf(mid)) <= mpmath.mpf(rad), (i, j, t, mid, rad)


def both(mask, logits=None, queries=None, keys=None, scale=None, bias=None):
    op = dict(logits=logits, queries=queries, keys=keys, scale=scale, bias=bias)
    b64 = softmax_binary64_enclosure(**op, mask=mask)
    arb_enc = rowsoftmax_enclosure(logits_balls(**op), mask=mask)
    return b64, arb_enc


def check_logits(h, mask, binary64_expected=True) -> int:
    """Both enclosures of the masked softmax of h against the truth; the number of entries tried."""
    true_rows = truth([[mpmath.mpf(float(x)) for x in row] for row in h], mask)
    b64, arb_enc = both(mask, logits=h)
    assert (b64 is not None) == binary64_expected
    for enc in (b64, arb_enc) if b64 is not None else (arb_enc,):
        assert_encloses(enc, true_rows, mask)
    if b64 is not None:  # its lazily built Arb rows: exact 0 balls off the mask
        assert all(b64.balls[i][j].mid() == 0 and b64.balls[i][j].rad() == 0 for i, j in np.argwhere(~mask))
    return h.size * (2 if b64 is not None else 1)


def random_mask(rng, m, n, p=0.5):
    mask = rng.random((m, n)) < p
    mask[np.arange(m), rng.integers(0, n, size=m)] = True
    return mask


@pytest.mark.parametrize("seed", range(6))
def test_random_rows(seed):
    rng = np.random.default_rng(seed)
    tried = 0
    for _ in range(20):
        m, n = int(rng.integers(1, 9)), int(rng.integers(1, 14))
        tried += check_logits(rng.normal(size=(m, n)) * float(rng.choice([0.1, 3, 30])), random_mask(rng, m, n))
        tried += check_logits(rng.normal(size=(m, n)) * 3, np.tril(np.ones((m, n), bool), k=max(0, n - m)))
    assert tried > 200
    print(f"seed {seed}: {tried} entries against the 300-bit truth")


def test_adversarial_rows():
    rng = np.random.default_rng(11)
    n = 12
    rows = [
        np.linspace(-1e4, 1e4, n),  # huge spread
        np.full(n, 2.5),  # ties
        np.full(n, -700.0),  # every visible logit at -700
        np.full(n, 700.0),  # and at +700
        np.array([700.0, -700.0] * (n // 2)),
        rng.normal(size=n) * 1e3,
        np.array([0.0, 0.0, 1e300, -1e300] * (n // 4)),  # huge logits (hidden ones below)
    ]
    h = np.array(rows)
    masks = [
        random_mask(rng, len(rows), n),
        np.eye(len(rows), n, k=3, dtype=bool),  # one visible key per row
        np.tril(np.ones((len(rows), n), bool), k=5),
    ]
    tried = 0
    for mask in masks:
        mask[6] = False
        mask[6, :2] = True  # row 6 sees its two 0.0 logits only: its +-1e300 are hidden
        tried += check_logits(h, mask)
    big = h.copy()
    big[~masks[2]] = 1e300  # huge hidden logits are never read
    tried += check_logits(big, masks[2])
    big[~masks[2]] = -1e300
    tried += check_logits(big, masks[2])
    print(f"adversarial: {tried} entries against the 300-bit truth")


def test_hidden_largest_entry_and_qk():
    rng = np.random.default_rng(5)
    h = rng.normal(size=(6, 10))
    h[:, 9] = 50.0  # the largest logit of every row, hidden
    mask = np.ones((6, 10), bool)
    mask[:, 9] = False
    check_logits(h, mask)
    q, k = rng.normal(size=(6, 4)), rng.normal(size=(10, 4))
    bias = rng.normal(size=(6, 10))
    mask = random_mask(rng, 6, 10)
    hq = []
    with mpmath.workprec(300):
        for i in range(6):
            hq.append([mpmath.mpf(0.5) * mpmath.fsum(mpmath.mpf(float(a)) * mpmath.mpf(float(b))
                                                     for a, b in zip(q[i], k[j])) + mpmath.mpf(float(bias[i, j]))
                       for j in range(10)])
    true_rows = truth(hq, mask)
    for enc in both(mask, queries=q, keys=k, scale=0.5, bias=bias):
        assert enc is not None
        assert_encloses(enc, true_rows, mask)


def test_unmasked_enclosure_unchanged():
    """mask=None and an all-True mask give the same arrays (today's records: nothing changes)."""
    h = np.random.default_rng(2).normal(size=(5, 7)) * 4
    full = np.ones((5, 7), bool)
    for a, b in zip(both(None, logits=h), both(full, logits=h)):
        assert np.array_equal(a.a_mid, b.a_mid) and np.array_equal(a.a_rad, b.a_rad)
