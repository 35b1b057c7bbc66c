"""Shared constructions for the tests/test_lower_*.py files (not a test module).

- ``exact_svd_matrix``: M = Q1 diag(d) Q2^T with rational orthogonal Q1, Q2 (products of
  Householder reflections I - 2 v v^T / v^T v with integer v), so sigma(M) = sorted |d| exactly.
- ``softmax_enclosure_of``: the validated enclosure of rowsoftmax(H) for float logits.
- float64 producers of lower certificates (untrusted, like the fast path would be).
- ``add_stray_entries`` / ``assert_strays_reported``: entries of a store's ``records/`` that are
  not folders (a file, a FIFO, a dangling link), and the check that a command named each on one
  line, with exit code 2 and no traceback.
- ``stochastic_rows``, ``competitor_point``: random row-stochastic rational cells, and the point of a
  branch relaxation's variables at a competitor factorisation, for tests/oracle.
- ``sigkill_when``: kill a started command once its journal shows it far enough (resume tests).
- ``record_block``: the part of a reference attention pattern a captured record states.
- ``capture_records``: one captured forward pass of a torch model, for the capture route tests.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
from flint import fmpq, fmpq_mat

from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure


def householder_product(n: int, count: int, rng: np.random.Generator) -> fmpq_mat:
    """Exact rational orthogonal n x n matrix: product of ``count`` Householder reflections."""
    q = fmpq_mat(n, n)
    for i in range(n):
        q[i, i] = 1
    for _ in range(count):
        v = [int(x) for x in rng.integers(-4, 5, size=n)]
        if not any(v):
            v[0] = 1
        vv = sum(x * x for x in v)
        h = fmpq_mat(n, n)
        for i in range(n):
            vi2 = fmpq(2 * v[i], vv)
            for j in range(n):
                h[i, j] = (1 if i == j else 0) - vi2 * v[j]
        q = q * h
    return q


def exact_svd_matrix(a: int, b: int, d: list[Fraction], rng: np.random.Generator, count: int = 2):
    """(M exact fmpq_mat a x b, exact singular values sorted decreasing) with M = Q1 D Q2^T."""
    p = len(d)
    assert p <= min(a, b)
    q1 = householder_product(a, count, rng)
    q2 = householder_product(b, count, rng)
    dm = fmpq_mat(a, b)
    for i, x in enumerate(d):
        dm[i, i] = fmpq(x.numerator, x.denominator)
    m = q1 * dm * q2.transpose()
    sing = sorted((abs(x) for x in d), reverse=True) + [Fraction(0)] * (min(a, b) - p)
    return m, sing


def fmpq_mat_to_float(m: fmpq_mat) -> np.ndarray:
    """Entrywise round-to-nearest (Python's float(Fraction) is correctly rounded)."""
    rows = m.tolist()
    return np.array([[float(Fraction(int(x.p), int(x.q))) for x in row] for row in rows], dtype=np.float64)


def softmax_enclosure_of(h: np.ndarray):
    return rowsoftmax_enclosure(logits_balls(logits=h))


def rowsoftmax_float(h: np.ndarray) -> np.ndarray:
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def float64_decoder(a: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """W = (A_S restricted to columns ...) pseudo-inverse: A_S W ~ I (untrusted float64)."""
    return np.linalg.pinv(a[rows])


def float64_decoder_sum(a: np.ndarray, rows: np.ndarray, w: np.ndarray, eps: float) -> float:
    p = len(rows)
    return float(np.abs(a[rows] @ w - np.eye(p)).sum(axis=1).max() + eps * np.abs(w).sum(axis=1).max())


def float64_frobenius_lower(a: np.ndarray, eps: float) -> int:
    """Largest L with sum_{i >= L} sigma_i^2 > m eps^2 in float64 (0 if none)."""
    m = a.shape[0]
    s = np.linalg.svd(a, compute_uv=False)
    tails = np.cumsum((s ** 2)[::-1])[::-1]  # tails[k] = sum_{i>=k} s_i^2 (0-based)
    ok = np.nonzero(tails > m * eps * eps)[0]
    return int(ok.max()) + 1 if ok.size else 0


def float64_projected(a: np.ndarray, rows: np.ndarray, q: int, eps: float):
    """(W = V_q Sigma_q^{-1} of A_S, float64 lower L) for Lemma P."""
    a_s = a[rows]
    _, s, vt = np.linalg.svd(a_s, full_matrices=False)
    # Only numerically nonzero singular values: on a rank-deficient A_S a BLAS may return an
    # exact 0 (or a denormal) and V_q / 0 is not a decoder. Any W is checked, so this is a choice.
    q = max(1, min(q, int(np.count_nonzero(s > s[0] * 1e-12)) if s.size and s[0] > 0 else 1))
    w = vt[:q].T / s[:q]
    m_ = a_s @ w
    sv = np.linalg.svd(m_, compute_uv=False)
    omega2 = float(np.max(np.sum(w * w, axis=1)))
    tails = np.cumsum((sv ** 2)[::-1])[::-1]
    ok = np.nonzero(tails > len(rows) * eps * eps * omega2)[0]
    return w, (int(ok.max()) + 1 if ok.size else 0)


def exact_enclosure(a: np.ndarray):
    """A zero-radius 'enclosure' of the exact matrix a (binary64 entries read as exact reals):
    lets a test pose an inequality that holds with equality exactly."""
    from flint import arb

    from softrank.validated.softmax_enclosure import SoftmaxEnclosure

    return SoftmaxEnclosure(a_mid=a.copy(), a_rad=np.zeros_like(a), balls=[[arb(x) for x in row] for row in a.tolist()],
                            prec_bits=80)


def hadamard(n: int) -> np.ndarray:
    """Sylvester Hadamard matrix (n a power of 2), entries +-1."""
    h = np.ones((1, 1))
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return h


def block_logits(sizes: list[int], c: float, rng: np.random.Generator | None = None):
    """Logits c within blocks, 0 across (rows and columns permuted by rng if given).
    rowsoftmax is block-constant, so rank(A) <= p = len(sizes); returns (H, labels)."""
    labels = np.concatenate([np.full(b, k) for k, b in enumerate(sizes)])
    h = np.where(labels[:, None] == labels[None, :], c, 0.0)
    if rng is not None:
        pr, pc = rng.permutation(len(labels)), rng.permutation(len(labels))
        return h[pr][:, pc], labels[pr], labels[pc]
    return h, labels, labels


def block_decoder(row_labels: np.ndarray, col_labels: np.ndarray, p: int):
    """S = first row of each block, W = block indicators of the columns: A_S W - I has row k
    l1 norm 2 (N - b_k) a_out,k exactly."""
    rows = np.array([int(np.nonzero(row_labels == k)[0][0]) for k in range(p)], dtype=np.int64)
    w = (col_labels[:, None] == np.arange(p)[None, :]).astype(np.float64)
    return rows, w


def block_rank_is_exact(sizes: list[int], c: float, eps: Fraction) -> bool:
    """Regime in which r_eps(A) = p exactly: B = A has rank <= p, and the decoder of
    ``block_decoder`` satisfies Lemma D in exact arithmetic with a safety factor 2 on exp(c)
    (max_k 2 (N - b_k) / (b_k e^c + N - b_k) + eps < 1)."""
    n = sum(sizes)
    ec = Fraction(math.exp(c)) * Fraction(1, 2)  # e^c > exp(c)_float / 2 certainly
    worst = max(Fraction(2 * (n - b)) / (b * ec + n - b) for b in sizes)
    return worst + eps < 1


STRAY_ENTRIES = ("zz-dangling", "zz-fifo", "zz-file")


def add_stray_entries(store) -> tuple[str, ...]:
    """In ``store/records``, in place of record folders: a plain file, a FIFO (a command that
    opened it would block) and a link to nothing; returns their names."""
    import os
    from pathlib import Path

    records = Path(store) / "records"
    (records / "zz-file").write_text("not a record")
    os.mkfifo(records / "zz-fifo")
    os.symlink(records / "missing", records / "zz-dangling")
    return STRAY_ENTRIES


def assert_strays_reported(returncode: int, stderr: str, names=STRAY_ENTRIES) -> None:
    """Exit code 2, no traceback, and each stray entry named on exactly one stderr line."""
    lines = stderr.strip().splitlines()
    assert returncode == 2 and "Traceback" not in stderr, (returncode, stderr[-2000:])
    for name in names:
        assert sum(name in line for line in lines) == 1, (name, lines)


def demo_store_and_replay(root, operators: int, seed: int, replay: str = "replayed", size: int = 8):
    """ROOT/store: a bracketed demo store of ``operators`` records of size x size; ROOT/REPLAY: its
    validated replay (the inputs of the command-line tests of bad input)."""
    from softrank.findings.replay_job import replay_store
    from softrank.fastpath.demo import build_demo_store

    build_demo_store(root / "store", operators=operators, size=size, seed=seed)
    replay_store(root / "store", root / replay)
    return root


def stochastic_rows(rng, m: int, n: int, random_fix: bool = False) -> list[list[Fraction]]:
    """``m`` random rows of ``n`` rationals on the simplex (weights 0..9 over their sum); an all-zero
    row gets a weight 1 at column 0 (or at ``rng.randrange(n)`` with ``random_fix``)."""
    A = []
    for _ in range(m):
        w = [rng.randint(0, 9) for _ in range(n)]
        if not any(w):
            w[rng.randrange(n) if random_fix else 0] = 1
        A.append([Fraction(x, sum(w)) for x in w])
    return A


def competitor_point(A, z, c) -> tuple[Fraction, dict]:
    """A 3 x 3 cell's competitor B = Z [I | c] (Z 3 x 2, column 2 of B from ``c[(t, 2)]``): its
    distance eps to ``A`` (max row l1) and the point (c, z, w = z c, e = |A - B|) of the branch
    relaxation's variables there."""
    B = [[z[i][0], z[i][1], z[i][0] * c[(0, 2)] + z[i][1] * c[(1, 2)]] for i in range(3)]
    eps = max(sum(abs(a - b) for a, b in zip(ra, rb)) for ra, rb in zip(A, B))
    point = {("c", t, 2): c[(t, 2)] for t in range(2)}
    point.update({("z", i, t): z[i][t] for i in range(3) for t in range(2)})
    point.update({("w", i, t, 2): z[i][t] * c[(t, 2)] for i in range(3) for t in range(2)})
    point.update({("e", i, j): abs(A[i][j] - B[i][j]) for i in range(3) for j in range(3)})
    return eps, point


def capture_records(model, *args, **kwargs):
    """One forward pass of ``model`` under ``softrank.capture``: (the capture, its records, the
    messages of the CaptureWarnings it raised)."""
    import warnings

    import softrank
    import torch
    from softrank.fastpath.capture.dispatch import CaptureWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with softrank.capture(model) as cap, torch.no_grad():
            model(*args, **kwargs)
        recs = cap.records()
    return cap, recs, [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]


def sigkill_when(proc, ready, seconds: float, what: str = "run") -> None:
    """SIGKILL the process ``proc`` once ``ready()`` holds (polled every 2 ms; it must not have
    ended before, nor take over ``seconds``), then check that it died of the signal."""
    import os
    import signal
    import time

    deadline = time.monotonic() + seconds
    while not ready():
        assert proc.poll() is None, f"the {what} ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.002)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def record_block(p: np.ndarray, prov: dict, valid: int) -> np.ndarray:
    """What a captured record with provenance ``prov`` states of the reference probabilities ``p``
    (one head, one batch item): the first ``valid`` rows and columns; of a decoder-self block, the
    rows of its ``positions`` over its ``block_width`` keys, each row renormalised."""
    keep = np.arange(valid)
    p = p[np.ix_(keep, keep)]
    if prov["attention"] == "decoder-self-block":
        start, stop = prov["positions"]
        p = p[start:stop, :prov["block_width"]]
        p = p / p.sum(axis=1, keepdims=True)
    return p
