"""The oracle's contractive decoders (``oracle/search/decoder.py`` search, ``oracle/decoder_checks.py``
re-check, kind ``decoder``): found certificates re-check, tampered ones never do, and the rank a
decoder proves never exceeds the exact r_eps that the other routes decide."""

from __future__ import annotations

import copy
import json
import math
import random
from fractions import Fraction as F

import pytest

from softrank.oracle import recheck
from softrank.oracle.search import decide, profile
from softrank.oracle.search.decoder import pivot_order, search


def lemma_d_sum(A, eps, rows, W):
    """||A_S W - I||_inf + eps max_j ||W_j||_1 in plain Fractions (independent of the checker)."""
    p = len(rows)
    res = max(sum(abs(sum((A[i][j] * W[j][t] for j in range(len(W))), F(0)) - (1 if s == t else 0))
                  for t in range(p)) for s, i in enumerate(rows))
    return res + eps * max(sum(abs(x) for x in w) for w in W)


def near_identity(rng, n, spread):
    """Row-stochastic rows with most mass on the diagonal, denominators 1000."""
    A = []
    for i in range(n):
        w = [rng.randint(0, spread) for _ in range(n)]
        w[i] += 1000 - sum(w) if sum(w) < 1000 else 0
        total = sum(w)
        A.append([F(x, total) for x in w])
    return A


def random_cell(rng, m, n):
    A = []
    for _ in range(m):
        w = [rng.randint(1, 100) for _ in range(n)]
        A.append([F(x, sum(w)) for x in w])
    return A


def test_identity_gets_a_decoder_on_every_row():
    I5 = [[F(int(i == j)) for j in range(5)] for i in range(5)]
    cert = search(I5, F(1, 2))
    assert cert["kind"] == "decoder" and sorted(cert["rows"]) == list(range(5))
    for k in range(5):
        assert recheck(I5, F(1, 2), k, "unrestricted", "impossible", cert)
        assert recheck(I5, F(1, 2), k, "stochastic", "impossible", cert)
    assert not recheck(I5, F(1, 2), 5, "unrestricted", "impossible", cert)
    # at eps = 1 the sum is 1 for W = I: Lemma D needs it strictly below 1
    assert search(I5, F(1)) is None


def test_pivot_order_is_a_permutation_starting_at_the_largest_row():
    rng = random.Random(4)
    A = random_cell(rng, 7, 5)
    order = pivot_order(A)
    assert sorted(order) == list(range(7))
    norms = [sum(float(x) ** 2 for x in row) for row in A]
    assert norms[order[0]] == max(norms)


def test_found_decoders_recheck_and_match_the_independent_sum():
    rng = random.Random(1)
    for t in range(12):
        A = near_identity(rng, rng.randint(3, 8), rng.choice((20, 60, 120)))
        eps = F(rng.randint(5, 45), 100)
        cert = search(A, eps)
        if cert is None:
            continue
        rows = cert["rows"]
        W = [[F(x) for x in r] for r in cert["W"]]
        assert lemma_d_sum(A, eps, rows, W) < 1
        back = json.loads(json.dumps(cert))
        assert recheck(A, eps, len(rows) - 1, "unrestricted", "impossible", back)
        assert not recheck(A, eps, len(rows), "unrestricted", "impossible", back)


def test_tampered_decoders_are_never_accepted():
    """Over 100 tampered certificates: wrong rows, too few rows for k, wrong shapes, non-integer
    indices, W scaled or shifted past the bound, eps at or above the certificate's own limit."""
    rng = random.Random(2)
    tampered = 0
    for t in range(10):
        A = near_identity(rng, rng.randint(4, 7), 40)
        eps = F(rng.randint(10, 40), 100)
        cert = search(A, eps)
        assert cert is not None
        m, N, p = len(A), len(A[0]), len(cert["rows"])
        k = p - 1
        assert recheck(A, eps, k, "unrestricted", "impossible", cert)
        W = [[F(x) for x in r] for r in cert["W"]]
        base = lemma_d_sum(A, F(0), cert["rows"], W)
        limit = (1 - base) / max(sum(abs(x) for x in w) for w in W)  # the sum is 1 at this eps
        bad = []
        rows = cert["rows"]
        if p >= 2:
            bad.append(dict(cert, rows=[rows[0]] * 2 + rows[2:]))  # repeated row
        bad.append(dict(cert, rows=rows[:-1] + [m]))  # out of range
        bad.append(dict(cert, rows=rows[:-1] + [-1]))
        bad.append(dict(cert, rows=[True] + rows[1:]))  # a boolean index
        bad.append(dict(cert, rows=[float(rows[0])] + rows[1:]))  # a float index
        bad.append(dict(cert, rows=[str(rows[0])] + rows[1:]))  # text
        bad.append(dict(cert, W=cert["W"][:-1]))  # N - 1 rows of W
        bad.append(dict(cert, W=[r[:-1] for r in cert["W"]]))  # p - 1 columns
        bad.append(dict(cert, rows=rows[:-1], W=[r[:-1] for r in cert["W"]]))  # p - 1 rows at k = p - 1
        bad.append(dict(cert, W=[["1e99999"] * p for _ in range(N)]))
        bad.append(dict(cert, W=[["nan"] * p for _ in range(N)]))
        for j in range(N):  # one entry raised past 2 / eps: eps ||W_j||_1 alone exceeds 1
            Wb = copy.deepcopy(cert["W"])
            Wb[j][rng.randrange(p)] = str(F(Wb[j][0]) + 2 / eps + 1)
            bad.append(dict(cert, W=Wb))
        for c in (F(-1), F(0)):  # W negated or zeroed: ||A_S W - I||_inf >= 1
            bad.append(dict(cert, W=[[str(c * F(x)) for x in r] for r in cert["W"]]))
        for b in bad:
            assert not recheck(A, eps, k, "unrestricted", "impossible", b), b
            assert not recheck(A, eps, k, "stochastic", "impossible", b), b
        tampered += len(bad)
        # eps at the certificate's own limit (sum exactly 1) and above: refused; just below: accepted
        assert not recheck(A, limit, k, "unrestricted", "impossible", cert)
        assert not recheck(A, limit * F(1001, 1000), k, "unrestricted", "impossible", cert)
        assert recheck(A, limit * F(999, 1000), k, "unrestricted", "impossible", cert)
        tampered += 2
        # the other verdict, or a claim above p - 1
        assert not recheck(A, eps, k, "unrestricted", "feasible", cert)
        assert not recheck(A, eps, p, "unrestricted", "impossible", cert)
        tampered += 2
    assert tampered >= 100


@pytest.mark.parametrize("seed", range(4))
def test_decoder_ranks_never_exceed_the_exact_rank_of_the_other_routes(seed):
    """Random 3 x 3 to 5 x 5 cells: the decoder's p <= r_eps(A) whenever the oracle's other
    routes (decoders off) decide r_eps exactly; zero contradictions."""
    rng = random.Random(100 + seed)
    compared = 0
    for t in range(15):
        n = rng.randint(3, 5)
        A = near_identity(rng, n, rng.choice((60, 150, 300)))
        eps = F(rng.randint(5, 60), 100)
        cert = search(A, eps)
        exact = profile(A, eps, decoders=False)
        if exact.rank is None:
            continue
        compared += 1
        assert cert is None or len(cert["rows"]) <= exact.rank, (A, eps, cert["rows"], exact.rank)
        with_decoders = profile(A, eps)
        assert with_decoders.lower <= exact.rank <= with_decoders.upper
    assert compared >= 5


def test_decide_answers_with_a_decoder_where_no_direct_reduction_applies():
    rng = random.Random(7)
    A = near_identity(rng, 8, 30)
    v = decide(A, F(1, 4), 4)
    assert v.verdict == "impossible" and v.reduction == "decoder" and v.rechecked
    assert v.proof == "proofs/lemma_D_contractive_decoder.md"
    v = decide(A, F(1, 4), 4, decoders=False, search=False, subcells=False, nerves=False)
    assert v.verdict == "outside-scope"


def softmax_cell(rng, n, beta):
    """Rows proportional to round(1000 exp(beta g)) + 1, g standard normal: attention-like rows."""
    A = []
    for _ in range(n):
        w = [round(1000 * math.exp(beta * rng.gauss(0, 1))) + 1 for _ in range(n)]
        A.append([F(x, sum(w)) for x in w])
    return A


def test_profile_of_a_random_twelve_by_twelve_cell_is_closed():
    """Decoders settle every rank below the witness the pivoted row spaces find (before them, the
    ranks above 6 of such a cell were left to minutes of sub-cell LPs)."""
    A = softmax_cell(random.Random(0), 12, 1.0)
    p = profile(A, F(1, 4))
    assert (p.lower, p.upper, p.rank) == (7, 7, 7)
    assert [d.reduction for d in p.decisions] == ["k=0", "k=1 unrestricted"] + ["decoder"] * 5 + ["witness"]
    assert all(d.rechecked for d in p.decisions)
    # without decoders the same ranks are impossible (a slower route) or left open, never feasible
    q = profile(A, F(1, 4), decoders=False, subcells=False, nerves=False)
    assert q.lower <= 7 and q.upper >= 7


def test_row_subcells_keep_the_orthant_route_where_no_decoder_exists():
    """A 6-row sub-cell whose least orthant value (0.2534) exceeds eps = 1/4 while the best
    decoder on those rows has Lemma D sum 1: the sub-cell route still proves r >= 6."""
    A = softmax_cell(random.Random(3), 12, 1.0)
    v = decide(A, F(1, 4), 5, search=False, decoders=False)
    assert v.verdict == "impossible" and v.reduction == "submatrix" and v.rechecked
    assert profile(A, F(1, 4)).rank == 6  # and no decoder claims more than the exact rank
    assert len(search(A, F(1, 4))["rows"]) <= 6
