"""Generate the certificate test data: tests/certificates/{accept,reject,malformed}/ (three stores)
and expected.json.  Deterministic (fixed seeds); rerun with

    .venv/bin/python tests/certificates/make_certificates.py

Rejects that are "just over eps" are built so that the exact error (computed in Arb at 256 bits,
certainly) exceeds eps by less than 1e-12 while the plain float64 check says it is within eps.
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
from flint import arb, ctx

HERE = Path(__file__).resolve().parent

from softrank.fastpath.store.writer import RecordWriter, write_index


def softmax64(h: np.ndarray) -> np.ndarray:
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def plain_error(a_hat, x, y) -> float:
    """The plain float64 check a research pipeline runs."""
    return float(np.abs(a_hat - x @ y.T).sum(axis=1).max())


def exact_error_ball(h: np.ndarray, x: np.ndarray, y: np.ndarray) -> arb:
    """||rowsoftmax(H) - X Y^T||_inf in Arb at 256 bits (a ball of width ~1e-70)."""
    with ctx.workprec(256):
        best = None
        for i in range(h.shape[0]):
            e = [arb(float(v)).exp() for v in h[i]]
            s = sum(e[1:], e[0])
            row = arb(0)
            for j in range(h.shape[1]):
                b = sum((arb(float(x[i, l])) * arb(float(y[j, l])) for l in range(x.shape[1])), arb(0))
                row += abs(e[j] / s - b)
            best = row if best is None else best.max(row)
        return best


def tsvd(a: np.ndarray, k: int):
    u, s, vt = np.linalg.svd(a)
    return u[:, :k] * s[:k], vt[:k].T.copy()


def random_logits(rng, m, n, rank=2, scale=3.0):
    return scale * rng.normal(size=(m, rank)) @ rng.normal(size=(rank, n)) / np.sqrt(rank) + 0.3 * rng.normal(size=(m, n))


def write(store: Path, rid: str, h=None, qk=None, a_hat=None, tolerances=(), prov=None):
    w = RecordWriter(store, rid, dict({"model": "synthetic", "family": "synthetic", "producer": "make_certificates"}, **(prov or {})))
    if qk is not None:
        w.set_qk(*qk)
    else:
        w.set_logits(h)
    w.set_a_hat(a_hat)
    for tol in tolerances:
        w.add_tolerance(**tol)
    return w.commit()


def build_accept(store: Path, expected: dict):
    rng = np.random.default_rng(11)
    for i in range(20):
        m, n = int(rng.integers(4, 13)), int(rng.integers(4, 13))
        h = random_logits(rng, m, n)
        a = softmax64(h)
        tols = []
        for eps in (0.15, 0.25, 0.35):
            k = next(k for k in range(0, min(m, n) + 1) if plain_error(a, *tsvd(a, k)) <= eps * (1 - 1e-6))
            x, y = tsvd(a, k)
            tols.append({"eps": eps, "upper": (x, y, "tsvd"), "float64": {"lower": 1, "upper": k, "verdicts": {"8": "feasible" if k <= 8 else "unresolved"}}})
        rid = f"accept-{i:02d}"
        if i % 4 == 3:  # queries/keys form (with a bias on some)
            q, kk = rng.normal(size=(m, 3)), rng.normal(size=(n, 3))
            bias = rng.normal(size=(m, n)) if i % 8 == 7 else None
            h = 0.7 * q @ kk.T + (bias if bias is not None else 0)
            a = softmax64(h)
            tols = []
            for eps in (0.25,):
                k = next(k for k in range(0, min(m, n) + 1) if plain_error(a, *tsvd(a, k)) <= eps * (1 - 1e-6))
                x, y = tsvd(a, k)
                tols.append({"eps": "1/4", "upper": (x, y, "tsvd"), "float64": {"lower": 1, "upper": k}})
            write(store, rid, qk=(q, kk, 0.7, bias), a_hat=a, tolerances=tols)
        else:
            write(store, rid, h=h, a_hat=a, tolerances=tols)
        expected[f"accept/{rid}"] = {"expect": "accept"}


def build_reject(store: Path, expected: dict):
    rng = np.random.default_rng(22)
    made = 0
    attempt = 0
    # (a) just over eps: plain float64 says within, exact error exceeds eps by < 1e-12.
    while made < 12:
        attempt += 1
        m, n = int(rng.integers(4, 9)), int(rng.integers(4, 9))
        h = random_logits(rng, m, n)
        a = softmax64(h)
        k = int(rng.integers(1, min(m, n)))
        x, y = tsvd(a, k)
        x[0, 0] *= 1 + float(rng.normal()) * 1e-14  # vary the rounding pattern between attempts
        e_float = plain_error(a, x, y)
        if not (0 < e_float < 1):
            continue
        ball = exact_error_ball(h, x, y)
        gap = ball.lower() - arb(e_float)
        if not (gap > 0 and gap < arb(1e-12)):
            continue
        rid = f"reject-just-over-{made:02d}"
        write(store, rid, h=h, a_hat=a, tolerances=[{"eps": e_float, "upper": (x, y, "tampered"), "float64": {"lower": 1, "upper": k}}])
        expected[f"reject/{rid}"] = {"expect": "reject", "lemma": "U", "exact_excess_upper": float(gap.upper().mid())}
        made += 1
    # (b) a witness entry perturbed after the float64 check; eps kept at the untampered error.
    # The sign of the perturbation is chosen so that the exact error certainly exceeds eps.
    made = 0
    while made < 5:
        m, n = 8, 8
        h = random_logits(rng, m, n)
        a = softmax64(h)
        x, y = tsvd(a, 3)
        eps = plain_error(a, x, y)
        if eps >= 1:
            continue
        row = int(np.argmax(np.abs(a - x @ y.T).sum(axis=1)))
        for delta in (1e-3, -1e-3):
            xt = x.copy()
            xt[row, made % 3] += delta
            if exact_error_ball(h, xt, y) > arb(eps):
                rid = f"reject-perturbed-{made}"
                write(store, rid, h=h, a_hat=a, tolerances=[{"eps": eps, "upper": (xt, y, "tampered"), "float64": {"lower": 1, "upper": 3}}])
                expected[f"reject/{rid}"] = {"expect": "reject", "lemma": "U"}
                made += 1
                break
    # (c) the witness of another operator.
    h1, h2 = random_logits(rng, 8, 8), random_logits(rng, 8, 8)
    a1, a2 = softmax64(h1), softmax64(h2)
    x, y = tsvd(a2, 4)
    eps = max(plain_error(a2, x, y) * 1.5, 0.05)
    write(store, "reject-other-operator", h=h1, a_hat=a1, tolerances=[{"eps": eps, "upper": (x, y, "swapped"), "float64": {"lower": 1, "upper": 4}}])
    expected["reject/reject-other-operator"] = {"expect": "reject", "lemma": "U"}
    # (d) A_hat tampered inside the stochastic tolerance so that the plain float64 check passes,
    # while the true operator (from the logits) is further than eps from the witness.
    h = random_logits(rng, 6, 6)
    a = softmax64(h)
    x, y = tsvd(a, 2)
    fake = (x @ y.T).clip(min=0)
    fake /= fake.sum(axis=1, keepdims=True)
    eps = max(plain_error(fake, x, y), 1e-3)
    write(store, "reject-tampered-a-hat", h=h, a_hat=fake, tolerances=[{"eps": eps, "upper": (x, y, "tampered"), "float64": {"lower": 1, "upper": 2}}])
    expected["reject/reject-tampered-a-hat"] = {"expect": "reject", "lemma": "U"}
    # (e) lower certificates of an unknown kind: a rejection, never a skip.
    for i in range(2):
        h = random_logits(rng, 6, 6)
        a = softmax64(h)
        write(store, f"reject-unknown-kind-{i}", h=h, a_hat=a,
              tolerances=[{"eps": 0.25, "lower": [{"kind": "magic", "lower": 6}], "float64": {"lower": 6, "upper": 6}}])
        expected[f"reject/reject-unknown-kind-{i}"] = {"expect": "reject", "lemma": "registry"}


def build_malformed(store: Path, expected: dict):
    """Each record breaks exactly one rule; 'field' is what the one-line error must name."""
    rng = np.random.default_rng(33)

    def good(rid, **kw):
        h = random_logits(rng, 6, 5)
        a = softmax64(h)
        k = next(k for k in range(6) if plain_error(a, *tsvd(a, k)) <= 0.29)
        x, y = tsvd(a, k)
        tol = {"eps": 0.3, "upper": (x, y, "tsvd"), "float64": {"lower": 1, "upper": k}}
        tol.update(kw.pop("tol", {}))
        return write(store, rid, h=kw.pop("h", h), a_hat=kw.pop("a_hat", a), tolerances=[tol], **kw)

    def edit_json(folder: Path, fn):
        doc = json.loads((folder / "record.json").read_text())
        fn(doc)
        (folder / "record.json").write_text(json.dumps(doc))

    cases = {}
    f = good("bad-truncated-json")
    raw = (f / "record.json").read_bytes()
    (f / "record.json").write_bytes(raw[: len(raw) // 2])
    cases["bad-truncated-json"] = "record.json"

    f = good("bad-truncated-array")
    raw = (f / "arrays/logits.npy").read_bytes()
    (f / "arrays/logits.npy").write_bytes(raw[: len(raw) - 40])
    cases["bad-truncated-array"] = "operator.logits.sha256"

    f = good("bad-hash-mismatch")
    raw = bytearray((f / "arrays/a_hat.npy").read_bytes())
    raw[-3] ^= 0x01
    (f / "arrays/a_hat.npy").write_bytes(bytes(raw))
    cases["bad-hash-mismatch"] = "a_hat.sha256"

    h = random_logits(rng, 6, 5)
    h[2, 3] = np.nan
    good("bad-nan-logits", h=h)
    cases["bad-nan-logits"] = "operator.logits"

    a = softmax64(random_logits(rng, 6, 5))
    a[1, 1] = np.inf
    good("bad-inf-a-hat", a_hat=a)
    cases["bad-inf-a-hat"] = "a_hat"

    good("bad-shape-mismatch", a_hat=softmax64(random_logits(rng, 6, 4)))
    cases["bad-shape-mismatch"] = "a_hat"

    f = good("bad-missing-field")
    edit_json(f, lambda d: d.pop("a_hat"))
    cases["bad-missing-field"] = "a_hat"

    f = good("bad-schema-version")
    edit_json(f, lambda d: d.update(schema_version=99))
    cases["bad-schema-version"] = "schema_version"

    good("bad-eps-above-one", tol={"eps": 1.5})
    cases["bad-eps-above-one"] = "tolerances[0].eps"

    good("bad-eps-zero", tol={"eps": 0.0})
    cases["bad-eps-zero"] = "tolerances[0].eps"

    f = good("bad-factor-shapes")
    def _mismatch(d):
        d["tolerances"][0]["upper"]["rank"] += 1
    edit_json(f, _mismatch)
    cases["bad-factor-shapes"] = "tolerances[0].upper.X"

    f = write(store, "bad-nonfinite-scale", qk=(rng.normal(size=(5, 2)), rng.normal(size=(4, 2)), 1.0), a_hat=np.full((5, 4), 0.25))
    raw = (f / "record.json").read_text().replace('"scale": 1.0', '"scale": 1e999')
    (f / "record.json").write_text(raw)
    cases["bad-nonfinite-scale"] = "operator.scale"

    f = good("bad-negative-rank")
    edit_json(f, lambda d: d["tolerances"][0]["upper"].update(rank=-1))
    cases["bad-negative-rank"] = "tolerances[0].upper.rank"

    good("bad-not-stochastic", a_hat=2 * softmax64(random_logits(rng, 6, 5)))
    cases["bad-not-stochastic"] = "a_hat"

    f = good("bad-path-escape")
    edit_json(f, lambda d: d["a_hat"].update(path="../../index.csv"))
    cases["bad-path-escape"] = "a_hat.path"

    f = good("bad-nan-json-constant")
    raw = (f / "record.json").read_text().replace('"eps": 0.3', '"eps": NaN')
    (f / "record.json").write_text(raw)
    cases["bad-nan-json-constant"] = "record.json"

    for rid, field in cases.items():
        expected[f"malformed/{rid}"] = {"expect": "malformed", "field": field}
    # Two well-formed records in the same store: replay must still check and write them.
    for i in range(2):
        good(f"ok-beside-malformed-{i}")
        expected[f"malformed/ok-beside-malformed-{i}"] = {"expect": "accept"}


def main():
    expected: dict = {}
    for name, build in (("accept", build_accept), ("reject", build_reject), ("malformed", build_malformed)):
        store = HERE / name
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir()
        build(store, expected)
        write_index(store)
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")
    counts = {}
    for v in expected.values():
        counts[v["expect"]] = counts.get(v["expect"], 0) + 1
    print(f"wrote {len(expected)} records: {counts}")


if __name__ == "__main__":
    main()
