"""Float64 brackets [L, U] of ``r_eps(A)`` and verdicts at rank budgets.

``bracket_matrix(A, eps_list)`` runs the upper constructions (``fastpath/upper/``) and the lower certificates
(``fastpath/lower/certificates.py``, ``fastpath/lower/decoder.py``) on one operator and returns, per eps, the best
checked witness, the certificates that achieve the largest lower end, and the baseline (truncated
SVD upper, Frobenius-tail lower) on the same operator.  Records and stores are bracketed by
``fastpath/bracket/store.py``.

The algorithm is a sequence of phases over a ``BracketState`` (tolerances from the largest eps
down: a decoder valid at eps is valid at every smaller eps, a witness valid at eps at every
larger one):

1. ``scan_baseline``         SVD and truncated-SVD scan (the baseline upper end);
2. ``tail_certificates``     Frobenius (the baseline lower end) and projected tails;
3. ``decoder_certificates``  decoders, each eps started from the set of the next larger eps (fast
                             mode: LP growth tries the rows farthest from the set's span first);
4. ``search_constructions``  each later construction's least rank in the range left open;
5. ``minimax_witnesses``     (fast mode) the budgeted smoothed-minimax descent from the best
                             witness (``fastpath/upper/minimax.py``), smallest eps first, on the
                             brackets ``worth_descent`` picks;
   ``refine_witnesses``      (basic mode, instead) alternating-l1 one-rank steps down to
                             ``L1_MAX_RANK``, large steps above;
6. ``grow_decoders``         decoder growth past the LP's reach, where it can resolve the bracket
                             (fast mode: also where it cannot, on toward U / ``GROWTH_RATIO``, up to
                             ``growth_cap`` rows, each fit's stages stopped early by
                             ``decoder.growth_options``: early give-ups, stalls, bordered starts);
   ``resolve_witnesses``     (fast mode) a second descent where the bracket is still unresolved;
7. ``share_witnesses``       a witness checked at a smaller eps serves a larger one.

Modes: ``fast`` (default) searches each later construction only below the best rank found so
far (rpqr, cpqr) and then runs the minimax descent; ``basic`` is the bracket without the
descent (alternating l1 among the constructions and its refinement steps instead: cheaper, looser
upper ends; ``softrank bench bracket --compare`` measures the trade); ``full`` finds every
construction's own least rank (for the construction study; slower) and keeps, per construction,
the ranks it was tried at and missed (its failed attempts).
"""

from __future__ import annotations

import dataclasses
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from softrank.fastpath.lower import decoder as dec
from softrank.fastpath.lower import certificates as low
from softrank.fastpath.operator_cache import OperatorCache
from softrank.fastpath.upper import minimax
from softrank.fastpath.upper.rank_search import MARGIN, SearchLog, Witness, search_ranks, tsvd_scan
from softrank.fastpath.upper.refine import descend, shrink

DEFAULT_EPS = (0.15, 0.25, 0.35)
BUDGETS = (8, 16, 32)
FAST_ORDER = ("rpqr", "cpqr")  # fast mode: the descent starts from their best (rwsvd: 7% of CPU, no gain)
BASIC_ORDER = ("rpqr", "cpqr", "rwsvd", "altl1")
ALL_CONSTRUCTIONS = ("tsvd", "rwsvd", "altl1", "cpqr", "rpqr", "reprows")
L1_CONSTRUCTIONS = ("altl1", "reprows")  # l1 fits: cost ~ m N k^2 per sweep
L1_FULL_CAP = 96  # full mode: the l1 constructions are searched up to this rank (cost ~ k^2)
L1_MAX_RANK = 48  # basic (and fast) mode: alternating l1 / representative rows only below this rank
MODES = ("fast", "basic", "full")
MINIMAX_CLOSE = 2  # fast mode: the descent runs on a bracket this narrow (it may close) ...
MINIMAX_RATIO = 1.25  # ... or one whose U/L is above this
GROWTH_RATIO = 1.6  # fast mode: decoder growth goes on past the resolving size up to U / GROWTH_RATIO ...
GROWTH_WORK = 64 * 64 * 256  # ... and up to p rows with p^2 N <= this: a smoothed fit costs ~p^2 N per
#                              iteration (docs/results/2026-12-04-bracket-quality.md: the trade measured)
MINIMAX_BUDGET = 3000  # fast mode: smoothed-minimax budget units per tolerance (iterations at rank <= 32)
MINIMAX_RESOLVE_BUDGET = 3000  # ... and as much again where the bracket is still unresolved after growth


def resolved(lower: int, upper: int | None, p: int) -> bool:
    """A bracket is resolved (the criterion of the results table in README.md) when U <= 2L, or
    U - L <= 2, or U - L <= p/10 (p = min(m, N))."""
    if upper is None:
        return False
    return upper <= 2 * lower or upper - lower <= 2 or (upper - lower) * 10 <= p


def verdict(k: int, lower: int, upper: int | None) -> str:
    if upper is not None and upper <= k:
        return "feasible"
    if lower > k:
        return "impossible"
    return "unresolved"


@dataclass
class EpsBracket:
    eps: float
    witness: Witness | None
    certificates: list[low.Certificate]
    lower: int
    upper: int | None
    baseline_lower: int  # Frobenius tail (at least the trivial 1: ||A||_inf = 1 > eps)
    baseline_upper: int | None  # truncated SVD
    ranks: dict[str, int | None] = field(default_factory=dict)  # construction -> least rank found
    lower_by_kind: dict[str, int] = field(default_factory=dict)
    failed: dict[str, list[int]] = field(default_factory=dict)  # full mode: construction -> missed ranks

    @property
    def verdicts(self) -> dict[str, str]:
        return {str(k): verdict(k, self.lower, self.upper) for k in BUDGETS}


class Timer:
    def __init__(self):
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


@dataclass
class BracketState:
    """Per-operator state of the phases, every dict keyed by eps."""

    op: OperatorCache
    eps_list: list[float]  # largest first
    mode: str
    timer: Timer
    best: dict[float, Witness | None] = field(default_factory=dict)  # best checked witness
    baseline_upper: dict[float, Witness | None] = field(default_factory=dict)  # truncated SVD
    ranks: dict[float, dict[str, int | None]] = field(default_factory=dict)  # construction -> rank
    certs: dict[float, list[low.Certificate]] = field(default_factory=dict)
    baseline_lower: dict[float, int] = field(default_factory=dict)  # Frobenius tail, at least 1
    lower: dict[float, int] = field(default_factory=dict)  # largest certified lower end
    # full mode: construction -> the ranks >= 1 it was evaluated at whose float64 error missed eps - MARGIN
    failed: dict[float, dict[str, list[int]]] = field(default_factory=dict)

    def upper(self, e: float) -> int:
        """Rank of the best witness at eps e, or p when there is none."""
        w = self.best[e]
        return w.rank if w is not None else self.op.p

    def add_certificate(self, e: float, c: low.Certificate) -> None:
        """Keep ``c`` and raise the lower end to its L."""
        self.certs[e].append(c)
        self.lower[e] = c.lower


def scan_baseline(s: BracketState) -> None:
    with s.timer("svd"):
        s.op.svd  # noqa: B018  (shared by tsvd, rwsvd, frobenius, projected)
    with s.timer("tsvd"):
        s.baseline_upper = tsvd_scan(s.op, s.eps_list)
    s.best = dict(s.baseline_upper)
    s.ranks = {e: {"tsvd": None if w is None else w.rank} for e, w in s.baseline_upper.items()}
    if s.mode == "full":  # the scan evaluates every rank below the one it stops at
        s.failed = {e: {"tsvd": list(range(1, s.op.p + 1 if w is None else w.rank))}
                    for e, w in s.baseline_upper.items()}


def tail_certificates(s: BracketState) -> None:
    s.certs = {e: [] for e in s.eps_list}
    for name, make in (("frobenius", low.frobenius_certificate), ("projected", low.projected_certificate)):
        with s.timer(name):
            for e in s.eps_list:
                c = make(s.op, e)
                if c is not None:
                    s.certs[e].append(c)
        if name == "frobenius":
            s.baseline_lower = {e: max([1] + [c.lower for c in s.certs[e]]) for e in s.eps_list}


def decoder_certificates(s: BracketState) -> None:
    with s.timer("decoder"):
        start = None
        for e in s.eps_list:  # largest eps first: its set stays valid at smaller eps
            c = dec.decoder_certificate(s.op, e, s.upper(e), start=start, lead=s.mode == "fast")
            s.certs[e].append(c)
            start = c
    s.lower = {e: max(c.lower for c in s.certs[e]) for e in s.eps_list}


def _search_range(s: BracketState, name: str, e: float) -> tuple[int, int]:
    """Ranks [lo, hi] where construction ``name`` is searched at eps e."""
    cur = s.upper(e)
    lo = max(s.lower[e], 1)
    hi = cur - 1 if s.mode != "full" else s.op.p
    if s.mode != "full" and name in L1_CONSTRUCTIONS and cur > L1_MAX_RANK:
        hi = -1  # hopeless range for the l1 fits: skip this eps
    if s.mode == "full" and name in L1_CONSTRUCTIONS:
        hi = min(hi, L1_FULL_CAP)
    return lo, hi


def search_constructions(s: BracketState, constructions=None) -> None:
    default = {"fast": FAST_ORDER, "basic": BASIC_ORDER}.get(s.mode, ALL_CONSTRUCTIONS)
    names = [n for n in (constructions or default) if n != "tsvd"]
    if s.mode != "full":  # the l1 fits cost ~ m N k^2 per sweep: only where the ranks are moderate
        moderate = min(s.upper(e) for e in s.eps_list) <= L1_MAX_RANK
        names = [n for n in names if n not in L1_CONSTRUCTIONS or moderate]
    for name in names:
        ranges = {e: _search_range(s, name, e) for e in s.eps_list}
        log = SearchLog()
        with s.timer(name):
            found = search_ranks(s.op, name, s.eps_list, {e: r[0] for e, r in ranges.items()},
                                 {e: r[1] for e, r in ranges.items()}, log=log)
        for e in s.eps_list:
            w = found.get(e)
            s.ranks[e][name] = None if w is None else w.rank
            if s.mode == "full":
                s.failed[e][name] = sorted(k for k, err in log.evaluations.items() if k >= 1 and err > e - MARGIN)
            if w is not None and (s.best[e] is None or w.rank < s.best[e].rank):
                s.best[e] = w


def refine_witnesses(s: BracketState) -> None:
    """Fast mode: alternating-l1 steps down from the best witnesses."""
    with s.timer("altl1"):
        for e in s.eps_list:  # continuation: drop components of the best witness, refit
            w = s.best[e]
            if w is not None and s.lower[e] < w.rank <= L1_MAX_RANK:
                s.best[e] = descend(s.op, w, e - MARGIN, s.lower[e])
    with s.timer("altl1"):
        asc = sorted(s.eps_list)  # high ranks: large steps down, smallest eps first (its witness
        for j, e in enumerate(asc):  # holds at every larger eps and starts the next search)
            w = min((s.best[x] for x in asc[:j + 1] if s.best[x] is not None and s.best[x].error <= e - MARGIN),
                    key=lambda w: w.rank, default=None)
            if w is not None and w.rank > L1_MAX_RANK and 2 * s.lower[e] < w.rank:
                s.best[e] = shrink(s.op, w, e - MARGIN, s.lower[e])


def worth_descent(lower: int, upper: int) -> bool:
    """A bracket gets the minimax descent when it is open and either narrow enough to close
    (``MINIMAX_CLOSE``) or wider than ``MINIMAX_RATIO`` in U/L."""
    lower = max(lower, 1)
    return upper > lower and (upper - lower <= MINIMAX_CLOSE or upper > MINIMAX_RATIO * lower)


def minimax_witnesses(s: BracketState) -> None:
    """Fast mode: the budgeted smoothed-minimax descent (``fastpath/upper/minimax.py``) from the
    best witness of each open bracket, smallest eps first (its result holds at every larger eps
    and starts the descent there when its rank is lower)."""
    with s.timer("minimax"):
        asc = sorted(s.eps_list)
        for j, e in enumerate(asc):
            w = min((s.best[x] for x in asc[:j + 1] if s.best[x] is not None and s.best[x].error <= e - MARGIN),
                    key=lambda w: w.rank, default=None)
            if w is None or not worth_descent(s.lower[e], w.rank):
                continue
            found, _ = minimax.descend(s.op, w, e, s.lower[e], MINIMAX_BUDGET)
            if s.best[e] is None or found.rank < s.best[e].rank:
                s.best[e] = found


def resolve_witnesses(s: BracketState) -> None:
    """Fast mode, after decoder growth: a bracket still unresolved gets a second descent of
    ``MINIMAX_RESOLVE_BUDGET`` from its best witness (smallest eps first, as above)."""
    with s.timer("minimax"):
        for e in sorted(s.eps_list):
            w = s.best[e]
            if w is None or resolved(s.lower[e], w.rank, s.op.p):
                continue
            found, _ = minimax.descend(s.op, w, e, s.lower[e], MINIMAX_RESOLVE_BUDGET)
            if found.rank < w.rank:
                s.best[e] = found


def growth_cap(n: int) -> int:
    """Fast mode: the largest decoder set that growth past the resolving size aims at, for an
    operator with n columns (p^2 n <= ``GROWTH_WORK``)."""
    return math.isqrt(GROWTH_WORK // max(n, 1))


def _growth_goal(s: BracketState, e: float) -> tuple[int, int]:
    """(the least lower end that would resolve the bracket at eps e (the upper end if none), the
    size decoder growth aims at: that one, and in fast mode at least U / GROWTH_RATIO, but not
    past ``growth_cap``)."""
    upper = s.upper(e)
    resolve = next((g for g in range(s.lower[e], upper + 1) if resolved(g, upper, s.op.p)), upper)
    if s.mode != "fast":
        return resolve, resolve
    return resolve, max(resolve, min(upper, math.ceil(upper / GROWTH_RATIO), growth_cap(s.op.N)))


def grow_decoders(s: BracketState) -> None:
    """Growth toward ``_growth_goal`` where resolving takes <= ``SMOOTH_TRIES`` rows (fast: always, ``FAST_TRIES``)."""
    with s.timer("decoder"):
        grown = None  # a decoder valid at a larger eps is valid here too
        for e in s.eps_list:
            if grown is not None and grown.lower > s.lower[e]:
                s.add_certificate(e, grown)
            resolve, goal = _growth_goal(s, e)
            cands = [c for c in s.certs[e] if c.kind == "decoder"] + ([grown] if grown is not None else [])
            start, fast = max(cands, key=lambda c: c.lower, default=None), s.mode == "fast"
            if start is None or goal <= s.lower[e] or (not fast and resolve - s.lower[e] > dec.SMOOTH_TRIES):
                continue
            c = dec.grow_decoder_smooth(s.op, start, e, goal, **dec.growth_options(fast))
            if c.lower > s.lower[e]:
                s.add_certificate(e, c)
                grown = c


def share_witnesses(s: BracketState) -> None:
    """A witness checked at a smaller eps also holds at a larger one."""
    for i, e in enumerate(s.eps_list):
        for e2 in s.eps_list[i + 1:]:  # smaller eps
            w = s.best[e2]
            if w is not None and (s.best[e] is None or w.rank < s.best[e].rank) and w.error <= e - MARGIN:
                s.best[e] = dataclasses.replace(w)


def eps_bracket(s: BracketState, e: float) -> EpsBracket:
    """The result at eps e: one certificate per kind achieving the lower end."""
    top = s.lower[e]
    uniq: dict[str, low.Certificate] = {}
    for c in s.certs[e]:
        if c.lower == top and c.kind not in uniq:
            uniq[c.kind] = c
    by_kind: dict[str, int] = {}
    for c in s.certs[e]:
        by_kind[c.kind] = max(by_kind.get(c.kind, 0), c.lower)
    w, bu = s.best[e], s.baseline_upper[e]
    return EpsBracket(eps=e, witness=w, certificates=list(uniq.values()), lower=top,
                      upper=None if w is None else w.rank, baseline_lower=s.baseline_lower[e],
                      baseline_upper=None if bu is None else bu.rank, ranks=s.ranks[e],
                      lower_by_kind=by_kind, failed=s.failed.get(e, {}))


def bracket_matrix(A: np.ndarray, eps_list=DEFAULT_EPS, mode: str = "fast", constructions=None,
                   timer: Timer | None = None) -> dict[float, EpsBracket]:
    """Bracket ``r_eps(A)`` for each eps in float64 (see module docstring)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    s = BracketState(op=OperatorCache(A), eps_list=sorted({float(e) for e in eps_list}, reverse=True),
                     mode=mode, timer=timer or Timer())
    scan_baseline(s)
    tail_certificates(s)
    decoder_certificates(s)
    search_constructions(s, constructions)
    if mode == "basic":
        refine_witnesses(s)
    elif mode == "fast":
        minimax_witnesses(s)
    grow_decoders(s)
    if mode == "fast":
        resolve_witnesses(s)
    share_witnesses(s)
    return {e: eps_bracket(s, e) for e in s.eps_list}
