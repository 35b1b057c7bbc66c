"""The lower certificates on the real panel, with a small producer independent of the fast path:

1. extract operators from the two real models with ``softrank.cli.extract.extract_to_store``
   (default panels: 64 MiniLM operators at 256 x 256, 54 SmolLM2 common-prefix blocks at N = 128);
2. bracket each one in plain float64 with the small untrusted producer below (decoder,
   Frobenius and projected lower certificates; truncated-SVD upper witness), writing the
   certificates and float64 verdicts into a second store with ``RecordWriter.from_record``;
3. replay that store with ``softrank.findings.replay_job.replay_store`` and run ``softrank regress``.

Usage::

    .venv/bin/python tests/real_panel.py OUT [--minilm 64] [--smollm2 54] [--eps 0.1,0.25] [--jobs 1]

Prints the share of (record, eps) whose validated lower end equals the float64 lower end.
Not a test module (pytest collects test_*.py only); tests/test_real_panel.py runs a small one.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.linalg

BUDGETS = (8, 16, 32)


# -- the untrusted float64 producer ------------------------------------------------------------

def decoder_sum(a, rows, w, eps) -> float:
    p = len(rows)
    return float(np.abs(a[rows] @ w - np.eye(p)).sum(axis=1).max() + eps * np.abs(w).sum(axis=1).max())


def best_decoder(a: np.ndarray, eps: float):
    """Largest p (binary search over prefixes of a pivoted-QR row order) with float64 sum < 1."""
    m, n = a.shape
    _, _, piv = scipy.linalg.qr(a.T, pivoting=True, mode="economic")
    best = None

    def attempt(p):
        rows = np.sort(piv[:p]).astype(np.int64)
        w = np.linalg.pinv(a[rows])
        s = decoder_sum(a, rows, w, eps)
        return (rows, w, s) if s < 1 else None

    lo, hi = 1, min(m, n)
    while lo <= hi:
        mid = (lo + hi) // 2
        got = attempt(mid)
        if got is not None:
            best, lo = got, mid + 1
        else:
            hi = mid - 1
    return best


def tail_lower(s: np.ndarray, threshold: float) -> int:
    tails = np.cumsum((s ** 2)[::-1])[::-1]
    ok = np.nonzero(tails > threshold)[0]
    return int(ok.max()) + 1 if ok.size else 0


def best_projected(a: np.ndarray, eps: float, svd):
    m, n = a.shape
    rows = np.arange(m, dtype=np.int64)
    _, s, vt = svd
    best = (0, None)
    for q in sorted({16, 32, 64, 128, min(m, n)}):
        if q > min(m, n) or s[q - 1] <= 0:
            continue
        w = vt[:q].T / s[:q]
        sv = np.linalg.svd(a @ w, compute_uv=False)
        omega2 = float(np.max(np.sum(w * w, axis=1)))
        lower = tail_lower(sv, m * eps * eps * omega2)
        if lower > best[0]:
            best = (lower, w)
    return best[0], rows, best[1]


def tsvd_upper(a: np.ndarray, eps: float, svd):
    u, s, vt = svd

    def err(k):
        return float(np.abs(a - (u[:, :k] * s[:k]) @ vt[:k]).sum(axis=1).max())

    lo, hi = 1, len(s)
    if err(hi) > eps:
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        if err(mid) <= eps:
            hi = mid
        else:
            lo = mid + 1
    return u[:, :lo] * s[:lo], vt[:lo].T.copy()


def bracket_store(src: Path, dst: Path, eps_list: list[float]) -> int:
    from softrank.fastpath.store.writer import RecordWriter, write_index
    from softrank.replay.reader import list_records, read_record

    count = 0
    for folder in list_records(src):
        rec = read_record(folder)
        a = rec.a_hat
        m = a.shape[0]
        w = RecordWriter.from_record(dst, rec)
        svd = np.linalg.svd(a, full_matrices=False)
        for eps in eps_list:
            certs, lowers = [], [1]
            dec = best_decoder(a, eps)
            if dec is not None and len(dec[0]) >= 2:
                rows, wd, s = dec
                certs.append({"kind": "decoder", "lower": len(rows), "rows": rows, "W": wd, "float64_margin": 1 - s})
                lowers.append(len(rows))
            lf = tail_lower(svd[1], m * eps * eps)
            if lf >= 2:
                certs.append({"kind": "frobenius", "lower": lf})
                lowers.append(lf)
            lp, rows_p, wp = best_projected(a, eps, svd)
            if lp >= 2:
                certs.append({"kind": "projected", "lower": lp, "rows": rows_p, "W": wp})
                lowers.append(lp)
            lower = max(lowers)
            up = tsvd_upper(a, eps, svd)
            upper = None if up is None else up[0].shape[1]
            verdicts = {str(k): ("feasible" if upper is not None and upper <= k else
                                 "impossible" if lower > k else "unresolved") for k in BUDGETS}
            w.add_tolerance(eps, upper=None if up is None else (up[0], up[1], "tsvd"), lower=certs,
                            float64={"lower": lower, "upper": upper, "verdicts": verdicts})
        w.commit()
        count += 1
    write_index(dst)
    return count


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--minilm", type=int, default=64)
    ap.add_argument("--smollm2", type=int, default=54)
    ap.add_argument("--eps", default="0.1,0.25")
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args(argv)
    out = Path(args.out)
    eps_list = [float(x) for x in args.eps.split(",")]
    from softrank.fastpath.capture.extract import extract_to_store
    from softrank.findings.replay_job import replay_store

    t0 = time.time()
    for model, count in (("minilm", args.minilm), ("smollm2", args.smollm2)):
        if count > 0 and not (out / f"extract-{model}" / "records").is_dir():
            extract_to_store(model, out / f"extract-{model}", max_operators=count, device="cpu")
    t1 = time.time()
    bracketed = out / "bracketed"
    n = sum(bracket_store(out / f"extract-{model}", bracketed, eps_list)
            for model, count in (("minilm", args.minilm), ("smollm2", args.smollm2)) if count > 0)
    t2 = time.time()
    summary = replay_store(bracketed, out / "replay", jobs=max(1, args.jobs))
    t3 = time.time()
    print(summary.line())
    from softrank.cli import regress as cli_regress

    rc = cli_regress.run(argparse.Namespace(replay_dir=str(out / "replay"), out=str(out / "regress"), max_list=60))
    ends = json.loads((out / "regress" / "ends.json").read_text())
    recs = sum(e["records"] for e in ends)
    equal = sum(e["lower_equal"] for e in ends)
    result = {"records": n, "record_eps": recs, "lower_equal": equal, "lower_equal_pct": 100.0 * equal / max(recs, 1),
              "extract_s": t1 - t0, "bracket_s": t2 - t1, "replay_s": t3 - t2}
    (out / "panel_summary.json").write_text(json.dumps(result, indent=1))
    print(f"lower-certificate panel: validated lower = float64 lower on {equal}/{recs} (record, eps) = "
          f"{result['lower_equal_pct']:.1f}%; extract {t1 - t0:.0f} s, bracket {t2 - t1:.0f} s, replay {t3 - t2:.0f} s")
    return rc


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    raise SystemExit(main())
