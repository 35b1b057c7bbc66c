"""``softrank study kappa``: the theorem's own size on a replayed store (untrusted orchestration).

For every operator, C = P_m H P_N (from the logits) and its retained parts T_r (balanced factors of
one float64 SVD; T := X0 Y0^T exactly for those binary64 factors; at r = rank C the part is C
itself, with tau = 0 exactly and kappa(C) from the stored factors):

- tau(T_r) in float64 from Karp's maximum-mean cycle (q(C - T) is the maximum cycle mean of the
  column graph, proofs/tau_bound.md); per eps, the least rank found by bisection on that float
  value with tau(T_r) < eps, raised until the validated tau_hat is below eps;
- at those ranks and the fixed ranks: tau validated above (``check_tau_bound`` with the column
  term from longest-path potentials) and below (the cycle lemma), kappa(T_r) bracketed
  (``kappa_full.bracket_kappa_eg``: dual and primal bounds re-evaluated in balls), kappa_bal
  (float, and a validated upper bound);
- kappa(C) at full rank and the native Gamma of the stored factorization (qk records only; a
  logits record has no native factorization).

The rank brackets come from the replay table; ``kappa_corr`` does the statistics.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np

from softrank.fastpath.store.files import write_json
from softrank.validated.errors import InputError

DEFAULT_RANKS = (2, 4, 8, 16)
KAPPA_TOL = 1e-5


def column_weights(f: np.ndarray) -> np.ndarray:
    """w[j, j'] = max_i (F_ij - F_ij') (the column graph of the cycle lemma)."""
    n = f.shape[1]
    w = np.empty((n, n))
    for j in range(n):
        w[j] = (f[:, [j]] - f).max(0)
    return w


def column_term(f: np.ndarray, lam: float) -> np.ndarray:
    """Longest-path potentials: c_j - c_j' >= w[j, j'] - lam for all j, j' (Bellman-Ford), so that
    max_i osc(F_i - c) <= lam when lam is at least the maximum cycle mean (float, untrusted)."""
    w = column_weights(f) - (lam * (1 + 1e-12) + 1e-15)
    c = np.zeros(f.shape[1])
    for _ in range(f.shape[1]):
        new = np.maximum(c, (c[None, :] + w).max(1))
        if np.array_equal(new, c):
            break
        c = new
    return c


def tau_float(h: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> float:
    from softrank.fastpath.studies.theorem.tau import max_mean_cycle

    return 2 * math.tanh(max(max_mean_cycle(h - x0 @ y0.T)[0], 0.0) / 4)


def tau_validated(balls, h: np.ndarray, x0: np.ndarray, y0: np.ndarray) -> dict:
    """tau_lower <= tau(X0 Y0^T) <= tau_upper, both from validated/tau.py."""
    from softrank.fastpath.studies.theorem.tau import max_mean_cycle
    from softrank.validated.balls import lower_fraction
    from softrank.validated.tau import check_tau_bound, q_lower_cycle, tau_from_q_ball

    f = h - x0 @ y0.T
    lam, rows, cols = max_mean_cycle(f)
    chk = check_tau_bound(balls, x0, y0, column_term(f, lam))
    lo = tau_from_q_ball(q_lower_cycle(balls, x0, y0, rows, cols))
    return {"tau_float": 2 * math.tanh(max(lam, 0.0) / 4), "tau_upper": chk.tau_hat_upper,
            "tau_lower": max(0.0, float(lower_fraction(lo))) if lo.is_finite() else 0.0,
            "tau_outcome": chk.check.outcome.value}


class _Operator:
    """One record's float data: logits, C, its SVD, rank, and cached float tau per rank."""

    def __init__(self, rec):
        from softrank.fastpath.studies.theorem.kappa_full import numerical_rank
        from softrank.fastpath.studies.theorem.records import double_centre, logits_float

        self.rec = rec
        self.h = logits_float(rec)
        self.u, self.s, self.vt = np.linalg.svd(double_centre(self.h), full_matrices=False)
        self.rank = max(1, numerical_rank(self.s))
        self.taus: dict[int, float] = {}

    def factors(self, r: int) -> tuple[np.ndarray, np.ndarray]:
        g = np.sqrt(self.s[:r])
        return np.ascontiguousarray(self.u[:, :r] * g), np.ascontiguousarray(self.vt[:r].T * g)

    def tau(self, r: int) -> float:
        if r >= self.rank:
            return 0.0
        if r not in self.taus:
            self.taus[r] = tau_float(self.h, *self.factors(r))
        return self.taus[r]

    def rank_for(self, eps: float) -> int:
        """The least r with float tau(T_r) < eps, by bisection on [1, rank C]."""
        lo, hi = 0, self.rank
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if self.tau(mid) < eps else (mid, hi)
        return hi


def _bal(x0: np.ndarray, y0: np.ndarray) -> dict:
    from softrank.fastpath.studies.theorem.kappa_sdp import chebyshev_centre
    from softrank.validated import kappa_certificates as kc
    from softrank.validated.balls import float_at_least

    cx, rx, _ = chebyshev_centre(x0)
    cy, ry, _ = chebyshev_centre(y0)
    return {"kappa_bal": rx * ry, "kappa_bal_upper": float_at_least(kc.radius_upper(x0, cx) * kc.radius_upper(y0, cy))}


def rank_entry(op: _Operator, r: int, balls, full: dict) -> dict:
    """tau, kappa and kappa_bal of T_r (r = rank C: C itself, tau = 0 exactly)."""
    from softrank.fastpath.studies.theorem.kappa_full import bracket_kappa_eg

    t0 = time.perf_counter()
    x0, y0 = op.factors(min(r, op.rank))
    entry = {"r": r, "is_C": r >= op.rank}
    if entry["is_C"]:
        entry.update(tau_float=0.0, tau_upper=0.0, tau_lower=0.0, tau_outcome="exact (T = C)")
        kap = full
    else:
        entry.update(tau_validated(balls, op.h, x0, y0))
        kap = bracket_kappa_eg(x0, y0, tol=KAPPA_TOL)
    entry.update(kappa_lower=kap["lower"], kappa_upper=kap["upper"], kappa_rel_gap=kap["rel_gap"],
                 kappa_lower_validated=kap["lower_validated"])
    entry.update(_bal(x0, y0))
    entry["seconds"] = time.perf_counter() - t0
    return entry


def _gamma(rec) -> dict:
    if rec.form != "qk" or rec.bias is not None:
        return {"gamma": None, "gamma_upper": None,
                "gamma_note": "logits record: no native factorization" if rec.form == "logits"
                else "additive bias: C is not P_m (beta Q K^T) P_N"}
    from softrank.fastpath.studies.theorem.kappa import gamma_native

    g, g_up = gamma_native(rec.queries, rec.keys, float(rec.scale))
    return {"gamma": g, "gamma_upper": g_up, "gamma_note": ""}


def operator_study(folder: str, eps_list: list[float], ranks=DEFAULT_RANKS) -> dict:
    """Everything the study needs from one record (one JSON-ready dict)."""
    from softrank.fastpath.studies.theorem.kappa_full import kappa_c_record
    from softrank.fastpath.studies.theorem.records import logits_balls_of
    from softrank.replay.reader import read_record

    t0 = time.perf_counter()
    rec = read_record(Path(folder))
    op, balls = _Operator(rec), logits_balls_of(rec)
    full = kappa_c_record(rec, tol=KAPPA_TOL)
    entries: dict[int, dict] = {}

    def entry(r):
        if r not in entries:
            entries[r] = rank_entry(op, r, balls, full)
        return entries[r]

    for r in ranks:
        entry(min(r, op.rank))
    r_star = {}
    for eps in eps_list:
        r = op.rank_for(eps)
        while entry(r)["tau_upper"] >= eps and r < op.rank:
            r += 1
        r_star[repr(float(eps))] = r
    prov = rec.provenance
    out = {"record_id": rec.record_id, "family": prov.get("family"), "model": prov.get("model"),
           "source_id": prov.get("source_id"), "layer": prov.get("layer"), "head": prov.get("head"),
           "m": rec.shape[0], "N": rec.shape[1], "form": rec.form, "rank_C": op.rank,
           "ranks_requested": list(ranks), "fixed_ranks": [min(r, op.rank) for r in ranks], "r_star": r_star,
           "kappa_C": full, "ranks": [entries[r] for r in sorted(entries)], **_gamma(rec)}
    out["seconds"] = time.perf_counter() - t0
    return json.loads(json.dumps(out, default=_jsonable))


def _jsonable(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    raise TypeError(type(v))


def _worker(task):
    from softrank.fastpath.bracket.store import limit_threads

    limit_threads()
    folder, eps_list, ranks, cache = task
    try:
        row = operator_study(folder, eps_list, ranks)
    except InputError as err:  # a malformed record: its one line names the file and field
        return {"record_id": Path(folder).name, "error": str(err), "bad_input": True}
    except Exception as err:  # one operator's failure is reported, the study goes on
        return {"record_id": Path(folder).name, "error": f"{type(err).__name__}: {err}"}
    tmp = Path(cache).with_suffix(".tmp")
    tmp.write_text(json.dumps(row))  # resume state, read back by the aggregation (NaN kept as NaN)
    os.replace(tmp, cache)
    return row


def interleave(items: list[dict]) -> list[dict]:
    """Round-robin over families and, within a family, over sources (a partial run stays
    balanced)."""
    by_family: dict = {}
    for it in items:
        by_family.setdefault(it["family"], {}).setdefault(it["source_id"], []).append(it)
    queues = []
    for fam in sorted(by_family, key=str):
        groups = [by_family[fam][s] for s in sorted(by_family[fam], key=str)]
        queues.append([g[i] for i in range(max(map(len, groups))) for g in groups if i < len(g)])
    return [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]


def read_brackets(replay_dir) -> dict:
    """{record_id: {eps_value: (eps text, validated_lower, validated_upper)}} from a replay table;
    every row with a bracket is checked as ``softrank regress`` and ``softrank report`` check it
    (``softrank.fastpath.store.replay_table.check_replay_row``: integers, finite, 0 <= L <= U, a known status,
    valid JSON lists): a damaged table is an ``InputError`` naming the file, row and column."""
    from softrank.fastpath.store.replay_table import check_replay_row, read_parquet_rows

    path = Path(replay_dir) / "replay.parquet"
    columns, rows = read_parquet_rows(replay_dir, "replay.parquet")
    need = {"record_id", "eps", "eps_value", "validated_lower", "validated_upper"}
    if not need <= set(columns):
        raise InputError(str(path), "columns", f"missing {sorted(need - set(columns))}")
    out: dict = {}
    for i, row in enumerate(rows):
        if row["eps_value"] is None or row.get("status") == "malformed":  # a malformed record's row: no bracket
            continue
        check_replay_row(path, i, row)
        if not isinstance(row["record_id"], str) or not isinstance(row["eps_value"], float) \
                or not 0 < row["eps_value"] < 1:
            raise InputError(str(path), f"row {i}", "expected a record id and an eps_value in (0, 1)")
        out.setdefault(row["record_id"], {})[float(row["eps_value"])] = (
            row["eps"], row["validated_lower"], row["validated_upper"])
    return out


def _run_tasks(tasks: list, jobs: int, deadline: float, progress=None) -> list[dict]:
    """``_worker`` over the tasks (a spawn pool of ``jobs`` processes); no task starts after
    ``deadline`` (perf_counter seconds)."""
    done: list[dict] = []
    if jobs <= 1:
        for t in tasks:
            if time.perf_counter() > deadline:
                break
            done.append(_worker(t))
            if progress:
                progress(len(done), len(tasks))
        return done
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    queue = iter(tasks)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        running: set = set()
        while True:
            while len(running) < jobs and time.perf_counter() <= deadline:
                t = next(queue, None)
                if t is None:
                    break
                running.add(pool.submit(_worker, t))
            if not running:
                return done
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            done.extend(f.result() for f in finished)
            if progress:
                progress(len(done), len(tasks))


def select_operators(store, brackets: dict, records: str | None = None, limit: int | None = None) -> list[dict]:
    """The store's records that the replay table covers, interleaved; optional ids and a limit.  Before
    them, every (chosen) entry of ``records/`` that is not a folder (a file, a FIFO, a dangling link):
    it has no bracket, and its worker reports it as a malformed record on one line."""
    from softrank.replay.reader import record_entries

    from softrank.fastpath.store.files import read_regular_file

    wanted = None if records is None else {s.strip() for s in records.split(",") if s.strip()}
    if wanted is not None and not wanted:
        raise InputError("arguments", "records", f"no record id given: {records!r}")
    items, strays, names = [], [], set()
    for folder in record_entries(store):
        names.add(folder.name)
        if wanted is not None and folder.name not in wanted:
            continue
        if not folder.is_dir():  # never opened here (a FIFO would block)
            strays.append({"folder": str(folder), "record_id": folder.name, "family": None, "source_id": None})
            continue
        if folder.name not in brackets:
            continue
        try:  # only the provenance, for the interleaving; the worker reads and checks the whole record
            prov = json.loads(read_regular_file(folder / "record.json").decode("utf-8")).get("provenance", {})
            prov = prov if isinstance(prov, dict) else {}
        except (OSError, ValueError, AttributeError, RecursionError):
            prov = {}
        items.append({"folder": str(folder), "record_id": folder.name, "family": prov.get("family"),
                      "source_id": prov.get("source_id")})
    if wanted is not None and wanted - names:
        raise InputError(str(store), "records", f"not found: {sorted(wanted - names)[:5]}")
    return strays + interleave(items)[:limit]


def _cached(cache: Path, record_id: str, ranks, eps_list, brackets: dict) -> dict | None:
    """The entry of an earlier run in ``cache`` when it is for this record, these ranks and these
    tolerances (else ``None``: the operator is computed again).  A corrupt entry (not JSON, cut
    short, of another form, one the statistics cannot use) is recomputed too, with one line on
    stderr saying so; a special file there (a FIFO, a folder) is never opened."""
    import stat
    import sys

    try:
        if not stat.S_ISREG(os.stat(cache).st_mode):
            raise ValueError("not a regular file")
        old = json.loads(cache.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError) as err:  # UnicodeDecodeError and JSONDecodeError included
        why = f"not JSON ({err.msg})" if isinstance(err, json.JSONDecodeError) else str(err)
        print(f"{cache}: corrupt cache entry ({' '.join(why.split())[:120]}); recomputed", file=sys.stderr)
        return None
    try:
        if not isinstance(old, dict) or "error" in old:
            raise TypeError("not an operator's result")
        if old.get("ranks_requested") != list(ranks) or set(old["r_star"]) != {repr(e) for e in eps_list}:
            return None  # other ranks or tolerances: recomputed
        if old["record_id"] != record_id:
            raise ValueError(f"it is the entry of {str(old['record_id'])[:60]!r}")
        from softrank.fastpath.studies.theorem import kappa_corr as kcorr

        kcorr.study_rows([old], {record_id: brackets.get(record_id, {})})  # what the statistics read of it
        kcorr.summarise([old], [], [], 0.0, 0.0)
    except Exception as err:  # any defect of a hand-edited or truncated entry: the operator is redone
        why = ": ".join(filter(None, (type(err).__name__, " ".join(str(err).split())[:100])))
        print(f"{cache}: corrupt cache entry ({why}); recomputed", file=sys.stderr)
        return None
    return old


def run_kappa_study(store, replay_dir, out, ranks=DEFAULT_RANKS, jobs: int = 1, resume: bool = False,
                    max_minutes: float | None = None, records: str | None = None, limit: int | None = None,
                    n_boot: int = 2000, progress=None) -> dict:
    """The study on every operator of ``store`` with a bracket in ``replay_dir``; writes
    operators/<id>.json, rows.csv, correlations.csv, correlations.md, study.json, kappa-study.png."""
    from softrank.fastpath.store.files import write_csv
    from softrank.fastpath.studies.theorem import kappa_corr as kcorr

    t0 = time.perf_counter()
    brackets = read_brackets(replay_dir)
    chosen = select_operators(store, brackets, records, limit)
    opdir = Path(out) / "operators"
    opdir.mkdir(parents=True, exist_ok=True)
    ops, tasks = [], []
    for it in chosen:
        cache = opdir / f"{it['record_id']}.json"
        eps_list = sorted(brackets.get(it["record_id"], {}))  # none for a stray entry (it fails when read)
        old = _cached(cache, it["record_id"], ranks, eps_list, brackets) if resume else None
        if old is not None:
            ops.append(old)  # the same ranks and tolerances: reused
        else:
            tasks.append((it["folder"], eps_list, tuple(ranks), str(cache)))
    deadline = t0 + 60 * max_minutes if max_minutes else math.inf
    ops += _run_tasks(tasks, jobs, deadline, progress)
    seconds_ops = time.perf_counter() - t0
    rows = kcorr.study_rows([o for o in ops if "error" not in o], brackets)
    table = kcorr.correlation_table(rows, n_boot=n_boot)
    write_csv(Path(out) / "rows.csv", [{k: v for k, v in r.items() if k != "scores"} | r["scores"] for r in rows])
    write_csv(Path(out) / "correlations.csv", table)
    lines = kcorr.markdown_table(table)
    (Path(out) / "correlations.md").write_text("\n".join(lines) + "\n")
    if rows:
        kcorr.scatter_figure(rows, Path(out) / "kappa-study.png")
    result = {"summary": kcorr.summarise(ops, chosen, rows, seconds_ops, time.perf_counter() - t0),
              "settings": {"store": str(store), "replay": str(replay_dir), "ranks": list(ranks), "jobs": jobs,
                           "max_minutes": max_minutes, "bootstrap": n_boot, "kappa_tol": KAPPA_TOL},
              "correlations": table}
    write_json(Path(out) / "study.json", result)
    return result
