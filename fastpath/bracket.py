"""Float64 brackets [L, U] of ``r_eps(A)`` and verdicts at rank budgets, written into records.

``bracket_matrix(A, eps_list)`` runs the upper constructions (``fastpath/upper.py``) and the lower
certificates (``fastpath/lower.py``) and returns, per eps, the best checked witness, the
certificates that achieve the largest lower end, and the baseline (truncated SVD upper,
Frobenius-tail lower) on the same operator.  ``bracket_record`` does this for one stored record
and rewrites it with ``RecordWriter.from_record`` (only the best witness per eps and the
certificates achieving max L are stored).

Modes: ``fast`` (default) searches each later construction only below the best rank found so
far, refines ranks up to ``L1_MAX_RANK`` by one-rank alternating-l1 steps (``upper.descend``) and
higher ranks by large steps (``upper.shrink``, only where U > 2L); ``full`` finds every
construction's own least rank (for the construction study; slower).
"""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from softrank.fastpath import lower as low
from softrank.fastpath import upper as up

DEFAULT_EPS = (0.15, 0.25, 0.35)
BUDGETS = (8, 16, 32)
FAST_ORDER = ("rpqr", "cpqr", "rwsvd", "altl1")
ALL_CONSTRUCTIONS = ("tsvd", "rwsvd", "altl1", "cpqr", "rpqr", "reprows")
PRODUCER = "softrank.fastpath.bracket 0.1"
L1_FULL_CAP = 96  # full mode: the l1 constructions are searched up to this rank (cost ~ k^2)
L1_MAX_RANK = 48  # fast mode: alternating l1 / representative rows only below this rank


def resolved(lower: int, upper: int | None, p: int) -> bool:
    """DESIGN section 1: U <= 2L, or U - L <= 2, or U - L <= p/10 (p = min(m, N))."""
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
    witness: up.Witness | None
    certificates: list[low.Certificate]
    lower: int
    upper: int | None
    baseline_lower: int  # Frobenius tail (at least the trivial 1: ||A||_inf = 1 > eps)
    baseline_upper: int | None  # truncated SVD
    ranks: dict[str, int | None] = field(default_factory=dict)  # construction -> least rank found
    lower_by_kind: dict[str, int] = field(default_factory=dict)

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


def bracket_matrix(A: np.ndarray, eps_list=DEFAULT_EPS, mode: str = "fast", constructions=None,
                   timer: Timer | None = None) -> dict[float, EpsBracket]:
    """Bracket ``r_eps(A)`` for each eps in float64 (see module docstring)."""
    if mode not in ("fast", "full"):
        raise ValueError(f"mode must be 'fast' or 'full', got {mode!r}")
    timer = timer or Timer()
    eps_list = sorted({float(e) for e in eps_list}, reverse=True)
    ctx = up.Context(A)
    p = ctx.p

    with timer("svd"):
        ctx.svd  # noqa: B018  (shared by tsvd, rwsvd, frobenius, projected)
    with timer("tsvd"):
        base_up = up.tsvd_scan(ctx, eps_list)
    best: dict[float, up.Witness | None] = dict(base_up)
    ranks: dict[float, dict[str, int | None]] = {e: {"tsvd": None if base_up[e] is None else base_up[e].rank} for e in eps_list}

    certs: dict[float, list[low.Certificate]] = {e: [] for e in eps_list}
    with timer("frobenius"):
        for e in eps_list:
            c = low.frobenius_certificate(ctx, e)
            if c is not None:
                certs[e].append(c)
    base_low = {e: max([1] + [c.lower for c in certs[e]]) for e in eps_list}
    with timer("projected"):
        for e in eps_list:
            c = low.projected_certificate(ctx, e)
            if c is not None:
                certs[e].append(c)
    with timer("decoder"):
        start = None
        for e in eps_list:  # largest eps first: its set stays valid at smaller eps
            cap = best[e].rank if best[e] is not None else p
            c = low.decoder_certificate(ctx, e, cap, start=start)
            certs[e].append(c)
            start = c
    L = {e: max(c.lower for c in certs[e]) for e in eps_list}

    names = [n for n in (constructions or (FAST_ORDER if mode == "fast" else ALL_CONSTRUCTIONS)) if n != "tsvd"]
    if mode == "fast":  # the l1 fits cost ~ m N k^2 per sweep: only where the ranks are moderate
        names = [n for n in names if n not in ("altl1", "reprows")
                 or min((best[e].rank if best[e] is not None else p) for e in eps_list) <= L1_MAX_RANK]
    for name in names:
        lo, hi = {}, {}
        for e in eps_list:
            cur = best[e].rank if best[e] is not None else p
            lo[e] = max(L[e], 1)
            hi[e] = cur - 1 if mode == "fast" else p
            if mode == "fast" and name in ("altl1", "reprows") and cur > L1_MAX_RANK:
                hi[e] = -1  # hopeless range for the l1 fits: skip this eps
            if mode == "full" and name in ("altl1", "reprows"):
                hi[e] = min(hi[e], L1_FULL_CAP)
            # a witness at a smaller eps is one at a larger eps: narrow the range
        with timer(name):
            found = up.search_ranks(ctx, name, eps_list, lo, hi)
        for e in eps_list:
            w = found.get(e)
            ranks[e][name] = None if w is None else w.rank
            if w is not None and (best[e] is None or w.rank < best[e].rank):
                best[e] = w
    if mode == "fast":
        with timer("altl1"):
            for e in eps_list:  # continuation: drop components of the best witness, refit
                if best[e] is not None and L[e] < best[e].rank <= L1_MAX_RANK:
                    best[e] = up.descend(ctx, best[e], e - up.MARGIN, L[e])
        with timer("altl1"):
            asc = sorted(eps_list)  # high ranks: large steps down, smallest eps first (its witness
            for j, e in enumerate(asc):  # holds at every larger eps and starts the next search)
                w = min((best[x] for x in asc[:j + 1] if best[x] is not None and best[x].error <= e - up.MARGIN),
                        key=lambda w: w.rank, default=None)
                if w is not None and w.rank > L1_MAX_RANK and 2 * L[e] < w.rank:
                    best[e] = up.shrink(ctx, w, e - up.MARGIN, L[e])
    # decoder growth past the LP's reach, only where it can resolve the bracket
    with timer("decoder"):
        grown = None  # a decoder valid at a larger eps is valid here too
        for e in eps_list:
            if grown is not None and grown.lower > L[e]:
                certs[e].append(grown)
                L[e] = grown.lower
            w = best[e]
            upper = w.rank if w is not None else p
            goal = next((g for g in range(L[e], upper + 1) if resolved(g, upper, p)), upper)
            cands = [c for c in certs[e] if c.kind == "decoder"] + ([grown] if grown is not None else [])
            start = max(cands, key=lambda c: c.lower, default=None)
            if start is None or goal <= L[e] or goal - L[e] > low.SMOOTH_TRIES:
                continue
            c = low.grow_decoder_smooth(ctx, start, e, goal)
            if c.lower > L[e]:
                certs[e].append(c)
                L[e] = c.lower
                grown = c
    # a witness checked at a smaller eps also holds at a larger one
    for i, e in enumerate(eps_list):
        for e2 in eps_list[i + 1:]:  # smaller eps
            w = best[e2]
            if w is not None and (best[e] is None or w.rank < best[e].rank) and w.error <= e - up.MARGIN:
                best[e] = up.Witness(w.rank, w.X, w.Y, w.construction, w.error)

    out = {}
    for e in eps_list:
        top = L[e]
        kept = [c for c in certs[e] if c.lower == top]
        # one certificate per kind is enough
        seen, uniq = set(), []
        for c in kept:
            if c.kind not in seen:
                uniq.append(c)
                seen.add(c.kind)
        by_kind = {}
        for c in certs[e]:
            by_kind[c.kind] = max(by_kind.get(c.kind, 0), c.lower)
        w = best[e]
        bu = base_up[e]
        out[e] = EpsBracket(eps=e, witness=w, certificates=uniq, lower=top,
                            upper=None if w is None else w.rank, baseline_lower=base_low[e],
                            baseline_upper=None if bu is None else bu.rank, ranks=ranks[e],
                            lower_by_kind=by_kind)
    return out


def bracket_record(folder, out_store, eps_list=DEFAULT_EPS, mode: str = "fast") -> list[dict]:
    """Bracket one stored record and write it (with its tolerances) into ``out_store``.
    Returns one summary row per eps."""
    from softrank.fastpath.writer import RecordWriter
    from softrank.replay.reader import read_record

    t0 = time.perf_counter()
    record = read_record(folder)
    timer = Timer()
    result = bracket_matrix(record.a_hat, eps_list, mode=mode, timer=timer)
    writer = RecordWriter.from_record(out_store, record, provenance_update={"bracketed_by": PRODUCER})
    try:
        for e in sorted(result):
            b = result[e]
            upper = None if b.witness is None else (b.witness.X, b.witness.Y, b.witness.construction)
            writer.add_tolerance(e, upper=upper, lower=[c.as_record() for c in b.certificates],
                                 float64={"lower": b.lower, "upper": b.upper, "verdicts": b.verdicts})
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    seconds = time.perf_counter() - t0
    prov = record.provenance
    m, n = record.shape
    rows = []
    for e in sorted(result):
        b = result[e]
        row = {"record_id": record.record_id, "model": str(prov.get("model", "")),
               "family": str(prov.get("family", "")), "layer": prov.get("layer"), "head": prov.get("head"),
               "m": m, "N": n, "eps": e, "lower": b.lower, "upper": b.upper,
               "lower_kind": "+".join(c.kind for c in b.certificates),
               "upper_construction": None if b.witness is None else b.witness.construction,
               "resolved": resolved(b.lower, b.upper, min(m, n)),
               "baseline_lower": b.baseline_lower, "baseline_upper": b.baseline_upper,
               "baseline_resolved": resolved(b.baseline_lower, b.baseline_upper, min(m, n)),
               "seconds": seconds}
        for name in ALL_CONSTRUCTIONS:
            row[f"rank_{name}"] = b.ranks.get(name)
        for kind in ("frobenius", "projected", "decoder"):
            row[f"lower_{kind}"] = b.lower_by_kind.get(kind)
        for name, s in timer.seconds.items():
            row[f"time_{name}"] = s
        rows.append(row)
    return rows


def limit_threads() -> None:
    """One BLAS thread per process (the pool supplies the parallelism; oversubscribed BLAS
    threads make a 128 x 128 SVD 20 times slower on two shared cores)."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except Exception:
        pass


def _worker(args):
    folder, out_store, eps_list, mode = args
    limit_threads()
    return bracket_record(folder, out_store, eps_list, mode)


def bracket_store(store, out_store=None, eps_list=DEFAULT_EPS, jobs: int = 1, mode: str = "fast",
                  progress=None) -> list[dict]:
    """Bracket every record of ``store`` (into ``out_store``, default in place) with a process
    pool of ``jobs`` workers; returns the summary rows and writes ``bracket.csv`` next to the
    records.  ``progress(done, total)`` is called after each record."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    from softrank.replay.reader import list_records

    from softrank.fastpath.writer import write_index

    out_store = Path(out_store or store)
    folders = list_records(store)
    tasks = [(str(f), str(out_store), tuple(eps_list), mode) for f in folders]
    rows: list[dict] = []
    if jobs > 1 and len(tasks) > 1:
        import multiprocessing

        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = "1"  # read by numpy's BLAS when a spawned worker imports it
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = [pool.submit(_worker, t) for t in tasks]
            for i, fut in enumerate(as_completed(futures)):
                rows.extend(fut.result())
                if progress:
                    progress(i + 1, len(tasks))
    else:
        limit_threads()
        for i, t in enumerate(tasks):
            rows.extend(bracket_record(*t))
            if progress:
                progress(i + 1, len(tasks))
    rows.sort(key=lambda r: (r["record_id"], r["eps"]))
    write_index(out_store)
    write_rows(out_store / "bracket.csv", rows)
    return rows


def write_rows(path: Path, rows: list[dict]) -> None:
    import csv
    import tempfile

    keys: list[str] = []
    for r in rows:
        for k in r:
            if k not in keys:
                keys.append(k)
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".bracket-", suffix=".csv", dir=path.parent)
    with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(rows)
    os.replace(tmp, path)
