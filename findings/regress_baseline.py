"""Baselines of ``softrank regress``: ``--write-baseline FILE.json`` writes a replay's validated
results per record and eps (status, validated ends, witness outcome, validated verdict per budget);
``--against BASELINE`` (a replay folder or such a file) prints every change and exits 1 on any."""

from __future__ import annotations

import json
from pathlib import Path

from softrank.cli.paths import check_not_input, load_json_text, read_text_file, replay_tables
from softrank.fastpath.store.replay_table import read_replay_table
from softrank.validated.errors import InputError

BASELINE_SCHEMA = "softrank.replay-baseline"
COMPARED = ("validated_lower", "validated_upper", "upper_outcome")


def baseline(replay_rows: list[dict], verdict_rows: list[dict]) -> dict:
    """Per record: status and, per eps, the validated ends, the witness outcome and the verdict per k."""
    records: dict[str, dict] = {}
    for r in replay_rows:
        rec = records.setdefault(r["record_id"], {"status": r.get("status"), "eps": {}})
        if r.get("status") == "contradiction":
            rec["status"] = "contradiction"
        if r.get("eps") is not None:
            rec["eps"][r["eps"]] = {**{c: r.get(c) for c in COMPARED}, "status": r.get("status"), "verdicts": {}}
    for v in verdict_rows:
        cell = records.get(v["record_id"], {}).get("eps", {}).get(v.get("eps"))
        if cell is not None:
            cell["verdicts"][str(v.get("k"))] = v.get("validated_verdict")
    return {"schema": BASELINE_SCHEMA, "version": 1, "records": dict(sorted(records.items()))}


def load_baseline(path) -> dict:
    """A baseline from a replay folder or a baseline JSON."""
    path = Path(path)
    if path.is_dir():
        return baseline(read_replay_table(path, "replay.parquet"), read_replay_table(path, "verdicts.parquet"))
    data = load_json_text(read_text_file(path, "against"), path, "against")
    if not isinstance(data, dict) or data.get("schema") != BASELINE_SCHEMA or not isinstance(data.get("records"), dict):
        raise InputError(str(path), "schema", f"not a replay baseline (expected schema {BASELINE_SCHEMA!r})")
    return data


def changes(expected: dict, actual: dict) -> list[str]:
    """One line per difference between two baselines, by record and eps."""
    exp, act = expected["records"], actual["records"]
    lines = [f"{rid}: missing from the replay" for rid in sorted(set(exp) - set(act))]
    lines += [f"{rid}: new record (not in the baseline)" for rid in sorted(set(act) - set(exp))]
    for rid in sorted(set(exp) & set(act)):
        e, a = exp[rid], act[rid]
        if e.get("status") != a.get("status"):
            lines.append(f"{rid}: status {e.get('status')} -> {a.get('status')}")
        for eps in sorted(set(e.get("eps", {})) | set(a.get("eps", {}))):
            ec, ac = e.get("eps", {}).get(eps), a.get("eps", {}).get(eps)
            if ec is None or ac is None:
                lines.append(f"{rid} eps {eps}: {'new eps' if ec is None else 'eps missing from the replay'}")
                continue
            diffs = [f"{c} {ec.get(c)} -> {ac.get(c)}" for c in COMPARED + ("status",) if ec.get(c) != ac.get(c)]
            ev, av = ec.get("verdicts", {}), ac.get("verdicts", {})
            diffs += [f"verdict k={k} {ev.get(k)} -> {av.get(k)}" for k in sorted(set(ev) | set(av), key=_k)
                      if ev.get(k) != av.get(k)]
            if diffs:
                lines.append(f"{rid} eps {eps}: " + "; ".join(diffs))
    return lines


def _k(text: str):
    return (0, int(text)) if text.lstrip("-").isdigit() else (1, text)


def check_baseline_target(args) -> None:
    """``--write-baseline`` is never one of the tables read (REPLAY_DIR's, or those of an
    ``--against`` folder), nor the ``--against`` file itself (it is written before that is read)."""
    inputs = replay_tables(args.replay_dir)
    against = getattr(args, "against", None)
    if against is not None:
        inputs += replay_tables(against) if Path(against).is_dir() else [(against, f"the --against baseline {against}")]
    check_not_input(args.write_baseline, "write-baseline", inside=inputs)


def baselines(args, folder: Path, quiet: bool = False):
    """``--write-baseline`` and ``--against``: 1 when the replay differs from the baseline.  With
    ``quiet`` nothing is printed and the result is (exit code, the change lines or None)."""
    from softrank.fastpath.store.files import atomic_write

    against, write = getattr(args, "against", None), getattr(args, "write_baseline", None)
    if against is None and write is None:
        return (0, None) if quiet else 0
    current = baseline(read_replay_table(folder, "replay.parquet"), read_replay_table(folder, "verdicts.parquet"))
    if write is not None:
        check_baseline_target(args)  # over an input table or the --against file: refused (checked first in run)
        text = json.dumps(current, indent=1, sort_keys=True) + "\n"
        atomic_write(write, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
        if not quiet:
            print(f"regress: baseline of {len(current['records'])} records written to {write}")
    if against is None:
        return (0, None) if quiet else 0
    lines = changes(load_baseline(against), current)
    if quiet:
        return (1 if lines else 0), lines
    for line in lines:
        print(f"CHANGED {line}")
    print(f"regress against {against}: {len(lines)} change{'s' if len(lines) != 1 else ''} "
          f"({len(current['records'])} records compared)")
    return 1 if lines else 0
