"""``softrank bench store STORE [--json]``: a whole store replayed twice in one run, one core.

- plain float64, what a research pipeline runs: the arrays read from the manifest (no hash
  check), the float64 softmax of the logits (``fastpath.float64.rowsoftmax64``), every upper
  witness and lower certificate checked in float64 with no rounding bound;
- validated: ``softrank.replay.engine.replay_record`` per record, after
  ``softrank.replay.reader.read_record``, exactly as ``softrank replay`` does in one process.

Every record is first read by ``softrank.replay.reader`` (not timed): a malformed one is one
line on stderr and is left out of both passes, and the exit code is 2.

With ``--json`` one object ``{"records", "float64_seconds", "validated_seconds", "ratio"}``; without,
also a breakdown by component (read, enclosure, upper, lower).  The validated breakdown comes from
a further pass that calls the engine's pieces one by one (the enclosure the engine would choose,
chi, the upper rule, the trivial and lower rules), so it adds up to about the validated time.
Times are CPU seconds of this process (``time.process_time``; both passes run on one thread), so
other jobs on a shared machine barely move them; medians over ``--repeats`` passes, in
alternation; compare the ratio, not absolute times.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from softrank.bench.lower import float64_frobenius, float64_projected
from softrank.cli.output import print_json
from softrank.fastpath.float64 import decoder_value, max_row_l1, rowsoftmax64
from softrank.replay.engine import replay_record
from softrank.replay.reader import list_records, read_record
from softrank.replay.rules import TRIVIAL_RULE, UPPER_RULE, Claim, check_lower_certificate
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError
from softrank.validated.float_bounds import binary64_environment_ok
from softrank.validated.softmax_binary64 import softmax_binary64_enclosure
from softrank.validated.softmax_enclosure import chi_upper, logits_balls, rowsoftmax_enclosure

COMPONENTS = ("read", "enclosure", "upper", "lower")


def main(args) -> int:
    store = getattr(args, "target", None)
    if not store:
        print("softrank bench store: error: give the store folder: softrank bench store STORE", file=sys.stderr)
        return 2
    with threadpool_limits(limits=1):
        return _main(args, Path(store))


def _main(args, store: Path) -> int:
    folders, errors = [], []
    for folder in list_records(store):  # the plain pass trusts the manifest: only well-formed records are timed
        try:
            read_record(folder)
            folders.append(folder)
        except InputError as err:
            errors.append(err.one_line())
    for line in errors:
        print(f"softrank bench store: error: {line} (not timed)", file=sys.stderr)
    if not folders:
        return 2
    code = _timed(args, store, folders)
    return 2 if errors else code


def _timed(args, store: Path, folders: list[Path]) -> int:
    repeats = 1 if args.quick else args.repeats
    as_json = getattr(args, "json", False)
    runs = {"float64": [], "validated": [], "parts": []}
    for _ in range(repeats):
        runs["float64"].append(float64_pass(folders))
        runs["validated"].append(validated_pass(folders))
        if not as_json:
            runs["parts"].append(validated_parts(folders))
    f64 = {c: statistics.median(r[c] for r in runs["float64"]) for c in COMPONENTS}
    t_f = statistics.median(sum(r.values()) for r in runs["float64"])
    t_v = statistics.median(runs["validated"])
    out = {"records": len(folders), "float64_seconds": t_f, "validated_seconds": t_v,
           "ratio": t_v / t_f if t_f > 0 else float("inf")}
    if as_json:
        print_json(out)
        return 0
    val = {c: statistics.median(r[c] for r in runs["parts"]) for c in COMPONENTS}
    print(f"softrank bench store {store}: {len(folders)} records, median of {repeats} passes, one BLAS thread")
    print(f"{'component':<11} {'float64 s':>10} {'validated s':>12} {'ratio':>7}")
    for c in COMPONENTS:
        print(f"{c:<11} {f64[c]:>10.3f} {val[c]:>12.3f} {_ratio(val[c], f64[c]):>7}")
    print(f"{'sum':<11} {sum(f64.values()):>10.3f} {sum(val.values()):>12.3f} "
          f"{_ratio(sum(val.values()), sum(f64.values())):>7}")
    print(f"replay_record per record (as softrank replay): validated {t_v:.3f} s, float64 {t_f:.3f} s, "
          f"ratio {out['ratio']:.2f} (target <= 3)")
    return 0


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b > 0 else "-"


class _Clock:
    """Adds the time since the last call to a component."""

    def __init__(self):
        self.parts = dict.fromkeys(COMPONENTS, 0.0)
        self.t = time.process_time()

    def charge(self, component: str) -> None:
        now = time.process_time()
        self.parts[component] += now - self.t
        self.t = now


def _load(folder: Path, ref: dict) -> np.ndarray:
    return np.load(folder / ref["path"])


def _read_plain(folder: Path) -> tuple[dict, dict, list]:
    """The manifest, the operator's arrays and, per tolerance, (eps, witness arrays, certificates)."""
    doc = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    op = doc["operator"]
    arrays = {k: _load(folder, op[k]) for k in ("logits", "queries", "keys", "bias") if isinstance(op.get(k), dict)}
    tols = []
    for tol in doc["tolerances"]:
        up = tol.get("upper")
        xy = None if up is None else (_load(folder, up["X"]), _load(folder, up["Y"]))
        certs = [(c["kind"], c["lower"], {k: _load(folder, v) for k, v in c.items() if isinstance(v, dict)})
                 for c in tol.get("lower") or []]
        tols.append((Tolerance.from_record(tol["eps"]).binary64, xy, certs))
    return op, arrays, tols


def _float64_lower(a: np.ndarray, kind: str, lower: int, data: dict, eps: float) -> bool:
    if kind == "decoder":
        return decoder_value(a, data["rows"], data["W"], eps) < 1
    if kind == "projected":
        return float64_projected(a, data["rows"], data["W"], lower, eps)
    return float64_frobenius(a, lower, eps)


def float64_pass(folders: list[Path]) -> dict[str, float]:
    """Seconds per component of the plain float64 replay of every record."""
    clock = _Clock()
    for folder in folders:
        op, arrays, tols = _read_plain(folder)
        clock.charge("read")
        if "logits" in arrays:
            h = arrays["logits"]
        else:
            h = float(op["scale"]) * (arrays["queries"] @ arrays["keys"].T)
            if "bias" in arrays:
                h = h + arrays["bias"]
        a = rowsoftmax64(h)
        clock.charge("enclosure")
        for eps, xy, _ in tols:
            if xy is not None:
                _ = max_row_l1(a, *xy) <= eps
        clock.charge("upper")
        for eps, _, certs in tols:
            for kind, lower, data in certs:
                _ = _float64_lower(a, kind, lower, data, eps)
        clock.charge("lower")
    return clock.parts


def validated_pass(folders: list[Path]) -> float:
    """Seconds of ``read_record`` + ``replay_record`` over every record (as ``softrank replay``)."""
    t = time.process_time()
    for folder in folders:
        replay_record(read_record(folder))
    return time.process_time() - t


def _enclosure(rec):
    """The enclosure ``replay_record`` uses, and chi (None, None when A cannot be enclosed)."""
    operator = dict(logits=rec.logits, queries=rec.queries, keys=rec.keys, scale=rec.scale, bias=rec.bias)
    try:
        enc = softmax_binary64_enclosure(**operator, mask=rec.mask) if binary64_environment_ok() else None
        if enc is None:
            enc = rowsoftmax_enclosure(logits_balls(**operator), mask=rec.mask)
        return enc, chi_upper(enc, rec.a_hat)
    except (ArithmeticError, ValueError):
        return None, None


def validated_parts(folders: list[Path]) -> dict[str, float]:
    """Seconds per component of the validated replay, the engine's pieces called one by one."""
    clock = _Clock()
    for folder in folders:
        rec = read_record(folder)
        clock.charge("read")
        enc, chi = _enclosure(rec)
        clock.charge("enclosure")
        if enc is None:
            continue
        for tol in rec.tolerances:
            base = Claim(enclosure=enc, chi=chi, eps=tol.eps, strict=False, shape=rec.shape, a_hat=rec.a_hat,
                         operator_assumption=rec.operator_assumption)
            if tol.upper is not None:
                UPPER_RULE.check(replace(base, witness=tol.upper))
            clock.charge("upper")
            TRIVIAL_RULE.check(base)
            for cert in tol.lower:
                check_lower_certificate(replace(base, cert=cert))
            clock.charge("lower")
    return clock.parts
