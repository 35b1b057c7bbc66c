"""The held-out construction benchmark (``softrank study constructions --panel full``).

On sources disjoint from the main panel's (stdlib passages of other modules than those ``softrank
run --panel PANEL`` reads, chosen by seed 1), the panel's (layer, head) pairs are extracted, bracketed
at eps 0.25 with every upper construction searched for its own least rank (``--mode full``) and
replayed with the validated checker.  Per family and construction c, the statistic is the median
over operators of rank_c / max(L, 1), L the validated lower end, "best" taking the least rank over
the six constructions; a construction that found no witness counts as min(m, N).  Its 95% interval
resamples the sources with replacement (``BOOTSTRAP`` draws, percentile interval): operators of one
source share a passage, so they are not independent draws.

Two more views of the same brackets: each construction's rank relative to alternating l1's
(median of rank_c / rank_altl1 over the operators where alternating l1 found a witness within its
rank cap, the same source-bootstrap interval), and the failed attempts, the
ranks k >= 1 at which a construction was tried and missed eps (``failed_C`` in ``bracket.csv``),
sorted by what the validated bracket [L, U] says of them: k < L "impossible" (the lower
certificate proves that no rank-k matrix is within eps, so every construction had to miss), L <= k
< U "open" (neither end decides), k >= U "missed" (a validated witness of rank U <= k exists, so the
construction fell short of what is possible).
"""

from __future__ import annotations

import random
import statistics

from softrank.fastpath.bracket.matrix import ALL_CONSTRUCTIONS
from softrank.errors import InputError

EPS = "0.25"
REFERENCE = "altl1"  # the construction the others are compared with
ATTEMPT_CLASSES = ("impossible", "open", "missed")
SEED = 1
BOOTSTRAP = 2000


def _module(source_id: str) -> str:
    return source_id.split(":", 1)[-1].split("#")[0]


def held_out_passages(panel: str = "full", count: int | None = None, seed: int = SEED, keep=None) -> list:
    """``count`` (default: the panel's) stdlib passages none of whose modules the panel reads (and,
    with ``keep``, for which ``keep(passage)`` holds)."""
    from softrank.fastpath.capture.panels import PANELS
    from softrank.fastpath.capture.sources import stdlib_passages

    count = count or max(opts["sources"] for opts in PANELS[panel].values())
    used = {_module(p.source_id) for opts in PANELS[panel].values()
            for p in stdlib_passages(opts["sources"], opts["seed"])}
    out = []
    for p in stdlib_passages(4 * count, seed):
        if _module(p.source_id) not in used and len(out) < count and (keep is None or keep(p)):
            out.append(p)
    if len(out) < count:
        raise InputError("study constructions", "sources", f"only {len(out)} held-out passages, need {count}")
    return out


def extract_held_out(store, panel: str, per_model: dict[str, int], progress=None) -> tuple[list, dict]:
    """Extract ``per_model`` operators of each model on the held-out passages into ``store``: the
    passages every model reads as a whole pass of the panel's length (so the operators have the
    main panel's shapes), and the record ids per model."""
    from softrank.fastpath.capture.extract import extract_to_store
    from softrank.fastpath.capture.models import load_model
    from softrank.fastpath.capture.panels import PANELS

    models = {name: load_model(name) for name in per_model}

    def whole(p) -> bool:
        tokens = {name: PANELS[panel][name]["tokens"] for name in models}
        return all(len(lm.encode_text(p.text, tokens[name])) >= tokens[name] for name, lm in models.items())

    passages = held_out_passages(panel, keep=whole)
    texts = [(p.source_id, p.text) for p in passages]
    out, done, planned = {}, 0, sum(per_model.values())
    for name, count in per_model.items():
        opts = {k: v for k, v in PANELS[panel][name].items() if k not in ("sources", "max_operators")}
        report = None if progress is None else (lambda k, _total, before=done: progress(before + k, planned))
        out[name] = extract_to_store(models[name], store, texts=texts, max_operators=count, progress=report, **opts)
        done += len(out[name])
    return passages, out


def _int(v):
    try:
        return int(float(v))
    except (TypeError, ValueError):
        return None


def _ranks(text) -> list[int]:
    return [int(t) for t in (text or "").split()]


def classify_attempts(ranks: list[int], lower: int, upper: int | None) -> dict[str, int]:
    """Failed attempts at ``ranks`` by the validated bracket [lower, upper] (module docstring)."""
    out = dict.fromkeys(ATTEMPT_CLASSES, 0)
    for k in ranks:
        cls = "impossible" if k < lower else "missed" if upper is not None and k >= upper else "open"
        out[cls] += 1
    return out


def operator_ratios(bracket_rows: list[dict], replay_rows: list[dict], eps: float) -> list[dict]:
    """Per operator at ``eps``: family, source, validated L and U, each construction's rank / max(L, 1),
    its rank relative to alternating l1's (``rel``) and its failed attempts by class (``failed``)."""
    replayed = {r["record_id"]: r for r in replay_rows
                if r.get("status") == "ok" and abs(float(r.get("eps_value") or "nan") - eps) < 1e-12}
    out = []
    for r in bracket_rows:
        rep = replayed.get(r["record_id"])
        if rep is None or abs(float(r["eps_value"]) - eps) >= 1e-12 or _int(rep.get("validated_lower")) is None:
            continue
        p, lower = min(int(r["m"]), int(r["N"])), _int(rep["validated_lower"])
        upper = _int(rep.get("validated_upper"))
        ranks = {c: _int(r.get(f"rank_{c}")) or p for c in ALL_CONSTRUCTIONS}
        ranks["best"] = min(ranks.values())
        out.append({"family": rep["family"], "source": rep["source_id"], "record_id": r["record_id"],
                    "lower": max(lower, 1), "upper": upper,
                    **{c: k / max(lower, 1) for c, k in ranks.items()},
                    "rel": ({c: ranks[c] / ranks[REFERENCE] for c in ALL_CONSTRUCTIONS}
                            if _int(r.get(f"rank_{REFERENCE}")) else None),
                    "failed": {c: classify_attempts(_ranks(r.get(f"failed_{c}")), lower, upper)
                               for c in ALL_CONSTRUCTIONS}})
    return out


def bootstrap_interval(by_source: dict[str, list[float]], draws: int = BOOTSTRAP, seed: int = 0) -> list[float]:
    """95% percentile interval of the pooled median, the sources resampled with replacement."""
    sources = sorted(by_source)
    rng = random.Random(seed)
    meds = sorted(statistics.median([x for s in (rng.choice(sources) for _ in sources) for x in by_source[s]])
                  for _ in range(draws))
    return [meds[int(0.025 * draws)], meds[min(draws - 1, int(0.975 * draws))]]


def _median_ci(by_source: dict[str, list[float]], draws: int) -> dict:
    return {"median": statistics.median(x for v in by_source.values() for x in v),
            "ci95": bootstrap_interval(by_source, draws)}


def _by_source(ops: list[dict], value) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = {}
    for o in ops:
        groups.setdefault(o["source"], []).append(value(o))
    return groups


def summarise(ops: list[dict], draws: int = BOOTSTRAP) -> dict[str, dict]:
    """family -> operators, sources; per construction (and "best") the median of rank / L with its
    95% source-bootstrap interval; ``relative_to_altl1`` (absent when alternating l1 found no
    witness in the family): per construction the median of its rank / alternating l1's over the
    ``operators_with_altl1`` where it found one, with interval; ``failed_attempts``: per
    construction (and "all") the counts by class."""
    out = {}
    for fam in sorted({o["family"] for o in ops}):
        sel = [o for o in ops if o["family"] == fam]
        row = {"operators": len(sel), "sources": len({o["source"] for o in sel})}
        for c in ("best", *ALL_CONSTRUCTIONS):
            row[c] = _median_ci(_by_source(sel, lambda o, c=c: o[c]), draws)
        with_ref = [o for o in sel if o["rel"] is not None]  # the reference found a witness
        row[f"operators_with_{REFERENCE}"] = len(with_ref)
        if with_ref:
            row["relative_to_" + REFERENCE] = {c: _median_ci(_by_source(with_ref, lambda o, c=c: o["rel"][c]), draws)
                                               for c in ALL_CONSTRUCTIONS}
        failed = {c: {k: sum(o["failed"][c][k] for o in sel) for k in ATTEMPT_CLASSES} for c in ALL_CONSTRUCTIONS}
        failed["all"] = {k: sum(f[k] for f in failed.values()) for k in ATTEMPT_CLASSES}
        row["failed_attempts"] = failed
        out[fam] = row
    return out
