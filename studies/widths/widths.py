"""The block-width study: do fixed rank budgets stay feasible as the common-prefix block widens?

For each source (a stdlib passage that gives at least ``tokens`` tokens) one pass of ``tokens``
tokens is captured, and for each chosen (layer, head) the common-prefix blocks of every width N
are taken from that same pass (keys 0..N-1, queries P-N..P-1; ``fastpath/capture/operators.py``): the
widths are compared on the same sources and heads.  Every block is bracketed in float64 at one eps
(``fastpath/bracket/store.py``) and replayed by the trusted checker (``replay/engine.py``).  Per
(width N, budget k) the cell holds the share of operators whose *validated* verdict is feasible
(validated U <= k), impossible (validated L > k) or unresolved.

The class label per budget (the research page's two labels) is decided by a rule fixed before the
run: **declines with width** when the feasible share at the widest width is at least
``DECLINE_POINTS`` percentage points below the narrowest's and the paired one-sided exact sign
test (operators paired by source, layer and head; discordant pairs only) gives p < ``ALPHA``;
otherwise **trend unresolved**.
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

from softrank.replay.tolerance import Tolerance
from softrank.fastpath.runner import RecordsJob, limit_threads
from softrank.replay.engine import validated_verdict as verdict
from softrank.errors import InputError

STUDY_EPS = "0.25"
DEFAULT_WIDTHS = (64, 128, 256, 512)
DEFAULT_BUDGETS = (8, 16, 32)
HEADS_PER_SOURCE = 6  # operators per source (the research page: 6 fixed heads per document)
DECLINE_POINTS = 10  # percentage points, compared exactly
ALPHA = 0.05
DECLINES = "declines with width"
UNRESOLVED = "trend unresolved"
VERDICTS = ("feasible", "impossible", "unresolved")



def aggregate(rows: list[dict], budgets) -> list[dict]:
    """One cell per (width N, budget k): the validated feasible / impossible / unresolved shares
    (and the float64 feasible share) over the rows of that width."""
    by_width: dict[int, list[dict]] = defaultdict(list)
    for row in rows:
        by_width[int(row["N"])].append(row)
    cells = []
    for n in sorted(by_width):
        group = by_width[n]
        for k in budgets:
            counts = dict.fromkeys(VERDICTS, 0)
            for row in group:
                counts[verdict(k, row["validated_lower"], row["validated_upper"])] += 1
            f64 = sum(verdict(k, row["float64_lower"], row["float64_upper"]) == "feasible" for row in group)
            cells.append({"N": n, "k": int(k), "operators": len(group),
                          **{v: counts[v] / len(group) for v in VERDICTS}, "float64_feasible": f64 / len(group)})
    return cells


def sign_test(worse: int, better: int) -> float:
    """One-sided exact sign test: P(X >= worse) for X ~ Binomial(worse + better, 1/2)."""
    n = worse + better
    if n == 0:
        return 1.0
    return sum(math.comb(n, i) for i in range(worse, n + 1)) / 2 ** n


def classify(rows: list[dict], budgets) -> list[dict]:
    """The class label per budget (module docstring): narrowest against widest width, paired."""
    widths = sorted({int(r["N"]) for r in rows})
    out = []
    for k in budgets:
        if len(widths) < 2:
            out.append({"k": int(k), "class": UNRESOLVED, "drop_points": 0.0, "p_value": 1.0, "pairs": 0})
            continue
        ends = {}
        for n in (widths[0], widths[-1]):
            ends[n] = {_pair(r): verdict(k, r["validated_lower"], r["validated_upper"]) == "feasible"
                       for r in rows if int(r["N"]) == n}
        narrow, wide = ends[widths[0]], ends[widths[-1]]
        drop = 100 * (Fraction(sum(narrow.values()), len(narrow)) - Fraction(sum(wide.values()), len(wide)))
        paired = set(narrow) & set(wide)
        worse = sum(narrow[p] and not wide[p] for p in paired)
        better = sum(wide[p] and not narrow[p] for p in paired)
        p_value = sign_test(worse, better)
        label = DECLINES if drop >= DECLINE_POINTS and p_value < ALPHA else UNRESOLVED
        out.append({"k": int(k), "class": label, "drop_points": float(drop), "p_value": p_value,
                    "pairs": len(paired)})
    return out


def _pair(row: dict) -> tuple:
    return row["source_id"], row["layer"], row["head"]


def long_passages(lm, count: int, tokens: int, seed: int) -> list[tuple[str, str]]:
    """``count`` stdlib passages (seeded) whose text gives at least ``tokens`` tokens."""
    from softrank.fastpath.capture.sources import STDLIB_MODULES, stdlib_passages

    pool = stdlib_passages(min(3 * count + 4, 2 * len(STDLIB_MODULES)), seed)
    picks = [(p.source_id, p.text) for p in pool if len(lm.encode_text(p.text, tokens)) >= tokens][:count]
    if len(picks) < count:
        raise InputError("arguments", "sources", f"only {len(picks)} passages give {tokens} tokens; "
                                                 f"{count} requested")
    return picks


def replay_one(folder: str, tolerance: Tolerance | None = None) -> list[dict]:
    """The study's row per tolerance of one bracketed record (only ``tolerance``, compared exactly,
    when given): its pair, width, float64 and validated ends."""
    from softrank.replay.engine import replay_record
    from softrank.replay.reader import read_record
    from softrank.replay.support import refuse_masked

    limit_threads()
    record = read_record(folder)
    refuse_masked(record)
    prov = record.provenance
    rows = []
    for t in replay_record(record).tolerances:
        if tolerance is not None and t.eps != tolerance.value:
            continue
        rows.append({"record_id": record.record_id, "N": int(prov.get("block_width") or record.shape[1]),
                     "source_id": prov.get("source_id"), "layer": prov.get("layer"), "head": prov.get("head"),
                     "eps": float(t.eps), "float64_lower": _tol(record, t.eps).float64_lower,
                     "float64_upper": _tol(record, t.eps).float64_upper,
                     "validated_lower": t.validated_lower, "validated_upper": t.validated_upper})
    return rows


def replay_entry(task: tuple) -> tuple[list[dict], tuple[str, str, str] | None]:
    """``replay_one(folder, tolerance)``'s rows, or none and the ``InputError``'s (where, field,
    message) of a record that cannot be read (plain data: it crosses to a worker and back)."""
    try:
        return replay_one(*task), None
    except InputError as err:
        return [], (err.where, err.field, err.message)


def _tol(record, eps):
    return next(t for t in record.tolerances if t.eps == eps)


def replay_store_rows(store, jobs: int = 1, progress=None, errors: list | None = None,
                     tolerance: Tolerance | None = None) -> list[dict]:
    """``replay_one`` over every entry of ``records/`` (``jobs`` workers).  With an ``errors`` list,
    a record that cannot be read (an entry that is not a folder among them) adds its one-line error
    there and the others go on; without one, it raises ``InputError``."""
    from softrank.replay.reader import record_entries

    job = RecordsJob(record_entries(store))
    payloads = job.run(replay_entry, lambda f: (f, tolerance), jobs=jobs, progress=progress)
    results = [payloads[name] for name in job.names()]  # in store order
    rows = [row for part, _ in results for row in part]
    failed = [InputError(*error) for _, error in results if error]
    if failed and errors is None:
        raise failed[0]
    if errors is not None:
        errors.extend(err.one_line() for err in failed)
    return rows


def extract_blocks(model, store, widths, operators: int, sources: int | None = None, seed: int = 0,
                   tokens: int | None = None, device=None, progress=None) -> list[str]:
    """Extract ``operators`` blocks per width, the same (source, layer, head) at every width."""
    from softrank.fastpath.capture.extract import extract_to_store
    from softrank.fastpath.capture.models import LoadedModel, load_model

    widths = sorted({int(w) for w in widths})
    tokens = tokens or 2 * widths[-1]
    sources = sources or max(1, math.ceil(operators / HEADS_PER_SOURCE))
    lm = model if isinstance(model, LoadedModel) else load_model(str(model), device=device)
    if lm.kind != "decoder":
        raise InputError(lm.name, "model", f"the width study needs a causal decoder, not a {lm.kind} model")
    texts = long_passages(lm, sources, tokens, seed)
    return extract_to_store(lm, store, texts=texts, widths=widths, tokens=tokens,
                            max_operators=operators * len(widths), seed=seed, progress=progress)


def run_study(model, out, widths=DEFAULT_WIDTHS, budgets=DEFAULT_BUDGETS, operators: int = 16, eps=STUDY_EPS,
              jobs: int = 2, reuse: bool = False, progress=None, errors: list | None = None,
              **extract_options) -> dict:
    """Extract, bracket and replay into ``out`` (``out/store``, ``out/study.csv``,
    ``out/cells.csv``, ``out/study.json``); returns ``{"cells", "classes", "seconds", "settings"}``.
    ``eps``: one tolerance (``Tolerance.parse``: text, a ``Fraction``, or a float read as the
    decimal it prints as).
    ``progress(stage, done, total)`` is called as each stage advances.  With an ``errors`` list, a
    record that cannot be read adds its one-line error there and the study goes on without it
    (without one, it raises ``InputError``)."""
    import time

    from softrank.fastpath.bracket.store import bracket_store
    from softrank.fastpath.store.files import write_csv, write_json

    out, seconds, tolerance = Path(out), {}, Tolerance.parse(eps)
    store = out / "store"
    have = (store / "records").is_dir() and any((store / "records").iterdir())
    if have and not reuse:
        raise InputError(str(store), "store", "already holds records; remove it, choose another --out, or pass --reuse")
    report = (lambda stage: (lambda done, total: progress(stage, done, total))) if progress else (lambda stage: None)
    t0 = time.perf_counter()
    if not have:
        extract_blocks(model, store, widths, operators, progress=report("extract"), **extract_options)
        seconds["extract"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        bracket_store(store, eps_list=[tolerance], jobs=jobs, progress=report("bracket"))
        seconds["bracket"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rows = replay_store_rows(store, jobs=jobs, progress=report("replay"), errors=errors, tolerance=tolerance)
    seconds["replay"] = time.perf_counter() - t0
    result = {"cells": aggregate(rows, budgets), "classes": classify(rows, budgets), "seconds": seconds,
              "settings": {"model": str(getattr(model, "name", model)), "widths": sorted(set(widths)),
                           "budgets": list(budgets), "operators_per_width": operators,
                           "eps": tolerance.text}}
    write_csv(out / "study.csv", rows)
    write_csv(out / "cells.csv", result["cells"])
    write_json(out / "study.json", result)
    return result
