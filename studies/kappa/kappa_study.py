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
import time
from pathlib import Path

from softrank.fastpath.runner import RecordsJob, limit_threads
from softrank.fastpath.store.files import write_json, write_text
from softrank.studies.kappa.kappa_operator import DEFAULT_RANKS, KAPPA_TOL, operator_study
from softrank.errors import InputError


def _worker(task):
    limit_threads()
    folder, eps_list, ranks, cache = task
    try:
        row = operator_study(folder, eps_list, ranks)
    except InputError as err:  # a malformed record: its one line names the file and field
        return {"record_id": Path(folder).name, "error": str(err), "bad_input": True}
    except Exception as err:  # one operator's failure is reported, the study goes on
        return {"record_id": Path(folder).name, "error": f"{type(err).__name__}: {err}"}
    # resume state, read back by --resume (NaN kept as NaN), written atomically; a folder or a special
    # file in its place is an OSError naming it (one line on the command line)
    write_text(cache, json.dumps(row))
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
    (``softrank.findings.replay_table.check_replay_row``: integers, finite, 0 <= L <= U, a known status,
    valid JSON lists): a damaged table is an ``InputError`` naming the file, row and column."""
    from softrank.findings.replay_table import check_replay_row, read_parquet_rows

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
    stderr saying so; a special file there (a FIFO, a folder) is never read."""
    import sys

    from softrank.replay.reader import read_regular_file

    try:
        old = json.loads(read_regular_file(cache).decode("utf-8"))  # checked on the open file
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
        from softrank.studies.kappa import kappa_corr as kcorr

        kcorr.study_rows([old], {record_id: brackets.get(record_id, {})})  # what the statistics read of it
        kcorr.summarise([old], [], [], 0.0, 0.0)
    except Exception as err:  # any defect of a hand-edited or truncated entry: the operator is redone
        why = ": ".join(filter(None, (type(err).__name__, " ".join(str(err).split())[:100])))
        print(f"{cache}: corrupt cache entry ({why}); recomputed", file=sys.stderr)
        return None
    return old


def _progress_of_new(progress, reused: int):
    """``progress(done, total)`` over the operators computed in this run (not those reused)."""
    return lambda done, total: progress(done - reused, total - reused)


def run_kappa_study(store, replay_dir, out, ranks=DEFAULT_RANKS, jobs: int = 1, resume: bool = False,
                    max_minutes: float | None = None, records: str | None = None, limit: int | None = None,
                    n_boot: int = 2000, progress=None) -> dict:
    """The study on every operator of ``store`` with a bracket in ``replay_dir``; writes
    operators/<id>.json, rows.csv, correlations.csv, correlations.md, study.json, kappa-study.png."""
    from softrank.fastpath.store.files import write_csv
    from softrank.studies.kappa import kappa_corr as kcorr

    t0, started = time.perf_counter(), time.time()
    brackets = read_brackets(replay_dir)
    chosen = select_operators(store, brackets, records, limit)
    opdir = Path(out) / "operators"
    opdir.mkdir(parents=True, exist_ok=True)
    reused = {}
    for it in chosen:
        eps_list = sorted(brackets.get(it["record_id"], {}))  # none for a stray entry (it fails when read)
        old = _cached(opdir / f"{it['record_id']}.json", it["record_id"], ranks, eps_list, brackets) if resume else None
        if old is not None:
            reused[it["record_id"]] = old  # the same ranks and tolerances: reused
    job = RecordsJob([it["folder"] for it in chosen])
    deadline = started + 60 * max_minutes if max_minutes else None  # no operator starts after it
    done = job.run(_worker, lambda f: (f, sorted(brackets.get(Path(f).name, {})), tuple(ranks),
                                       str(opdir / f"{Path(f).name}.json")),
                   jobs=jobs, payloads=reused, deadline=deadline,
                   progress=None if progress is None else _progress_of_new(progress, len(reused)))
    ops = [reused[n] for n in job.names() if n in reused] + [done[n] for n in job.names() if n in done and n not in reused]
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
