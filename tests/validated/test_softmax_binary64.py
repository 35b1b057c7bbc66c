"""The binary64 enclosure of rowsoftmax(H) (proofs/softmax_binary64.md): against the Arb enclosure
on 220 small operators with extreme logits (every Arb midpoint inside the binary64 enclosure),
against mpmath at 50 digits on a sample, its exponential against mpmath, its width on real-like
operators, its refusals, the lazy Arb rows, and a differential run of every check on it."""

from __future__ import annotations

import ast
import importlib.util
import random
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pytest
from flint import arb, ctx

from softrank.validated import softmax_binary64 as sb
from softrank.validated.contractive_decoder import check_contractive_decoder
from softrank.validated.frobenius_tail import check_frobenius_tail
from softrank.validated.outcome import Outcome
from softrank.validated.projected_tail import check_projected_tail
from softrank.validated.softmax_enclosure import logits_balls, rowsoftmax_enclosure
from softrank.validated.upper_witness import check_upper_witness

ROOT = Path(__file__).resolve().parents[2]
U = 2.0**-53


def _row_family(kind: str, rng: np.random.Generator, m: int, n: int) -> np.ndarray:
    h = rng.normal(size=(m, n))
    if kind == "scaled":
        return h * rng.choice([1e-3, 1.0, 10.0, 100.0, 1e3])
    if kind == "huge":  # magnitudes near the top of binary64; h - max may overflow to -inf
        return np.clip(h, -1.7, 1.7) * 1e308 if rng.random() < 0.5 else h * 1e300
    if kind == "dominant":  # one entry per row far above the others
        h[np.arange(m), rng.integers(0, n, size=m)] += rng.choice([30.0, 700.0, 745.5, 1e5])
        return h
    if kind == "ties":
        return np.repeat(rng.integers(-3, 3, size=(m, 1)).astype(float), n, axis=1) if rng.random() < 0.5 \
            else rng.integers(-2, 3, size=(m, n)).astype(float)
    # near the cut at -700 and the underflow limits of exp (-708.4 normal, -745.1 subnormal)
    edge = np.array([-700.0, np.nextafter(-700.0, 0), np.nextafter(-700.0, -1e3), -699.9999999, -708.39,
                     -708.4, -745.13, -745.14, -744.44, -1e4, -0.0, -1e-300])
    h = rng.choice(edge, size=(m, n)) + rng.choice([0.0, 0.0, 1e-13, -1e-13], size=(m, n))
    h[:, 0] = 0.0
    return h + rng.choice([0.0, 3.5, -1e3])


def _cases(count_per_kind: int = 30):
    """220 operators: five logit families and the qk form with and without a bias."""
    rng = np.random.default_rng(2024)
    out = []
    for kind in ("scaled", "huge", "dominant", "ties", "edge"):
        for _ in range(count_per_kind + (20 if kind == "scaled" else 0)):
            m, n = int(rng.integers(1, 8)), int(rng.integers(1, 9))
            out.append({"logits": _row_family(kind, rng, m, n)})
    for with_bias in (False, True):
        for _ in range(count_per_kind + 5):
            m, n, d = int(rng.integers(1, 8)), int(rng.integers(1, 9)), int(rng.choice([1, 4, 16, 64]))
            sigma = rng.choice([0.3, 1.0, 3.0])
            op = {"queries": rng.normal(size=(m, d)) * sigma, "keys": rng.normal(size=(n, d)) * sigma,
                  "scale": float(rng.choice([0.125, 1 / np.sqrt(d), 2.0]))}
            op["bias"] = rng.normal(size=(m, n)) * rng.choice([1.0, 100.0]) if with_bias else None
            if with_bias and rng.random() < 0.3:
                op["bias"][:, -1] = -1e4  # a masked key
            out.append(op)
    return out


CASES = _cases()


def test_there_are_at_least_200_cases_of_every_kind():
    assert len(CASES) >= 200
    assert sum("logits" not in op and op["bias"] is not None for op in CASES) >= 30


def _inside(balls, a_mid: np.ndarray, a_rad: np.ndarray) -> bool:
    """Is every Arb midpoint within a_rad of a_mid? (Certain comparisons at 200 bits.)"""
    with ctx.workprec(200):
        for row, mids, rads in zip(balls, a_mid.tolist(), a_rad.tolist()):
            for b, mid, rad in zip(row, mids, rads):
                if not abs(b.mid() - arb(mid)) <= arb(rad):
                    return False
    return True


def test_every_arb_midpoint_lies_in_the_binary64_enclosure():
    declined = 0
    for i, op in enumerate(CASES):
        enc = sb.softmax_binary64_enclosure(**op)
        if enc is None:
            declined += 1
            continue
        assert np.all(enc.a_rad >= 0) and np.all(enc.a_mid >= 0)
        try:  # at 200 bits throughout (logits included), so that the Arb balls are tiny
            with ctx.workprec(200):
                ref = rowsoftmax_enclosure(logits_balls(**op), prec_bits=200)
        except ArithmeticError:  # beyond Arb's exponent range: mpmath below covers these
            continue
        assert _inside(ref.balls, enc.a_mid, enc.a_rad), i
    assert declined <= 2, declined  # only a logit radius above 2^-11 may decline


def _mp_softmax(op) -> list[list[mpmath.mpf]]:
    if "logits" in op:
        h = [[mpmath.mpf(v) for v in row] for row in op["logits"].tolist()]
    else:
        q, k, scale = op["queries"].tolist(), op["keys"].tolist(), mpmath.mpf(op["scale"])
        h = [[scale * mpmath.fsum(mpmath.mpf(a) * mpmath.mpf(b) for a, b in zip(qi, kj)) for kj in k] for qi in q]
        if op["bias"] is not None:
            h = [[x + mpmath.mpf(b) for x, b in zip(row, brow)] for row, brow in zip(h, op["bias"].tolist())]
    out = []
    for row in h:
        c = max(row)
        e = [mpmath.exp(x - c) for x in row]
        t = mpmath.fsum(e)
        out.append([x / t for x in e])
    return out


def test_the_enclosure_contains_the_50_digit_value():
    with mpmath.workdps(50):
        for op in CASES[::4]:
            enc = sb.softmax_binary64_enclosure(**op)
            if enc is None:
                continue
            for row, mids, rads in zip(_mp_softmax(op), enc.a_mid.tolist(), enc.a_rad.tolist()):
                for a, mid, rad in zip(row, mids, rads):
                    assert abs(a - mpmath.mpf(mid)) <= mpmath.mpf(rad)


def test_the_exponential_is_within_kappa_of_exp():
    rng = np.random.default_rng(5)
    x = np.concatenate([np.linspace(-700.0, 0.0, 4001), -rng.random(2000) * 700,
                        np.log(2) * (np.arange(-1010, 1) + 0.5),
                        [0.0, -0.0, -5e-324, -1e-300, -2.0**-1022, -1e-17, np.nextafter(-700.0, 0)]])
    x = np.clip(x, -700.0, 0.0)
    e = sb.exp_nonpositive(x)
    kappa = mpmath.mpf(sb.KAPPA.numerator) / sb.KAPPA.denominator
    worst = mpmath.mpf(0)
    with mpmath.workdps(40):
        for xi, ei in zip(x.tolist(), e.tolist()):
            ex = mpmath.exp(mpmath.mpf(xi))
            worst = max(worst, abs(mpmath.mpf(ei) - ex) / ex)
    assert worst <= kappa
    assert worst < 4 * U  # the observed error is a few units in the last place


def test_the_constants():
    assert sb.KAPPA < 8 * Fraction(U)
    assert Fraction(sb.LN2_HI).denominator <= 2**40  # so k * LN2_HI is exact for |k| <= 1010
    for k in (-1010, -1009, -517, -1):
        assert Fraction(k * sb.LN2_HI) == k * Fraction(sb.LN2_HI)
    assert sb.LN2_SPLIT_ERR < Fraction(1, 2**90)
    assert 700 * sb.INV_LN2 * (1 + U) < sb.K_MAX
    assert sb.reduction_bound() <= Fraction(sb.R_MAX)  # so |r| <= R_MAX for every x in [-700, 0]
    assert sb.exp_nonpositive(np.array([sb.TINY_CUT]))[0] < 2.0**-1009  # a clamped entry's E


@pytest.mark.parametrize("scale", [1.0, 3.0, 10.0])
def test_relative_width_below_1e_13_on_real_like_operators(scale):
    h = np.random.default_rng(int(scale)).normal(size=(256, 256)) * scale
    enc = sb.softmax_binary64_enclosure(logits=h)
    big = enc.a_mid > 1e-250  # below, the absolute part 2^-1000 of the radius dominates
    assert big.mean() > 0.9
    assert float(np.max(enc.a_rad[big] / enc.a_mid[big])) < 1e-13


def test_it_declines_rather_than_guess():
    h = np.random.default_rng(0).normal(size=(4, 5))
    assert sb.rowsoftmax_binary64(h, np.full((4, 5), 2.0**-10)) is None  # logit radius too large
    assert sb.rowsoftmax_binary64(h, np.full((4, 5), 2.0**-12)) is not None
    bad = h.copy()
    bad[1, 2] = np.nan
    assert sb.rowsoftmax_binary64(bad) is None
    assert sb.rowsoftmax_binary64(np.zeros((0, 3))) is None
    assert sb.rowsoftmax_binary64(np.zeros((3, 0))) is None  # rows without entries: no softmax
    q = np.full((2, 3), 1e160)  # Q K^T overflows
    assert sb.softmax_binary64_enclosure(queries=q, keys=q, scale=1.0) is None
    assert sb.softmax_binary64_enclosure(queries=q * 1e-153, keys=q * 1e-153, scale=1.0) is None  # radius > 2^-11


def test_rows_longer_than_a_block_and_blocks_of_several_rows_agree_with_one_row_at_a_time():
    """Rows are enclosed in blocks of about BLOCK entries: a row longer than BLOCK is a block of
    its own, shorter rows share one; the enclosure of each row is the same either way."""
    rng = np.random.default_rng(3)
    long_rows = rng.normal(size=(2, sb.BLOCK + 7))
    mid, rad = sb.rowsoftmax_binary64(long_rows)
    assert mid.shape == rad.shape == long_rows.shape and np.all(rad > 0)
    short = rng.normal(size=(3 * sb.BLOCK // 40 + 5, 40))  # several blocks of BLOCK // 40 rows
    mid_s, rad_s = sb.rowsoftmax_binary64(short)
    for i in (0, 1, sb.BLOCK // 40, len(short) - 1):
        one_mid, one_rad = sb.rowsoftmax_binary64(short[i:i + 1])
        assert np.array_equal(one_mid[0], mid_s[i]) and np.array_equal(one_rad[0], rad_s[i])
    one_mid, _ = sb.rowsoftmax_binary64(long_rows[1:])
    assert np.array_equal(one_mid[0], mid[1])


def test_the_arb_rows_are_built_on_first_use_and_contain_a():
    op = CASES[60]
    enc = sb.softmax_binary64_enclosure(**op)
    assert not enc.balls_built
    balls = enc.balls
    assert enc.balls_built and enc.balls is balls
    with mpmath.workdps(50):
        for row, brow in zip(_mp_softmax(op), balls):
            for a, b in zip(row, brow):
                lo, hi = b.lower(), b.upper()
                assert mpmath.mpf(lo.mid().str(40, radius=False)) - mpmath.mpf(10) ** -38 <= a
                assert a <= mpmath.mpf(hi.mid().str(40, radius=False)) + mpmath.mpf(10) ** -38


def test_the_engine_uses_binary64_by_default_and_arb_with_strict(tmp_path, monkeypatch):
    from softrank.fastpath.store.writer import RecordWriter
    from softrank.replay import engine
    from softrank.replay.reader import read_record

    h = np.random.default_rng(3).normal(size=(10, 10)) * 3
    a = np.exp(h - h.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    with RecordWriter(tmp_path, "r", {"family": "synthetic"}) as w:
        w.set_logits(h)
        w.set_a_hat(a)
        w.add_tolerance(0.25, upper=(a, np.eye(10), "identity"), lower=[], float64={"lower": 1, "upper": 10})
    record = read_record(tmp_path / "records" / "r")
    used = []
    monkeypatch.setattr(engine, "chi_upper", lambda enc, a_hat: used.append(enc) or Fraction(0))
    for strict in (False, True):
        (t,) = engine.replay_record(record, strict=strict).tolerances
        assert t.upper.outcome is Outcome.PROVED
    assert not used[0].balls_built and used[1].balls_built  # binary64 enclosure, then the Arb one


def test_the_trusted_module_imports_only_numpy_flint_the_stdlib_and_the_core():
    tree = ast.parse((ROOT / "validated" / "softmax_binary64.py").read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    allowed = {"__future__", "fractions", "functools", "math", "numpy", "flint"}
    assert {x for x in names if not x.startswith("softrank.validated.")} <= allowed


def _differential_module():
    spec = importlib.util.spec_from_file_location("differential_cases", ROOT / "tests" / "soundness" /
                                                  "test_differential.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_differential_no_check_proves_on_binary64_what_arb_or_exact_refutes():
    """The cases of tests/soundness/test_differential.py, decided on the binary64 enclosure (default
    route) and on the Arb enclosure (strict): never a certain disagreement, and the exact truth
    where the operator is rational."""
    diff = _differential_module()
    rng = random.Random(7)
    seen = set()
    for _ in range(120):
        case = diff._case(rng)
        enc = sb.softmax_binary64_enclosure(logits=case["h"])
        assert enc is not None
        e = case["eps"]
        b64 = {"upper": check_upper_witness(enc, case["x"], case["y"], e).outcome,
               "frobenius": check_frobenius_tail(enc, e, case["lower"]).outcome,
               "projected": check_projected_tail(enc, e, case["lower"], case["rows"], case["w"]).outcome,
               "decoder": check_contractive_decoder(enc, e, case["rows"], case["w"]).outcome}
        ref = diff._decide(case, strict=True, prec=None)
        exact = diff._exact(case) if case["rational"] else {}
        for check, outcome in b64.items():
            certain = {o for o in (outcome, ref[check]) if o is not Outcome.UNRESOLVED}
            assert len(certain) <= 1, (check, outcome, ref[check])
            if check in exact and certain:
                assert certain == {Outcome.PROVED if exact[check] else Outcome.REFUTED}
            seen.add((check, outcome))
    assert ("upper", Outcome.PROVED) in seen and ("upper", Outcome.REFUTED) in seen
    assert ("decoder", Outcome.PROVED) in seen
