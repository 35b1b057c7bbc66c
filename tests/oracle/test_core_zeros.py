"""``softrank.oracle.search.core.decide`` on cells with exact zeros, as masked attention gives them.

A is a small (at most 6 x 6) row-stochastic rational matrix whose support is causal (query i sees
key j iff j <= i + offset), a window (i + offset - w < j <= i + offset) or random, every row with
at least one positive entry (one-hot rows included).  Each cell is decided in both classes and
every decision is re-checked here, independently of the oracle's code:

- feasible: the witness B = X Y^T is multiplied out in Fractions, its max row l1 error compared
  with eps, its rank computed by FLINT (``fmpq_mat.rank``), and in the stochastic class B >= 0
  with unit row sums checked;
- impossible: the certificate passes the trusted re-check (``softrank.oracle.recheck``) after a
  JSON round trip; the verdict agrees with every exact closed form that applies (k = 0; k >=
  rank A, feasible as B = A is stochastic; Gastinel-Kahan for square invertible A at k = N - 1;
  m = 2 or N = 2 at k = 1 by enumerating the breakpoints of a convex piecewise-linear function;
  stochastic k = 1 between half the largest row distance and the best of a few centres); an
  unrestricted impossibility implies the stochastic one; and a binary64 witness search (truncated
  SVD, convex fits on rows of A) checked in Fractions never finds a competitor.

``outside-scope`` answers are counted, never treated as decisions.  Seeded; the default run
decides 240 cells (480 decisions), the ``slow`` run 1,500 more; 40 more cells are profiled in both
classes (``profile``, every decision re-checked the same way) and one goes through ``softrank oracle``.
"""

from __future__ import annotations

import itertools
import json
import random
from collections import Counter
from fractions import Fraction as F

import flint
import numpy as np
import pytest
from scipy.optimize import linprog

from softrank.cli import main
from softrank.oracle import recheck
from softrank.oracle.search import decide, profile

EPS = [F(1, 20), F(1, 10), F(1, 5), F(1, 4), F(1, 3), F(2, 5), F(1, 2), F(3, 4)]
CLASSES = ("unrestricted", "stochastic")


# ---------------------------------------------------------------- cells

def masked_support(rng: random.Random, m: int, n: int) -> tuple[str, list[list[bool]]]:
    form = rng.choice(["causal", "window", "random"])
    off = rng.randint(0, n - 1)
    if form == "causal":
        S = [[j <= i + off for j in range(n)] for i in range(m)]
    elif form == "window":
        w = rng.randint(1, n)
        S = [[i + off - w < j <= i + off for j in range(n)] for i in range(m)]
    else:
        p = rng.uniform(0.25, 0.8)
        S = [[rng.random() < p for _ in range(n)] for _ in range(m)]
    for row in S:  # a window past the matrix, or an empty random row: one visible key
        if not any(row):
            row[rng.randrange(n)] = True
    return form, S


def masked_cell(rng: random.Random):
    m, n = rng.choice([1, 2, 3, 3, 4, 4, 5, 5, 6, 6]), rng.choice([1, 2, 3, 3, 4, 4, 5, 5, 6, 6])
    form, S = masked_support(rng, m, n)
    onehot = rng.random() < 0.1
    A = []
    for row in S:
        w = [rng.randint(1, 9) if s else 0 for s in row]
        if onehot:
            first = row.index(True)
            w = [int(j == first) for j in range(n)]
        A.append([F(x, sum(w)) for x in w])
    assert all(x >= 0 for row in A for x in row) and all(sum(row) == 1 for row in A)
    eps = rng.choice(EPS)
    kmax = min(m, n)
    k = rng.choice(list(range(kmax + 1)) + list(range(1, kmax)) * 2)
    if m == n and rng.random() < 0.2:  # at or just below the exact Gastinel-Kahan threshold
        t = gastinel_kahan(A)
        if t is not None and 0 < t < 1:
            k, eps = n - 1, t if rng.random() < 0.5 else t * F(99, 100)
    return form, A, eps, k


# ---------------------------------------------------------------- independent exact arithmetic

def fmpq_mat(M):
    return flint.fmpq_mat(len(M), len(M[0]), [flint.fmpq(x.numerator, x.denominator) for row in M for x in row])


def exact_rank(M) -> int:
    return fmpq_mat(M).rank()


def row_l1(u, v) -> F:
    return sum((abs(a - b) for a, b in zip(u, v)), F(0))


def error(A, B) -> F:
    return max(row_l1(a, b) for a, b in zip(A, B))


def is_competitor(A, B, eps, k, klass) -> bool:
    if error(A, B) > eps or exact_rank(B) > k:
        return False
    return klass != "stochastic" or all(x >= 0 for row in B for x in row) and all(sum(row) == 1 for row in B)


def witness_matrix(cert, m, n):
    X = [[F(x) for x in row] for row in cert["X"]]
    Y = [[F(y) for y in row] for row in cert["Y"]]
    assert len(X) == m and len(Y) == n
    return [[sum((x * y for x, y in zip(X[i], Y[j])), F(0)) for j in range(n)] for i in range(m)]


def gastinel_kahan(A):
    """eps*_{N-1} = 1 / ||A^-1||_inf for square invertible A (None if singular)."""
    M = fmpq_mat(A)
    if M.rank() < M.nrows():
        return None
    inv = M.inv()
    n = M.nrows()
    norm = max(sum(abs(F(int(inv[i, j].p), int(inv[i, j].q))) for j in range(n)) for i in range(n))
    return 1 / norm


def two_row_rank1(A) -> F:
    """m = 2: eps*_1 = min_{||y||_1 = 1} ||A^T y||_1, y = (t, s (1 - t)); convex in t on [0, 1], so its
    minimum is at 0, 1 or a zero of one term."""
    a, b = A
    best = None
    for s in (1, -1):
        cands = {F(0), F(1)}
        for x, y in zip(a, b):
            den = x - s * y
            if den != 0 and 0 <= -s * y / den <= 1:
                cands.add(-s * y / den)
        v = min(sum(abs(t * x + s * (1 - t) * y) for x, y in zip(a, b)) for t in cands)
        best = v if best is None else min(best, v)
    return best


def two_column_rank1(A) -> F:
    """N = 2: eps*_1 = min_{||w||_inf = 1} ||A w||_inf, w = (1, t) or (t, 1), t in [-1, 1]; convex, so
    its minimum is at -1, 1 or where two of the lines +-(c_i + t d_i) cross."""
    best = None
    for c, d in ((0, 1), (1, 0)):
        lines = [(row[c], row[d]) for row in A]
        cands = {F(-1), F(1)}
        for (c1, d1), (c2, d2) in itertools.product(lines, repeat=2):
            for s in (1, -1):
                den = d1 - s * d2
                if den != 0 and -1 <= (s * c2 - c1) / den <= 1:
                    cands.add((s * c2 - c1) / den)
        v = min(max(abs(ci + t * di) for ci, di in lines) for t in cands)
        best = v if best is None else min(best, v)
    return best


def closed_form(A, eps, k, klass):
    """True / False where an exact closed form decides the cell (A is row-stochastic), else None."""
    m, n = len(A), len(A[0])
    if k == 0:
        return klass == "unrestricted" and max(sum(abs(x) for x in row) for row in A) <= eps
    if k >= exact_rank(A):
        return True  # B = A, stochastic itself
    if klass == "unrestricted":
        if m == n and k == n - 1:
            return eps >= gastinel_kahan(A)
        if k == 1 and m == 2:
            return eps >= two_row_rank1(A)
        if k == 1 and n == 2:
            return eps >= two_column_rank1(A)
    elif k == 1:
        low = max(row_l1(a, b) for a in A for b in A) / 2  # triangle inequality through v
        centres = [list(r) for r in A] + [[(x + y) / 2 for x, y in zip(a, b)] for a, b in itertools.combinations(A, 2)]
        centres.append([sum(col) / m for col in zip(*A)])
        high = min(max(row_l1(a, v) for a in A) for v in centres)
        if eps < low:
            return False
        if eps >= high:
            return True
    return None


# ---------------------------------------------------------------- a binary64 witness search, checked exactly

def fit_rows(A, V, convex):
    """min_X sum_i ||a_i - x_i V||_1 by one binary64 LP (x_i >= 0 with unit sum if ``convex``)."""
    a, V = np.array(A, dtype=float), np.array(V, dtype=float)
    m, n, r = a.shape[0], a.shape[1], V.shape[0]
    nx = m * r
    c = np.concatenate([np.zeros(nx), np.ones(m * n)])
    rows, rhs = [], []
    for i in range(m):
        for j in range(n):
            e = np.zeros(nx + m * n)
            e[i * r:(i + 1) * r] = V[:, j]
            e[nx + i * n + j] = -1
            rows.append(e.copy()); rhs.append(a[i, j])  # x V - a <= t
            e[i * r:(i + 1) * r] *= -1
            rows.append(e); rhs.append(-a[i, j])  # a - x V <= t
    eq = None
    if convex:
        eq = np.zeros((m, nx + m * n))
        for i in range(m):
            eq[i, i * r:(i + 1) * r] = 1
    bounds = [(0, None) if convex else (None, None)] * nx + [(0, None)] * (m * n)
    res = linprog(c, A_ub=np.array(rows), b_ub=rhs, A_eq=eq, b_eq=np.ones(m) if convex else None,
                  bounds=bounds, method="highs")
    return None if res.status != 0 else res.x[:nx].reshape(m, r)


def times(X, V):
    return [[sum((x * V[t][j] for t, x in enumerate(xr)), F(0)) for j in range(len(V[0]))] for xr in X]


def float_competitor(A, eps, k, klass, rng):
    """A competitor found in binary64 and confirmed in Fractions, or None (a failed search proves nothing)."""
    m, n = len(A), len(A[0])
    if k == 0:
        return [[F(0)] * n] * m if is_competitor(A, [[F(0)] * n] * m, eps, 0, klass) else None
    tries = []
    subsets = list(itertools.combinations(range(m), k))
    for rows in rng.sample(subsets, min(4, len(subsets))):  # convex combinations of k rows of A: stochastic
        V = [A[i] for i in rows]
        X = fit_rows(A, V, convex=True)
        if X is not None:
            X = [[F(float(max(v, 0.0))) for v in x] for x in X]
            tries.append(times([[v / sum(x) for v in x] if sum(x) > 0 else [F(1)] + [F(0)] * (k - 1) for x in X], V))
    if klass == "unrestricted":
        V = np.linalg.svd(np.array(A, dtype=float))[2][:k]
        X = fit_rows(A, V, convex=False)
        if X is not None:
            tries.append(times([[F(float(x)) for x in xr] for xr in X], [[F(float(v)) for v in row] for row in V]))
    return next((B for B in tries if is_competitor(A, B, eps, k, klass)), None)


# ---------------------------------------------------------------- the run

def decide_and_recheck(form, A, eps, k, rng, counts: Counter):
    m, n = len(A), len(A[0])
    verdicts = {}
    for klass in CLASSES:
        v = decide(A, eps, k, klass)
        verdicts[klass] = v.verdict
        counts[(klass, v.verdict)] += 1
        counts[("form", form)] += 1
        truth = closed_form(A, eps, k, klass)
        if v.verdict == "outside-scope":
            assert v.certificate is None
            continue
        cert = json.loads(json.dumps(v.certificate))
        counts[("kind", cert["kind"])] += 1
        if v.verdict == "feasible":
            assert cert["kind"] == "witness"
            assert is_competitor(A, witness_matrix(cert, m, n), eps, k, klass), (A, eps, k, klass)
        else:
            assert v.verdict == "impossible"
            assert recheck(A, eps, k, klass, "impossible", cert), (A, eps, k, klass)
            assert k < exact_rank(A)
            assert float_competitor(A, eps, k, klass, rng) is None, (A, eps, k, klass)
        if truth is not None:
            assert truth == (v.verdict == "feasible"), (A, eps, k, klass, v.verdict)
            counts[("closed form", v.verdict)] += 1
            counts[("closed form, k > 0", v.verdict)] += k > 0
    u, s = verdicts["unrestricted"], verdicts["stochastic"]
    assert not (u == "impossible" and s == "feasible"), (A, eps, k)
    decided = "outside-scope" not in (u, s)
    counts["cells decided" if decided else "cells with an outside-scope class"] += 1


def run(seed: int, cells: int) -> Counter:
    rng = random.Random(seed)
    counts: Counter = Counter()
    for _ in range(cells):
        decide_and_recheck(*masked_cell(rng), rng, counts)
    return counts


def test_masked_cells_decided_and_rechecked():
    counts = run(2026, 240)
    print(dict(counts))
    assert counts["cells decided"] >= 200
    assert sum(counts[(c, "outside-scope")] for c in CLASSES) <= 24
    assert all(counts[("form", f)] > 0 for f in ("causal", "window", "random"))
    assert counts[("closed form", "impossible")] > 20 and counts[("closed form", "feasible")] > 20
    # the zeros reach the reductions, the decoder, the sub-cells and the witness search
    for kind in ("witness", "row-norm", "zero-not-stochastic", "rank1-signed", "rank1-stochastic-dual",
                 "radon-separation", "decoder"):
        assert counts[("kind", kind)] > 0, kind


@pytest.mark.slow
def test_masked_cells_decided_and_rechecked_many():
    counts = run(7, 1500)
    print(dict(counts))
    assert counts["cells decided"] >= 1400


def test_closed_forms_agree_on_a_causal_cell():
    A = [[F(1), F(0), F(0)], [F(1, 2), F(1, 2), F(0)], [F(1, 3), F(1, 3), F(1, 3)]]
    t = gastinel_kahan(A)  # A^-1 rows (1, 0, 0), (-1, 2, 0), (0, -2, 3): ||A^-1||_inf = 5
    assert t == F(1, 5)
    for eps in (t, t - F(1, 1000)):
        v = decide(A, eps, 2)
        assert v.verdict == ("feasible" if eps >= t else "impossible") and v.recheck()
    B = [[F(1), F(0), F(0)], [F(0), F(1), F(0)]]  # two one-hot rows: eps*_1 = 1 (y = (1/2, -1/2))
    assert two_row_rank1(B) == 1 and two_column_rank1([list(r) for r in zip(*B)]) == 1
    assert decide(B, F(99, 100), 1).verdict == "impossible"
    assert decide(B, F(1), 1).verdict == "feasible"


def test_profiles_of_masked_cells():
    rng = random.Random(11)
    closed = 0
    for _ in range(40):
        form, A, eps, _k = masked_cell(rng)
        m, n = len(A), len(A[0])
        for klass in CLASSES:
            p = profile(A, eps, klass)
            assert p.lower is not None and p.lower <= p.upper <= exact_rank(A)  # B = A is stochastic
            for d in p.decisions:
                cert = json.loads(json.dumps(d.certificate))
                if d.verdict == "feasible":
                    assert d.k == p.upper and is_competitor(A, witness_matrix(cert, m, n), eps, d.k, klass)
                elif d.verdict == "impossible":
                    assert d.k < p.lower and recheck(A, eps, d.k, klass, "impossible", cert)
                truth = closed_form(A, eps, d.k, klass)
                assert truth is None or d.verdict == "outside-scope" or truth == (d.verdict == "feasible")
            closed += p.lower == p.upper
    assert closed >= 76  # of 80 profiles


def test_command_line_reads_zeros(tmp_path, capsys):
    path = tmp_path / "causal.json"
    path.write_text(json.dumps([[1, 0, 0, 0], ["1/2", "1/2", 0, 0], ["1/3", "1/3", "1/3", 0], [0.25, 0.25, 0.25, 0.25]]))
    t = gastinel_kahan([[F(x) for x in row] for row in json.loads(path.read_text())])
    assert t == F(1, 7)  # 1/||A^-1||_inf: the exact threshold eps*_3
    for eps, r in (("1/7", 3), ("1/8", 4)):
        assert main(["oracle", str(path), "--eps", eps, "--profile", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["lower"] == out["upper"] == out["rank"] == r and out["thresholds"]["3"] == "1/7"
    # at the same eps no stochastic B of rank 3 exists (its witness would be an unrestricted one)
    assert main(["oracle", str(path), "--eps", "1/7", "--rank", "3", "--class", "stochastic", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "impossible" and out["recheck"] is True
