"""Red team for masked records (operator.support): witnesses fitted to the visible part only, a
support that hides the largest entry, flipped bits in a packed support, malformed supports, huge or
NaN logits under the mask.  Every claim the replay PROVES is re-checked against the exact masked
operator in 100-digit mpmath (Lemma U: the witness's true l1 error; Lemma F: the true singular-value
tail); a false proved claim fails the test.  Malformed records must be refused in one line."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from helpers import float64_frobenius_lower
from softrank.api.records import Record
from softrank.api.store import Store
from softrank.replay.engine import replay_record
from softrank.replay.reader import read_record
from softrank.replay.record import LowerCertificate, ToleranceEntry, UpperWitness
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

DPS = 100
TALLY = {"cases": 0, "claims": 0, "proved": 0, "false_proved": 0, "refused": 0}


def exact_masked(h, mask):
    """The masked softmax at DPS digits (rows of mpf)."""
    with mpmath.workdps(DPS):
        out = []
        for row, seen in zip(h.tolist(), mask.tolist()):
            top = max(x for x, v in zip(row, seen) if v)
            e = [mpmath.exp(mpmath.mpf(x) - top) if v else mpmath.mpf(0) for x, v in zip(row, seen)]
            total = mpmath.fsum(e)
            out.append([x / total for x in e])
        return out


def mp(eps: Fraction):
    with mpmath.workdps(DPS):
        return mpmath.mpf(eps.numerator) / eps.denominator


def true_error(a_rows, x, y):
    """||A - X Y^T||_inf at DPS digits (X Y^T from the binary64 factors, exactly enough)."""
    with mpmath.workdps(DPS):
        best = mpmath.mpf(0)
        for i, row in enumerate(a_rows):
            err = mpmath.fsum(abs(a - mpmath.fsum(mpmath.mpf(float(p)) * mpmath.mpf(float(q))
                                                  for p, q in zip(x[i], y[j]))) for j, a in enumerate(row))
            best = max(best, err)
        return best


def true_tail_exceeds(a_rows, k, eps) -> bool:
    """sum_{i>k} sigma_i(A)^2 > m eps^2 at DPS digits (Lemma F's claim, L = k + 1)."""
    with mpmath.workdps(DPS):
        s = mpmath.svd_r(mpmath.matrix(a_rows), compute_uv=False)
        tail = mpmath.fsum(sorted((s[i] ** 2 for i in range(len(s))), reverse=True)[k:])
        return tail > len(a_rows) * mp(eps) ** 2


@pytest.fixture(autouse=True, scope="module")
def report_tally():
    yield
    print(f"\nmasked red team: {TALLY}")


def tol(eps, x=None, y=None, lower=()):
    upper = None if x is None else UpperWitness(rank=x.shape[1], X=x, Y=y, construction="red-team")
    return ToleranceEntry(tolerance=Tolerance.exact(Fraction(eps)), upper=upper, lower=list(lower),
                          float64_lower=None, float64_upper=None, float64_verdicts={})


def with_tols(rec, tols):
    return dataclasses.replace(rec, tolerances=tols)


def replay_and_audit(record, true_rows, strict=False):
    """Replay the record; every PROVED claim is checked against the truth.  Returns the results."""
    TALLY["cases"] += 1
    result = replay_record(record, strict=strict)
    for t, res in zip(record.tolerances, result.tolerances):
        if t.upper is not None:
            TALLY["claims"] += 1
            if res.upper.proved:
                TALLY["proved"] += 1
                if true_error(true_rows, t.upper.X, t.upper.Y) > mp(t.eps):
                    TALLY["false_proved"] += 1
        for cert, low in zip(t.lower, res.lowers):
            TALLY["claims"] += 1
            if low.check.proved:
                TALLY["proved"] += 1
                if not true_tail_exceeds(true_rows, cert.lower - 1, t.eps):
                    TALLY["false_proved"] += 1
    assert TALLY["false_proved"] == 0, TALLY
    return result


def through_store(tmp_path, record):
    Store(tmp_path).write(record, index=False, overwrite=True)
    return read_record(tmp_path / "records" / record.record_id)


def causal(m, n, k=0):
    return np.arange(n)[None, :] <= np.arange(m)[:, None] + k


def test_witness_fitted_to_the_visible_part_is_charged_for_hidden_entries(tmp_path):
    rng = np.random.default_rng(0)
    m = n = 12
    h, mask = rng.normal(size=(m, n)) * 2, causal(m, n)
    rec = Record.from_logits(h, record_id="visible", mask=mask)
    true_rows = exact_masked(h, mask)
    garbage = np.where(mask, 0.0, 0.3 / n)  # visible part exact, hidden part of row l1 <= 0.3
    b = rec.a_hat + garbage
    u, s, vt = np.linalg.svd(b)
    for k in (3, 6, 12):
        x, y = u[:, :k] * s[:k], vt[:k].T.copy()
        wrong = true_error(true_rows, x, y)
        tols = [tol(e, x, y) for e in ("0.05", "0.1", "0.2", "0.28", "0.5")]
        for strict in (False, True):
            res = replay_and_audit(through_store(tmp_path, with_tols(rec, tols)),
                                   true_rows, strict)
            for t, r in zip(tols, res.tolerances):
                assert not r.upper.proved or wrong <= mp(t.eps)
            if k == m:  # B itself: every hidden charge counts, 0.2 < ||A - B||_inf < 0.28
                assert [r.upper.proved for r in res.tolerances] == [False, False, False, True, True]
    # the unmasked softmax's witness: right for the other operator, wrong for this one
    full = np.exp(h - h.max(axis=1, keepdims=True))
    full /= full.sum(axis=1, keepdims=True)
    other = with_tols(rec, [tol("0.3", full, np.eye(n))])
    res = replay_and_audit(through_store(tmp_path, other), true_rows)
    assert res.tolerances[0].upper.outcome.value == "refuted"


def test_support_hiding_the_largest_entry(tmp_path):
    rng = np.random.default_rng(1)
    m, n = 10, 14
    h = rng.normal(size=(m, n))
    h[np.arange(m), rng.integers(0, n, size=m)] = 40.0  # each row's largest logit ...
    mask = h < 40.0  # ... hidden
    rec = Record.from_logits(h, record_id="hidden-max", mask=mask)
    assert rec.support.form == "packed"
    true_rows = exact_masked(h, mask)
    u, s, vt = np.linalg.svd(rec.a_hat)
    full = np.exp(h - h.max(axis=1, keepdims=True))
    full /= full.sum(axis=1, keepdims=True)
    fu, fs, fvt = np.linalg.svd(full)
    tols = [tol("0.2", u[:, :6] * s[:6], vt[:6].T.copy(), [LowerCertificate("frobenius", 2)]),
            tol("0.9", fu[:, :1] * fs[:1], fvt[:1].T.copy()), tol("1/100", rec.a_hat, np.eye(n))]
    res = replay_and_audit(through_store(tmp_path, with_tols(rec, tols)), true_rows)
    assert res.tolerances[2].upper.proved  # the masked A_hat itself, rank m, within 1/100
    assert res.tolerances[1].upper.outcome.value == "refuted"  # the unmasked one puts its mass on hidden keys


def _packed_store(tmp_path, seed):
    rng = np.random.default_rng(seed)
    m, n = 8, 11
    mask = rng.random((m, n)) < 0.5
    mask[:, 0] = True
    h = rng.normal(size=(m, n)) * 3
    rec = Record.from_logits(h, record_id="packed", mask=mask)
    u, s, vt = np.linalg.svd(rec.a_hat)
    tols = [tol(e, u[:, :k] * s[:k], vt[:k].T.copy()) for e, k in (("0.02", 7), ("0.3", 4), ("1/1000", 8))]
    tols.append(tol("0.1", lower=[LowerCertificate("frobenius", float64_frobenius_lower(rec.a_hat, 0.1))]))
    rec = with_tols(rec, tols)
    Store(tmp_path).write(rec, index=False, overwrite=True)
    return tmp_path / "records" / "packed", h, mask


@pytest.mark.parametrize("seed", range(4))
def test_flipped_support_bits(tmp_path, seed):
    folder, h, mask = _packed_store(tmp_path, seed)
    replay_and_audit(read_record(folder), exact_masked(h, mask))
    path = folder / "arrays" / "support.npy"
    raw = path.read_bytes()
    rng = np.random.default_rng(100 + seed)
    for flip in rng.choice(mask.size, size=6, replace=False):
        bits = np.packbits(mask.reshape(-1))
        bits[flip // 8] ^= np.uint8(0x80 >> (flip % 8))
        np.save(path, bits, allow_pickle=False)
        with pytest.raises(InputError) as err:  # the old hash: refused
            read_record(folder)
        assert err.value.field == "operator.support.bits.sha256"
        TALLY["refused"] += 1
        doc = json.loads((folder / "record.json").read_text())
        old = doc["operator"]["support"]["bits"]["sha256"]
        doc["operator"]["support"]["bits"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        (folder / "record.json").write_text(json.dumps(doc))
        other = np.unpackbits(bits, count=mask.size).reshape(mask.shape).astype(bool)
        if not other.any(axis=1).all():
            with pytest.raises(InputError):  # a row left with no visible key
                read_record(folder)
            TALLY["refused"] += 1
        else:  # the checker now checks the OTHER operator, soundly
            rec = read_record(folder)
            assert np.array_equal(rec.mask, other)
            # the truth of the operator the stored numbers define: a hidden logit is written as 0.0,
            # so a key the flip reveals has logit 0 there, not the model's
            replay_and_audit(rec, exact_masked(rec.logits, other))
        doc["operator"]["support"]["bits"]["sha256"] = old
        (folder / "record.json").write_text(json.dumps(doc))
        path.write_bytes(raw)


def _edit_support(folder, edit):
    doc = json.loads((folder / "record.json").read_text())
    edit(doc["operator"]["support"])
    (folder / "record.json").write_text(json.dumps(doc))


def _refused(folder, field):
    with pytest.raises(InputError) as err:
        read_record(folder)
    assert err.value.field == field and "\n" not in err.value.one_line(), err.value.one_line()
    TALLY["refused"] += 1


def test_malformed_supports_are_refused(tmp_path):
    folder, _, mask = _packed_store(tmp_path, 9)  # 8 x 11: 88 bits, 11 bytes
    path = folder / "arrays" / "support.npy"
    good = np.packbits(mask.reshape(-1))
    for bits in (good[:-1], np.append(good, np.uint8(0))):  # wrong lengths
        np.save(path, bits, allow_pickle=False)
        _edit_support(folder, lambda s: s["bits"].update(sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                                                         shape=[int(bits.size)]))
        _refused(folder, "operator.support.bits")
    h = np.random.default_rng(2).normal(size=(5, 7))
    m2 = np.ones((5, 7), bool)
    m2[0, 3] = False
    Store(tmp_path).write(Record.from_logits(h, record_id="pad", mask=m2), index=False)
    folder = tmp_path / "records" / "pad"
    path = folder / "arrays" / "support.npy"
    bits = np.packbits(m2.reshape(-1))
    bits[-1] |= np.uint8(0x01)  # 35 bits: the last 5 bits of the last byte are padding
    np.save(path, bits, allow_pickle=False)
    _edit_support(folder, lambda s: s["bits"].update(sha256=hashlib.sha256(path.read_bytes()).hexdigest()))
    _refused(folder, "operator.support.bits")
    Store(tmp_path).write(Record.from_logits(h, record_id="c", mask=causal(5, 7, 1)), index=False)
    folder = tmp_path / "records" / "c"
    for edit, field in ((lambda s: s.update(offset=7), "operator.support.offset"),  # past the matrix
                        (lambda s: s.update(offset=10**30), "operator.support.offset"),
                        (lambda s: s.update(form="window", size=0, offset=1), "operator.support.size"),
                        (lambda s: s.update(form="window", size=1, offset=1, extra=0), "operator.support")):
        _edit_support(folder, edit)
        _refused(folder, field)
        _edit_support(folder, lambda s: (s.clear(), s.update(form="causal", offset=1)))
    assert read_record(folder).support.offset == 1


def test_empty_row_and_nan_logits_are_refused(tmp_path):
    h = np.random.default_rng(3).normal(size=(4, 6))
    empty = causal(4, 6)
    empty[2] = False
    with pytest.raises(InputError) as err:
        Record.from_logits(h, mask=empty)
    assert err.value.field == "operator.support" and "row 2" in err.value.one_line()
    TALLY["refused"] += 1
    bad = h.copy()
    bad[0, 5] = np.nan  # hidden, still refused: every stored float is finite
    with pytest.raises(InputError):
        Record.from_logits(bad, mask=causal(4, 6))
    TALLY["refused"] += 1
    Store(tmp_path).write(Record.from_logits(h, record_id="nan", mask=causal(4, 6)), index=False)
    folder = tmp_path / "records" / "nan"
    logits = folder / "arrays" / "logits.npy"
    np.save(logits, bad, allow_pickle=False)
    doc = json.loads((folder / "record.json").read_text())
    doc["operator"]["logits"]["sha256"] = hashlib.sha256(logits.read_bytes()).hexdigest()
    (folder / "record.json").write_text(json.dumps(doc))
    _refused(folder, "operator.logits")


def test_huge_hidden_logits_are_never_read(tmp_path):
    rng = np.random.default_rng(4)
    m = n = 10
    h, mask = rng.normal(size=(m, n)), causal(m, n)
    true_rows = exact_masked(h, mask)
    for value in (1e300, -1e300, 1.7e308):
        big = np.where(mask, h, value)
        rec = Record.from_logits(big, record_id="huge", mask=mask)
        u, s, vt = np.linalg.svd(rec.a_hat)
        tols = [tol("1/1000", rec.a_hat, np.eye(n)), tol("0.3", u[:, :3] * s[:3], vt[:3].T.copy())]
        for strict in (False, True):
            res = replay_and_audit(through_store(tmp_path, with_tols(rec, tols)),
                                   true_rows, strict)
            assert res.tolerances[0].upper.proved and res.chi is not None and res.chi < 1e-12
