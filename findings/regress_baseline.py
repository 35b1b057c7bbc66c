"""Baselines of ``softrank regress``: ``--write-baseline FILE.json`` writes a replay's validated
results per record and eps (status, validated ends, witness outcome, validated verdict per budget);
``--against BASELINE`` (a replay folder or such a file) compares, one line per change (the command
line prints them and exits 1 on any)."""

from __future__ import annotations

import json
from pathlib import Path

from softrank.fastpath.store.files import atomic_write, load_json_text, read_text_file
from softrank.findings.replay_table import read_replay_table
from softrank.errors import InputError

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
        return replay_baseline(path)
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


def replay_baseline(folder) -> dict:
    """The baseline of the replay tables in FOLDER (each row checked as it is read)."""
    return baseline(read_replay_table(folder, "replay.parquet"), read_replay_table(folder, "verdicts.parquet"))


def write_baseline(current: dict, path) -> None:
    """A baseline as JSON at PATH (atomic), as ``--write-baseline`` writes it."""
    text = json.dumps(current, indent=1, sort_keys=True) + "\n"
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))
