"""Decoder certificates (Lemma D, proofs/lemma_D_contractive_decoder.md; untrusted, float64):
rows S (p of them) and W (N x p) with ``||A_S W - I_p||_inf + eps max_j ||W_j||_1 <= 1 - MARGIN``
give ``r_eps(A) >= p`` once the validated replay confirms them.

For a given S the best W is a linear program (HiGHS).  ``decoder_certificate`` finds S by a cheap
greedy first-fit with exact right inverses (from the set found at the next larger eps and from one
row), then a binary search over prefixes of the pivoted-QR row order (a prefix of a valid set is
valid: drop rows of S and the matching columns of W), then greedy growth with the LP over further
candidate rows (``GROW_TRIES``, ``GROW_PATIENCE``; with ``lead``, the rows farthest from the set's
row span first: ``residual_order``).  The LP runs only while p^2 N <= ``LP_WORK``.
``grow_decoder_smooth`` grows a valid set past the LP's reach, with W from a smoothed value (in
fast mode each fit stops once its float64 value is <= ``ENOUGH`` and starts from the bordered
extension of the previous W: ``bordered_start``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from softrank.fastpath.lower import decoder_greedy as greedy
from softrank.fastpath.lower.decoder_oracle import set_oracle
from softrank.fastpath.lower.decoder_smooth import ENOUGH_EVERY, SMOOTH_ITERS, SMOOTH_STAGES, smooth_decoder_w  # noqa: F401
from softrank.fastpath.float64 import MARGIN, decoder_value
from softrank.fastpath.lower.certificates import Certificate
from softrank.fastpath.operator_cache import OperatorCache

LP_MAXITER = 20000  # iterations per decoder LP (a stalled LP counts as "no certificate")
LP_TIME_LIMIT = 5.0  # seconds, a guard only
LP_WORK = 16 * 16 * 256  # decoder LPs only for p^2 N <= LP_WORK (p <= 16 at N = 256; ~1 s at p = 20, N = 256)
LP_MAX_COLS = 256  # decoder LP: W supported on at most this many columns (the largest of A_S)
GROW_TRIES = 20  # step 3 of decoder_certificate: candidate rows tried with the LP ...
GROW_PATIENCE = 5  # ... stopping after this many failures in a row
GIVE_UP = (1.08, 1.02)  # a candidate's fit stops after stage 1 / 2 above these (MiniLM: as 1.15 / 1.05 but one L)
GIVE_UP_EARLY = ((50, 1.55), (100, 1.3), (150, 1.2))  # ... and at these stage-1 iterations above these (MiniLM: -4.5% CPU)
POLISH_ENOUGH = 0.9  # fast mode: the polish of the start W stops at this value (MiniLM: -3.4% CPU, 2 L up, none down)
ENOUGH = 0.99  # fast mode: a candidate's smoothed fit stops once its float64 value is <= this
STALL = (30, 1e-3)  # fast mode: a CG stage stops once its value fell by less than 1e-3 in 30 iterations
SMOOTH_TRIES = 16  # grow_decoder_smooth: candidate rows tried ...
SMOOTH_PATIENCE = 4  # ... stopping after this many failures in a row
FAST_TRIES = 24  # fast mode's candidates (MiniLM panel: 16 stopped most growths at eps 0.15; 24: L +0.5%, CPU +4%)
ORACLE_MAX_P = 20  # smoothed growth: candidate sets up to this size are first bracketed by the set oracle
FAST_SCREEN_MAX_P = 16  # ... in fast mode up to this size (screens of 17-20 rows: no bracket changed, 5% of CPU)
SCREEN_SIZES = (4, 8)  # ... larger ones by subsets of these sizes (the new row and the rows most like it)
LP_METHOD = "highs-ipm"  # interior point + crossover: 4-7x faster than dual simplex at p >= 20

def decoder_lp(op: OperatorCache, rows: np.ndarray, eps: float, max_cols: int | None = None) -> tuple[float, np.ndarray | None]:
    """Best W for rows S by a linear program:
    min t + eps w  s.t.  |(A_S W - I)_ik| summed over k <= t (each i),  sum_k |W_jk| <= w (each j).
    W is supported on the columns where A_S is largest (at most ``max_cols``); any W is valid,
    the restriction only makes the LP smaller.  Returns (float64 value, W (N x p))."""
    A = op.A
    rows = np.asarray(rows, dtype=np.int64)
    p = len(rows)
    n = op.N
    if max_cols is None:
        max_cols = LP_MAX_COLS
    peak = A[rows].max(axis=0)
    cols = np.arange(n) if max_cols >= n else np.sort(np.argsort(-peak, kind="stable")[:max_cols])
    c = len(cols)
    M = A[np.ix_(rows, cols)]
    nW, nR = c * p, p * p
    # variables: W+ (c p), W- (c p), R+ (p p), R- (p p), t, w ; W[j, k] at j p + k; R[i, k] at i p + k
    Mk = sp.kron(sp.csr_matrix(M), sp.identity(p), format="csr")  # R = M W  (row-major)
    Ir = sp.identity(nR, format="csr")
    zero2 = sp.csr_matrix((nR, 2))
    a_eq = sp.hstack([Mk, -Mk, -Ir, Ir, zero2], format="csr")
    b_eq = np.eye(p).ravel()
    Sr = sp.kron(sp.identity(p), np.ones((1, p)), format="csr")
    Sw = sp.kron(sp.identity(c), np.ones((1, p)), format="csr")
    a1 = sp.hstack([sp.csr_matrix((p, 2 * nW)), Sr, Sr, -np.ones((p, 1)), sp.csr_matrix((p, 1))], format="csr")
    a2 = sp.hstack([Sw, Sw, sp.csr_matrix((c, 2 * nR)), sp.csr_matrix((c, 1)), -np.ones((c, 1))], format="csr")
    a_ub = sp.vstack([a1, a2], format="csr")
    cost = np.zeros(2 * nW + 2 * nR + 2)
    cost[-2], cost[-1] = 1.0, eps
    op.lp_solves += 1
    res = linprog(cost, A_ub=a_ub, b_ub=np.zeros(p + c), A_eq=a_eq, b_eq=b_eq, bounds=(0, None), method=LP_METHOD,
                  options={"maxiter": LP_MAXITER, "time_limit": LP_TIME_LIMIT})
    if res.status != 0 or res.x is None:
        return float("inf"), None
    x = res.x
    W = np.zeros((n, p))
    W[cols] = (x[:nW] - x[nW:2 * nW]).reshape(c, p)
    return decoder_value(A, rows, W, eps), W


def _quick_decoder(op: OperatorCache, rows: np.ndarray, eps: float):
    """Cheap right inverses (A_S W = I exactly): the pseudoinverse of A_S, and the inverse of the
    square block A[S, T] on the rows' peak columns T; the better of the two."""
    A = op.A
    rows = np.asarray(rows, dtype=np.int64)
    best_v, best_W = float("inf"), None
    try:
        W = np.linalg.pinv(A[rows])
        best_v, best_W = decoder_value(A, rows, W, eps), W
    except np.linalg.LinAlgError:
        pass
    cols = A[rows].argmax(axis=1)
    if len(set(cols.tolist())) == len(rows):
        try:
            inv = np.linalg.inv(A[np.ix_(rows, cols)])
            W = np.zeros((op.N, len(rows)))
            W[cols] = inv
            v = decoder_value(A, rows, W, eps)
            if v < best_v:
                best_v, best_W = v, W
        except np.linalg.LinAlgError:
            pass
    return best_v, best_W


def _p_for_work(work: int, n: int) -> int:
    """Largest p with p^2 n <= work."""
    return int(np.sqrt(work / max(n, 1)))


def _ok(value: float) -> bool:
    return value <= 1.0 - MARGIN


def row_orders(op: OperatorCache) -> list[np.ndarray]:
    """Candidate row orders: pivoted QR of A^T, and peaked rows with distinct peak columns first."""
    A = op.A
    orders = [np.asarray(op.rpqr, dtype=np.int64)]
    peak = A.max(axis=1)
    arg = A.argmax(axis=1)
    by_peak = np.argsort(-peak, kind="stable")
    seen, first, rest = set(), [], []
    for i in by_peak:
        (rest if arg[i] in seen else first).append(int(i))
        seen.add(int(arg[i]))
    orders.append(np.array(first + rest, dtype=np.int64))
    return orders


def residual_order(A: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Rows not in ``rows``, by decreasing l1 norm of their part outside the row span of A_S (the
    least-squares residual): a row far from the span is the likeliest to extend the set."""
    rows = np.asarray(rows, dtype=np.int64)
    Q, _ = np.linalg.qr(A[rows].T)
    score = np.abs(A - (A @ Q) @ Q.T).sum(axis=1)
    score[rows] = -np.inf
    return np.argsort(-score, kind="stable")[:A.shape[0] - len(rows)]


def _grow(orders, rows, W, val, fit, stop_at: int, tries: int, patience: int, lead=None):
    """Greedy growth of a valid decoder set: candidate rows in ``orders``; ``fit(cand, W)`` returns
    (float64 value, W for cand) and a candidate is kept when the value is <= 1 - MARGIN.  At most
    ``tries`` candidates, stopping after ``patience`` failures in a row or at ``stop_at`` rows.
    ``lead(rows)``: an order tried before ``orders``, computed again after each row added (a row
    that failed is not tried again: a set containing a set with no decoder has none either).
    Returns (rows, W, value)."""
    member = set(rows.tolist())
    n_try = fails = 0
    while True:
        added = False
        for order in ([lead(rows)] if lead is not None else []) + list(orders):
            for i in order:
                if len(rows) >= stop_at or n_try >= tries or fails >= patience:
                    return rows, W, val
                if int(i) in member:
                    continue
                member.add(int(i))
                n_try += 1
                cand = np.append(rows, int(i))
                v, Wc = fit(cand, W)
                if _ok(v):
                    rows, W, val, fails, added = cand, Wc, v, 0, True
                    break
                fails += 1
            if added:
                break
        if not added:
            return rows, W, val


def _start_sets(op: OperatorCache, eps: float, start: Certificate | None) -> list:
    """Sets the greedy starts from: a valid ``start`` (from a larger eps), then one row.
    p = 1 always works: any row, W = ones (A_S W = 1, eps * 1 < 1)."""
    A = op.A
    starts = [(np.array([int(A.max(axis=1).argmax())], dtype=np.int64), np.ones((op.N, 1)))]
    if start is not None and start.rows is not None and start.lower > 1:
        s_rows, s_W = np.asarray(start.rows, dtype=np.int64), np.asarray(start.W, dtype=np.float64)
        if _ok(decoder_value(A, s_rows, s_W, eps)):  # always, for a start valid at a larger eps
            starts.insert(0, (s_rows, s_W))
    return starts


def _first_fit(op: OperatorCache, starts, orders, eps: float, p_hi: int):
    """Step 1: cheap greedy first-fit with exact right inverses (no LP), from every start set
    (the greedy is path dependent); the largest set found as (rows, W, value)."""
    best = None
    for rows, W in starts:
        found = greedy.first_fit(op.A, op.peaks, rows, W, orders, eps, p_hi)
        if best is None or len(found[0]) > len(best[0]):
            best = found
    return best


def _prefix_search(order, rows, W, val, check, p_hi: int):
    """Step 2: binary search over prefixes of ``order`` (the pivoted-QR order), only above the
    current size; the first probe is just above it (cheap to fail)."""
    a, b = len(rows), min(p_hi, len(order))
    first = True
    while a < b:
        mid = (a + b + 1) // 2 if not first else a + 1
        first = False
        cand = np.asarray(order[:mid], dtype=np.int64)
        v, Wc = check(cand)
        if _ok(v):
            a = mid
            rows, W, val = cand, Wc, v
        else:
            b = mid - 1
    return rows, W, val


def decoder_certificate(op: OperatorCache, eps: float, p_hi: int, start: Certificate | None = None,
                        lp_tries: int = GROW_TRIES, lp_patience: int = GROW_PATIENCE,
                        lp_max_p: int | None = None, lead: bool = False) -> Certificate:
    """The largest decoder certificate found at ``eps`` with p <= p_hi (p_hi: a known upper end).

    1. greedy first-fit over the row orders with cheap exact right inverses (no LP);
    2. binary search over prefixes of the pivoted-QR order above the greedy size, W by LP;
    3. greedy growth with the LP over further candidate rows (pivoted-QR order, then peaked rows):
       at most ``lp_tries`` candidates, stopping after ``lp_patience`` failures in a row.
    The LP is used only for sets of at most ``lp_max_p`` rows (its size grows as p^2)."""
    p_hi = max(1, min(p_hi, op.p))
    if lp_max_p is None:
        lp_max_p = max(8, _p_for_work(LP_WORK, op.N))
    starts = _start_sets(op, eps, start)
    orders = row_orders(op)
    rows, W, val = _first_fit(op, starts, orders, eps, p_hi)

    from_oracle: set[frozenset] = set()

    def check(cand):
        v, Wc = _quick_decoder(op, cand, eps)
        if _ok(v) or len(cand) > lp_max_p:
            return v, Wc
        got = set_oracle(op).decide(cand, eps)
        if got is None:
            got = decoder_lp(op, cand, eps)
        elif _ok(got[0]):
            from_oracle.add(frozenset(cand.tolist()))
        return got if got[0] < v else (v, Wc)

    rows, W, val = _prefix_search(orders[0], rows, W, val, check, p_hi)
    rows, W, val = _grow(orders, rows, W, val, lambda cand, _W: check(cand), min(p_hi, lp_max_p),
                         lp_tries, lp_patience, lead=(lambda r: residual_order(op.A, r)) if lead else None)
    return Certificate("decoder", len(rows), rows=rows, W=W, margin=1.0 - val,
                       lp_pending=frozenset(rows.tolist()) in from_oracle)


def with_lp_decoder(op: OperatorCache, cert: Certificate, eps: float) -> Certificate:
    """The certificate with W from the decoder LP at ``eps`` when its W came from the set oracle
    (a valid but not optimal W), so that growth starts from the LP's W."""
    if not cert.lp_pending:
        return cert
    v, W = decoder_lp(op, cert.rows, eps)
    if not _ok(v) or v >= 1.0 - cert.margin:
        return cert
    return Certificate("decoder", cert.lower, rows=cert.rows, W=W, margin=1.0 - v)


# ----------------------------------------------------------------------------------------------
# decoder growth beyond the LP's reach: smoothed value, nonlinear conjugate gradients
# ----------------------------------------------------------------------------------------------


def bordered_start(M: np.ndarray, W_prev: np.ndarray) -> np.ndarray | None:
    """A start for the rows M (the last one new) from the previous W: w with M_old w = 0 and
    M_new w = 1 (least norm), W = [W_prev - w (M_new W_prev), w]: the old rows' residuals are kept,
    the new row's and new column's are zero."""
    try:
        w = np.linalg.pinv(M)[:, -1]
    except np.linalg.LinAlgError:
        return None
    return np.hstack([W_prev - np.outer(w, M[-1] @ W_prev), w[:, None]])


def _no_decoder(op: OperatorCache, cand: np.ndarray, eps: float) -> bool:
    """True when eps*(cand) <= eps is shown by the set oracle: on the whole set up to
    ``ORACLE_MAX_P`` rows, else on subsets of the new (last) row with the rows most like it
    (eps* of a subset bounds eps* of the set from above)."""
    if len(cand) <= ORACLE_MAX_P:
        return set_oracle(op).bracket(cand, eps).ub <= eps
    A, last = op.A, cand[-1]
    near = cand[:-1][np.argsort(-np.minimum(A[cand[:-1]], A[last]).sum(axis=1), kind="stable")]
    return any(set_oracle(op).bracket(np.append(near[:size - 1], last), eps).ub <= eps for size in SCREEN_SIZES)


def growth_options(fast: bool) -> dict:
    """``grow_decoder_smooth``'s keyword arguments in the bracket's fast mode and in basic mode."""
    return ({"give_up": GIVE_UP, "give_up_early": GIVE_UP_EARLY, "subset_screen": False, "stall": STALL, "enough": ENOUGH,
             "polish_enough": POLISH_ENOUGH, "bordered": True, "lp_start": False, "screen_max_p": FAST_SCREEN_MAX_P,
             "tries": FAST_TRIES} if fast else
            {"give_up": (), "give_up_early": (), "subset_screen": True, "stall": None, "enough": None, "polish_enough": None,
             "bordered": False, "lp_start": True, "screen_max_p": None, "tries": SMOOTH_TRIES})


def grow_decoder_smooth(op: OperatorCache, cert: Certificate, eps: float, goal: int,
                        tries: int = SMOOTH_TRIES, patience: int = SMOOTH_PATIENCE, give_up=(),
                        subset_screen: bool = True, stall: tuple[int, float] | None = None,
                        enough: float | None = None, bordered: bool = False, lp_start: bool = True,
                        screen_max_p: int | None = None, give_up_early=(), polish_enough: float | None = None) -> Certificate:
    """From a valid decoder certificate, add rows (pivoted-QR order, then peaked rows) with W from
    ``smooth_decoder_w`` (the previous W plus a zero column as the start) while the float64 value
    stays <= 1 - MARGIN, until ``goal`` rows, ``tries`` candidates or ``patience`` failures in a
    row (``give_up``, ``give_up_early``, ``stall``, ``enough``: see ``smooth_decoder_w``; the start
    W's polish stops at ``polish_enough``).  A
    candidate set is first screened by the set oracle (``_no_decoder``) when it has at most
    ``screen_max_p`` rows (default ``ORACLE_MAX_P``); larger sets only when ``subset_screen`` (on
    MiniLM heads those screens rejected about one candidate in twenty and cost more than the failed
    fits they saved).  ``lp_start``: a start W from the set oracle is first replaced by the decoder
    LP's (``with_lp_decoder``; without it the smoothed fit alone polishes it: on MiniLM heads the
    LP at p = 16 cost 0.7 s and gave the same sets).  Returns the input certificate when nothing is
    added."""
    A = op.A
    rows = np.asarray(cert.rows, dtype=np.int64)
    W = np.asarray(cert.W, dtype=np.float64)
    val = decoder_value(A, rows, W, eps)
    if not _ok(val):
        return cert
    start = {"W": None}  # the start W polished on first use: it leaves room for the next rows
    screen_max_p = ORACLE_MAX_P if screen_max_p is None else screen_max_p

    def fit(cand, W_prev):
        if (subset_screen or len(cand) <= screen_max_p) and _no_decoder(op, cand, eps):
            return np.inf, None  # eps*(S) <= eps: no W works (the smoothed fit would fail too)
        if start["W"] is None:
            base = with_lp_decoder(op, cert, eps) if lp_start else cert
            W0 = np.asarray(base.W, dtype=np.float64)
            Wp = smooth_decoder_w(A[rows], W0, eps, stall=stall, enough=polish_enough)
            start["W"] = Wp if decoder_value(A, rows, Wp, eps) < decoder_value(A, rows, W0, eps) else W0
        if W_prev is W:
            W_prev = start["W"]
        W0 = np.hstack([W_prev, np.zeros((op.N, 1))])
        if bordered:
            Wb = bordered_start(A[cand], W_prev)
            if Wb is not None and decoder_value(A, cand, Wb, eps) < decoder_value(A, cand, W0, eps):
                W0 = Wb
        Wc = smooth_decoder_w(A[cand], W0, eps, give_up=give_up, stall=stall, enough=enough, give_up_early=give_up_early)
        return decoder_value(A, cand, Wc, eps), Wc

    rows, W, val = _grow(row_orders(op), rows, W, val, fit, goal, tries, patience)
    if len(rows) == cert.lower:
        return cert
    return Certificate("decoder", len(rows), rows=rows, W=W, margin=1.0 - val)
