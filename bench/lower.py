"""``softrank bench lower``: time of validated versus plain float64 checking of lower certificates.

For m = N in (256, 512) (``--quick``: 64, 128), one attention-like operator and three lower
certificates as a float64 pipeline would write them:

- ``decoder`` (Lemma D): 32 rows S, and N/4 rows S, W = pinv(A_S);
- ``frobenius`` (Lemma F): the float64 lower end;
- ``projected`` (Lemma P): every other row, W = V_q Sigma_q^{-1} with q = 64.

Each is checked three ways: plain float64 (no rounding bound; what a research pipeline runs),
the binary64-bound route (proven a-priori bounds, the default), and the Arb route (``--strict``).
Medians over ``--repeats`` runs, measured in this one run, in alternation; compare the ratios.
The Arb enclosure of A (exp in balls; shared by every certificate and tolerance of a record, and
by the upper witness) is timed separately.
"""

from __future__ import annotations

import time
from fractions import Fraction

import numpy as np
from threadpoolctl import threadpool_limits

from softrank.bench.upper import interleaved_medians
from softrank.fastpath.float64 import decoder_value, rowsoftmax64
from softrank.validated.contractive_decoder import check_contractive_decoder
from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure

EPS = 0.1


# -- plain float64 checks (no rounding bounds) --------------------------------------------------

def float64_decoder(a_hat, rows, w, eps) -> bool:
    return decoder_value(a_hat, rows, w, eps) < 1


def float64_tail_lower(mat, threshold) -> int:
    s = np.linalg.svd(mat, compute_uv=False)
    tails = np.cumsum((s ** 2)[::-1])[::-1]
    ok = np.nonzero(tails > threshold)[0]
    return int(ok.max()) + 1 if ok.size else 0


def float64_frobenius(a_hat, lower, eps) -> bool:
    return float64_tail_lower(a_hat, a_hat.shape[0] * eps * eps) >= lower


def float64_projected(a_hat, rows, w, lower, eps) -> bool:
    omega2 = float(np.max(np.sum(w * w, axis=1)))
    return float64_tail_lower(a_hat[rows] @ w, len(rows) * eps * eps * omega2) >= lower


def _operator(n: int, rng):
    h = rng.normal(size=(n, n)) * 1.5 + np.eye(n) * 10.0
    return h, rowsoftmax64(h)


def _cases(n: int, a_hat, enc) -> list[tuple]:
    """(name, plain float64 check, binary64-bound check, Arb check) for the four certificates."""
    eps = Fraction(EPS)
    rows_d = np.arange(0, n, n // 32, dtype=np.int64)[:32]
    rows_d4 = np.arange(0, n, 4, dtype=np.int64)
    l_f = float64_tail_lower(a_hat, n * EPS * EPS)
    rows_p = np.arange(0, n, 2, dtype=np.int64)
    _, s_p, vt_p = np.linalg.svd(a_hat[rows_p], full_matrices=False)
    q = 64
    w_p = vt_p[:q].T / s_p[:q]
    l_p = float64_tail_lower(a_hat[rows_p] @ w_p, len(rows_p) * EPS * EPS * float(np.max(np.sum(w_p * w_p, axis=1))))
    cases = []
    for rows in (rows_d, rows_d4):
        w = np.linalg.pinv(a_hat[rows])
        cases.append((f"decoder p={len(rows)}",
                      lambda rows=rows, w=w: float64_decoder(a_hat, rows, w, EPS),
                      lambda rows=rows, w=w: check_contractive_decoder(enc, eps, rows, w),
                      lambda rows=rows, w=w: check_contractive_decoder(enc, eps, rows, w, strict=True)))
    cases.append((f"frobenius L={l_f}",
                  lambda: float64_frobenius(a_hat, l_f, EPS),
                  lambda: check_frobenius_tail(enc, eps, l_f),
                  lambda: check_frobenius_tail(enc, eps, l_f, strict=True)))
    cases.append((f"projected L={l_p} q={q}",
                  lambda: float64_projected(a_hat, rows_p, w_p, l_p, EPS),
                  lambda: check_projected_tail(enc, eps, l_p, rows_p, w_p),
                  lambda: check_projected_tail(enc, eps, l_p, rows_p, w_p, strict=True)))
    return cases


def main(args) -> int:
    with threadpool_limits(limits=1):
        return _main(args)


def _main(args) -> int:
    sizes = (64, 128) if args.quick else (256, 512)
    repeats = args.repeats
    rng = np.random.default_rng(0)
    print(f"softrank bench lower: validated vs plain float64 lower-certificate checks, eps = {EPS}, "
          f"median of {repeats} (1 BLAS thread)")
    print(f"{'N':>5} {'certificate':<22} {'float64 ms':>11} {'binary64 ms':>12} {'ratio':>7} {'arb ms':>9} {'ratio':>8}  outcome")
    worst = 0.0
    for n in sizes:
        h, a_hat = _operator(n, rng)
        t = time.perf_counter()
        enc = rowsoftmax_enclosure(logits_balls(logits=h))
        t_enc = time.perf_counter() - t
        tot = [0.0, 0.0, 0.0]
        for name, f64, b64, arb_fn in _cases(n, a_hat, enc):
            outcome = b64()
            t_f, t_b, t_a = interleaved_medians([f64, b64, arb_fn], repeats)
            tot = [tot[0] + t_f, tot[1] + t_b, tot[2] + t_a]
            worst = max(worst, t_b / t_f)
            print(f"{n:>5} {name:<22} {1e3 * t_f:>11.2f} {1e3 * t_b:>12.2f} {t_b / t_f:>6.2f}x {1e3 * t_a:>9.1f} "
                  f"{t_a / t_f:>7.1f}x  {outcome.outcome.value} ({outcome.route})")
        print(f"{n:>5} {'all four':<22} {1e3 * tot[0]:>11.2f} {1e3 * tot[1]:>12.2f} {tot[1] / tot[0]:>6.2f}x "
              f"{1e3 * tot[2]:>9.1f} {tot[2] / tot[0]:>7.1f}x")
        print(f"{n:>5} (Arb enclosure of A, once per record: {1e3 * t_enc:.0f} ms)")
    print(f"worst binary64-bound / float64 ratio: {worst:.2f}x (target <= 5x)")
    return 0
