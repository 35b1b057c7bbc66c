"""``softrank bench bracket``: bracket throughput and the time share of each construction and
certificate.

Operators: real ones extracted (untimed) from the installed models -- SmolLM2 common-prefix
blocks at N = 128 and all-MiniLM-L6-v2 operators at N = 256, 6 each (``--quick``: MiniLM at
N = 128 and 256, 2 each); attention-like synthetic softmax matrices (logits ``beta Q K^T``,
d = 4, plus a sink column) when a model is not installed.  Each case is bracketed at eps 0.15,
0.25, 0.35 with a pool of 2 worker processes (the default of ``softrank bracket``), in ``fast``
mode; the time share of each construction and certificate comes from the per-record timers.
Throughput is operators per minute of wall time; the cost per operator (wall time times workers
over operators) is also given in units of one float64 SVD of an operator of the case, timed in the
same run with one BLAS thread ("SVD-equivalents").  Quality is read beside the cost: the share of
operators resolved at eps 0.25 and the median U/L there.

``softrank bench bracket STORE`` takes the operators of a store (``softrank extract``) instead, one
case per family (model).  ``--compare`` also brackets every operator of each case in this process,
one BLAS thread, with ``--mode basic`` and with the default ``fast`` mode, record by record, and
reports the CPU seconds of each and their ratio with both modes' quality (the trade of the
minimax descent).

``--json`` prints ``{"families": {FAMILY: {...}}}`` with, per family, ``ops_per_minute``,
``svd_equivalents``, ``resolved_eps_0.25``, ``median_U_over_L_eps_0.25`` (and, with
``--compare``, ``compare``: per mode ``cpu_seconds``, ``resolved_eps_0.25``,
``median_U_over_L_eps_0.25``, ``closed_eps_0.25``, and ``cpu_ratio_fast_to_basic``).
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from softrank.cli.output import print_json
from softrank.fastpath.float64 import rowsoftmax64
from softrank.replay.tolerance import Tolerance

QUARTER = Tolerance.parse("0.25")  # the tolerance of the U/L median

COMPONENTS = ("svd", "tsvd", "rwsvd", "altl1", "cpqr", "rpqr", "reprows", "minimax", "frobenius", "projected",
              "decoder")


def attention_like(n: int, rng: np.random.Generator):
    d = 4
    Q = rng.normal(size=(n, d))
    K = rng.normal(size=(n, d))
    K[0] *= 0.2
    beta = float(rng.uniform(0.8, 1.5))
    H = beta * Q @ K.T
    H[:, 0] += rng.uniform(3.0, 5.0)  # a sink column carrying most of the mass, as in trained heads
    return Q, K, beta, rowsoftmax64(H)


def make_store(path: Path, n: int, count: int, seed: int) -> None:
    from softrank.fastpath.store.writer import RecordWriter

    rng = np.random.default_rng(seed)
    for i in range(count):
        _, _, _, A = attention_like(n, rng)
        with RecordWriter(path, f"bench-N{n}-{i}", provenance={"model": "synthetic", "family": "synthetic"}) as w:
            w.set_logits(np.log(A))  # benchmark only: rowsoftmax(log A) = A (no zero entries here)
            w.set_a_hat(A)


def _real_store(path: Path, model: str, n: int, count: int) -> bool:
    """Extract ``count`` operators of width n from a real model into ``path`` (not timed)."""
    try:
        from softrank.fastpath.capture.extract import extract_to_store
    except ImportError:
        return False
    opts = {"max_operators": count, "device": "cpu", "progress": False, "sources": 2}
    if model == "smollm2":
        opts.update(tokens=2 * n, widths=[n])
    else:
        opts.update(tokens=n)
    try:
        return len(extract_to_store(model, path, **opts)) > 0
    except Exception as err:  # the models are optional for the benchmark
        print(f"  ({model}: extraction failed, {type(err).__name__}: {err}; using synthetic operators)")
        return False


def svd_seconds(store: Path, repeats: int = 7) -> float:
    """Median time of one float64 SVD of the store's first operator, one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from softrank.replay.reader import list_records, read_record

    A = np.ascontiguousarray(read_record(list_records(store)[0]).a_hat)
    times = []
    with threadpool_limits(1):
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.linalg.svd(A)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _bench_case(tmp: str, src: Path, count: int, repeats: int, jobs: int) -> dict:
    """Bracket ``repeats`` copies of the store ``src``; the measured figures of the case."""
    from contextlib import ExitStack

    from softrank.fastpath.bracket.store import bracket_store
    from softrank.fastpath.runner import local_cluster

    time.sleep(0.5)  # let the threads of the extraction settle before timing the SVD
    t_svd = svd_seconds(src)
    walls, rows_all = [], []
    with ExitStack() as stack:  # the workers are started before the clock starts (as in bench scale)
        scheduler = stack.enter_context(local_cluster(jobs)).scheduler_address if jobs > 1 else None
        for r in range(repeats):
            store = Path(tmp) / f"run-{src.name}-{r}"
            shutil.copytree(src, store)
            t0 = time.perf_counter()
            rows_all.extend(bracket_store(store, jobs=jobs, scheduler=scheduler))
            walls.append(time.perf_counter() - t0)
    wall = statistics.median(walls)
    return {"wall": wall, "rows": rows_all, "svd_seconds": t_svd,
            "ops_per_minute": 60.0 * count / wall, "svd_equivalents": wall * jobs / count / t_svd,
            **quality(rows_all)}


def quality(rows: list[dict]) -> dict:
    """Share resolved, median U/L and share closed (L = U) at eps 0.25 over summary rows (records
    with no witness at 0.25 count as unresolved and are left out of the median)."""
    at = [r for r in rows if r["eps_text"] == QUARTER.text]  # the bracket's rows print the run's Tolerance
    ratios = [r["upper"] / r["lower"] for r in at if r["upper"]]
    n = max(len(at), 1)
    return {"resolved": sum(bool(r["resolved"]) for r in at) / n,
            "median_U_over_L": statistics.median(ratios) if ratios else float("nan"),
            "closed": sum(r["upper"] == r["lower"] for r in at) / n}


def compare_modes(store: Path, modes=("basic", "fast")) -> dict:
    """Every record of ``store`` bracketed in this process with one BLAS thread in each mode, record
    by record (the modes alternate, so both see the same load): CPU seconds and quality per mode."""
    from threadpoolctl import threadpool_limits

    from softrank.fastpath.bracket.matrix import DEFAULT_EPS, bracket_matrix, resolved
    from softrank.replay.reader import list_records, read_record

    cpu = dict.fromkeys(modes, 0.0)
    rows: dict[str, list[dict]] = {m: [] for m in modes}
    with threadpool_limits(1):
        for folder in list_records(store):
            record = read_record(folder)
            p = min(record.shape)
            for mode in modes:
                t0 = time.process_time()
                result = bracket_matrix(record.a_hat, DEFAULT_EPS, mode=mode)
                cpu[mode] += time.process_time() - t0
                for e, b in result.items():
                    rows[mode].append({"eps_text": Tolerance.parse(e).text, "lower": b.lower, "upper": b.upper,
                                       "resolved": resolved(b.lower, b.upper, p)})
    out = {m: {"cpu_seconds": round(cpu[m], 4), **{f"{k}_eps_0.25": round(v, 4) for k, v in quality(rows[m]).items()}}
           for m in modes}
    out["cpu_ratio_fast_to_basic"] = round(cpu["fast"] / cpu["basic"], 4) if cpu.get("basic") else None
    return out


def _store_cases(store: Path) -> dict[str, list[Path]]:
    """The records of ``store`` grouped by family (model)."""
    from softrank.fastpath.capture.labels import record_label
    from softrank.replay.reader import list_records, read_record

    cases: dict[str, list[Path]] = {}
    for folder in list_records(store):
        cases.setdefault(record_label(read_record(folder).provenance), []).append(folder)
    return cases


def _cases(tmp: str, quick: bool, count: int, store: Path | None) -> list[tuple[str, str, Path, int]]:
    """(label, JSON key, source store, operators) per case: the families of ``store``, else real
    operators extracted (untimed) from the installed models, else synthetic ones."""
    if store is not None:
        out = []
        for label, folders in sorted(_store_cases(store).items()):
            src = Path(tmp) / f"src-{len(out)}"
            (src / "records").mkdir(parents=True)
            for f in folders:
                shutil.copytree(f, src / "records" / f.name)
            out.append((label, label, src, len(folders)))
        return out
    specs = ([("MiniLM", "minilm", 128), ("MiniLM", "minilm", 256)] if quick
             else [("SmolLM2 block", "smollm2", 128), ("MiniLM", "minilm", 256)])
    out = []
    for label, model, n in specs:
        src = Path(tmp) / f"src-{model}-{n}"
        if _real_store(src, model, n, count):
            out.append((f"{label}, N = {n}", f"{model}-{n}" if quick else model, src, count))
        else:
            make_store(src, n, count, seed=n)
            out.append((f"synthetic, N = {n}", f"synthetic-{n}", src, count))
    return out


def main(args) -> int:
    quick = bool(getattr(args, "quick", False))
    repeats = max(1, int(getattr(args, "repeats", 1) or 1))
    as_json = bool(getattr(args, "json", False))
    compare = bool(getattr(args, "compare", False))
    store = getattr(args, "target", None)
    if store is not None:
        from softrank.replay.reader import list_records

        store = Path(store)
        list_records(store)  # InputError (one line, exit 2) when it is not a store
    count, jobs = (2 if quick else 6), 2
    say = (lambda *a: None) if as_json else print
    say(f"softrank bench bracket: {'the records of ' + str(store) if store else f'{count} operators per case'}, "
        f"eps 0.15/0.25/0.35, {jobs} worker processes, median of {repeats} repeat(s); extraction not timed")
    share_all: dict[str, float] = {}
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="softrank-bench-") as tmp:
        for label, key, src, n_ops in _cases(tmp, quick, count, store):
            res = _bench_case(tmp, src, n_ops, repeats, jobs)
            fam = out[key] = {
                "operators": n_ops, "ops_per_minute": round(res["ops_per_minute"], 2),
                "svd_equivalents": round(res["svd_equivalents"], 1), "svd_ms": round(1e3 * res["svd_seconds"], 3),
                "seconds": round(res["wall"], 2), "resolved_eps_0.25": round(res["resolved"], 4),
                "median_U_over_L_eps_0.25": round(res["median_U_over_L"], 3),
                "closed_eps_0.25": round(res["closed"], 4)}
            say(f"  {label}: {res['ops_per_minute']:.1f} operators/minute ({res['wall']:.1f} s for "
                f"{n_ops}); {res['svd_equivalents']:.0f} SVD-equivalents per operator (one SVD "
                f"{1e3 * res['svd_seconds']:.2f} ms); at eps 0.25: {100 * res['resolved']:.1f}% resolved, "
                f"median U/L {res['median_U_over_L']:.2f}, {100 * res['closed']:.1f}% closed")
            _accumulate(share_all, res["rows"])
            if not as_json:
                _print_share(label, _accumulate({}, res["rows"]))
            if compare:
                fam["compare"] = c = compare_modes(src)
                say(f"  {label}, one BLAS thread, record by record: basic {c['basic']['cpu_seconds']:.1f} CPU s, "
                    f"fast {c['fast']['cpu_seconds']:.1f} CPU s (ratio {c['cpu_ratio_fast_to_basic']}); at eps 0.25 "
                    f"basic {100 * c['basic']['resolved_eps_0.25']:.1f}% / U/L {c['basic']['median_U_over_L_eps_0.25']:.2f}"
                    f" / {100 * c['basic']['closed_eps_0.25']:.1f}% closed, fast "
                    f"{100 * c['fast']['resolved_eps_0.25']:.1f}% / U/L {c['fast']['median_U_over_L_eps_0.25']:.2f}"
                    f" / {100 * c['fast']['closed_eps_0.25']:.1f}% closed")
    if as_json:
        print_json({"families": out}, sort_keys=True)
    else:
        _print_share("all cases", share_all)
    return 0


def _accumulate(share: dict[str, float], rows: list[dict]) -> dict[str, float]:
    seen = set()
    for r in rows:  # timers are per record (repeated on each eps row)
        if r["record_id"] in seen:
            continue
        seen.add(r["record_id"])
        for key, value in r.items():
            if key.startswith("time_") and value is not None:
                share[key[5:]] = share.get(key[5:], 0.0) + float(value)
    return share


def _print_share(title: str, share: dict[str, float]) -> None:
    total = sum(share.values()) or 1.0
    parts = [f"{name} {100 * share[name] / total:.1f}%" for name in COMPONENTS if name in share]
    print(f"  time share, {title}: " + ", ".join(parts))
