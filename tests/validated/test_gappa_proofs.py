"""The machine-checked bounds of proofs/gappa/ (docs/hardening.md, "Machine-checked rounding
bounds"): gappa proves every script, each script is the one generated from the current constants of
validated/softmax_binary64.py and validated/float_bounds.py (its goals are those constants), a
constant weakened by 1% makes gappa fail, and the polynomial's approximation error, which is not a
Gappa job, is certified with sollya's supnorm and with Arb.  Nothing is written into the checkout:
variants go to tmp_path."""

from __future__ import annotations

import re
import shutil
import subprocess
from fractions import Fraction
from math import factorial

import mpmath
import pytest
from flint import arb, ctx

import gappa_scripts as gs
from softrank.validated import float_bounds as fb
from softrank.validated import softmax_binary64 as sb
from softrank.validated.balls import upper_fraction

SOFTMAX_SCRIPTS = ["reduction", "exp_polynomial", "exp_scaling", "shift", "division"]
FLOAT_BOUNDS_SCRIPTS = ["row_sum", "binary64_rules"]
ONE_PERCENT = Fraction(99, 100)


def _proved(text_or_path, tmp_path=None, name="variant") -> tuple[bool, str]:
    """Run gappa on a checked-in script (a Path) or on a text written under tmp_path; a missing
    gappa fails the test with one line."""
    if gs.gappa_executable() is None:
        pytest.fail(gs.GAPPA_MISSING, pytrace=False)
    if isinstance(text_or_path, str):
        path = tmp_path / f"{name}.g"
        path.write_text(text_or_path)
    else:
        path = text_or_path
    return gs.run_gappa(path)


# --- the checked-in scripts ---------------------------------------------------------------------


def test_gappa_scripts_match_the_code_constants():
    """proofs/gappa/*.g are exactly the scripts generated from the modules' current constants, so
    the goals gappa proves are the constants the code uses."""
    stale = [str(gs.script_path(n).relative_to(gs.ROOT)) for n in gs.SCRIPTS
             if not gs.script_path(n).is_file() or gs.script_path(n).read_text() != gs.render(n)]
    assert not stale, (f"stale or missing: {', '.join(stale)}; regenerate with "
                       ".venv/bin/python tests/validated/gappa_scripts.py and rerun")
    assert sorted(p.stem for p in gs.GAPPA_DIR.glob("*.g")) == sorted(gs.SCRIPTS)


@pytest.mark.parametrize("name", SOFTMAX_SCRIPTS)
def test_softmax_binary64_step_proved_by_gappa(name):
    ok, out = _proved(gs.script_path(name))
    assert ok, f"gappa did not prove proofs/gappa/{name}.g:\n{out}"


@pytest.mark.parametrize("name", FLOAT_BOUNDS_SCRIPTS)
def test_float_bounds_rule_proved_by_gappa(name):
    ok, out = _proved(gs.script_path(name))
    assert ok, f"gappa did not prove proofs/gappa/{name}.g:\n{out}"


# --- weakening a constant by 1% makes gappa fail ------------------------------------------------

# (script, constant): each constant is sharp, so a 1% smaller claim is false and gappa must fail.
TIGHT = [
    ("reduction", "R_MAX"),  # |r| reaches ln2/2 = 0.34657 > 0.99 * 0.347
    ("reduction", "K_MAX"),  # k = -1010 at x = -700
    ("reduction", "M2"),  # |fl(k LN2_LO)| at k = -1010
    ("division", "U"),  # float_bounds.UNIT_ROUNDOFF: a rounding's error, against the result
    ("division", "ETA"),  # float_bounds.UNDERFLOW_ETA: eta/2 for an underflowing quotient
    ("binary64_rules", "U"),
    ("binary64_rules", "ETA"),
    ("row_sum", "GAMMA_R1"),  # float_bounds.gamma(7) for 8 terms
    ("row_sum", "GAMMA_B2"),  # float_bounds.gamma(N + 1) of B2
    ("binary64_rules", "GAMMA_R3"),  # float_bounds.gamma(4) for a dot product of length 4
]


@pytest.mark.parametrize(("name", "constant"), TIGHT, ids=[f"{n}-{c}" for n, c in TIGHT])
def test_softmax_binary64_and_float_bounds_constant_weakened_by_one_percent_fails(name, constant, tmp_path):
    weakened = gs.code_constants()[constant] * ONE_PERCENT
    text = gs.render(name, **{constant: weakened})
    assert text != gs.render(name)
    ok, out = _proved(text, tmp_path, f"{name}-{constant}")
    assert not ok, f"gappa proved {name}.g with {constant} weakened by 1%"
    assert gs.NOT_SATISFIED in out


# The other goals have slack: the code's analysis is coarser than gappa's (it charges u |fl| where
# gappa charges half an ulp of the range).  Each still fails when weakened past gappa's own bound,
# so the script is not vacuous.
SLACK = [
    ("reduction", "NU", Fraction(1, 2)),  # gappa: 0.50 u, code: 0.69 u
    ("exp_polynomial", "HORNER", Fraction(1, 2)),  # gappa: 1.71 u, code: 2.40 u
    ("exp_polynomial", "KAPPA", Fraction(1, 2)),  # gappa: 5.34 u, code: 7.15 u
    ("exp_scaling", "K_MAX", Fraction(107, 100)),  # a larger |k| reaches the subnormal range
]


@pytest.mark.parametrize(("name", "constant", "factor"), SLACK, ids=[f"{n}-{c}" for n, c, _ in SLACK])
def test_softmax_binary64_script_is_not_vacuous(name, constant, factor, tmp_path):
    text = gs.render(name, **{constant: gs.code_constants()[constant] * factor})
    ok, out = _proved(text, tmp_path, f"{name}-{constant}")
    assert not ok and gs.NOT_SATISFIED in out


def test_gappa_missing_fails_with_one_line(monkeypatch):
    monkeypatch.setattr(gs, "gappa_executable", lambda: None)
    with pytest.raises(pytest.fail.Exception, match="^gappa not found: run ./dev setup or apt-get install gappa$"):
        _proved(gs.script_path("reduction"))


# --- the polynomial's approximation error (not a Gappa job) -------------------------------------


def _arb(q: Fraction) -> arb:
    return arb(q.numerator) / arb(q.denominator)


def arb_polynomial_error_upper(coeffs, r: Fraction, pieces: int = 1024, tail: int = 30) -> Fraction:
    """A rigorous upper bound of sup |sum_j c_j t^j - exp(t)| over |t| <= r: the interval
    [-r, r] cut into ``pieces`` balls, on each exp(t) - P(t) = sum_j (1/j! - c_j) t^j
    + t^(n+1) sum_(i < tail) t^i/(n+1+i)! + (a remainder of size <= r^(n+1+tail) e^r/(n+1+tail)!),
    evaluated in Arb (no cancellation: the differences 1/j! - c_j are exact rationals)."""
    n = len(coeffs) - 1
    with ctx.workprec(200):
        diff = [_arb(Fraction(1, factorial(j)) - Fraction(c)) for j, c in enumerate(coeffs)]
        inv = [arb(1) / arb(factorial(n + 1 + i)) for i in range(tail)]
        ra = _arb(r)
        rest = ra ** (n + 1 + tail) / arb(factorial(n + 1 + tail)) * ra.exp()
        rest = arb(0).union(rest).union(-rest)
        best = Fraction(0)
        for i in range(pieces):
            t = _arb(-r + 2 * r * i / pieces).union(_arb(-r + 2 * r * (i + 1) / pieces))
            d = arb(0)
            for a in reversed(diff):
                d = d * t + a
            s = arb(0)
            for a in reversed(inv):
                s = s * t + a
            best = max(best, upper_fraction(abs(d + t ** (n + 1) * s + rest)))
    return best


def test_softmax_binary64_polynomial_error_covers_arb_supremum():
    """polynomial_error() (coefficient rounding plus Lagrange's remainder), which exp_polynomial.g
    assumes, is at least the supremum of |P - exp| on [-R_MAX, R_MAX] bounded rigorously in Arb."""
    sup = arb_polynomial_error_upper(sb.COEFFS, Fraction(sb.R_MAX))
    assert sup <= sb.polynomial_error(), (float(sup), float(sb.polynomial_error()))
    assert sup > sb.polynomial_error() / 2  # the bound is not loose by orders of magnitude


def _sollya_number(text: str) -> Fraction:
    m = re.fullmatch(r"\s*(-?\d+)(?:b(-?\d+))?\s*", text)
    if not m:
        raise ValueError(f"not a sollya dyadic number: {text!r}")
    return Fraction(int(m[1])) * Fraction(2) ** int(m[2] or 0)


def sollya_supnorm(coeffs, r: Fraction) -> tuple[Fraction, Fraction]:
    """sollya's rigorous enclosure [lo, hi] of sup |P - exp| on [-r, r] (supnorm)."""
    poly = " + ".join(f"{Fraction(c).numerator}/{Fraction(c).denominator}*x^{j}" for j, c in enumerate(coeffs))
    script = (f"prec = 200!;\ndisplay = dyadic!;\np = {poly};\n"
              f"print(supnorm(p, exp(x), [-{r.numerator}/{r.denominator}; {r.numerator}/{r.denominator}], "
              "absolute, 2^-20));\nquit;\n")
    done = subprocess.run([shutil.which("sollya"), "--warnonstderr"], input=script, capture_output=True,
                          text=True, timeout=60)
    m = re.search(r"\[([^;\]]+);([^\]]+)\]", done.stdout)
    assert done.returncode == 0 and m, f"sollya's supnorm gave no interval:\n{done.stdout}{done.stderr}"
    return _sollya_number(m[1]), _sollya_number(m[2])


def test_softmax_binary64_polynomial_error_covers_sollya_supnorm():
    """The same supremum by sollya's supnorm (rigorous: an interval that contains it).  The Arb
    bound above is the certificate that always runs; this one needs sollya, which ./dev installs."""
    if shutil.which("sollya") is None:
        pytest.fail(gs.SOLLYA_MISSING, pytrace=False)
    lo, hi = sollya_supnorm(sb.COEFFS, Fraction(sb.R_MAX))
    assert 0 < lo <= hi <= sb.polynomial_error()
    assert lo <= arb_polynomial_error_upper(sb.COEFFS, Fraction(sb.R_MAX))  # sollya and Arb agree


# --- constants that are facts about exp and ln 2, checked with an independent library ------------


def _mpf(q) -> mpmath.mpf:
    q = Fraction(q)
    return mpmath.mpf(q.numerator) / q.denominator


def _clamped_bound_holds(tiny_cut: Fraction) -> bool:
    """Step X: a clamped entry has y <= TINY_CUT + 2^-44 + LOGIT_RAD_MAX (shift.g proves the 2^-44)
    and E <= exp(TINY_CUT)(1 + KAPPA); both must stay below 2^-1009 (the code's comment on
    TINY_CUT, used by Steps S, Q and R)."""
    with mpmath.workprec(200):
        y = _mpf(tiny_cut) + _mpf(gs.CLAMP_SLACK) + _mpf(sb.LOGIT_RAD_MAX)
        e = mpmath.exp(_mpf(tiny_cut)) * (1 + _mpf(sb.KAPPA))
        # 1e-30 relative margin: far above mpmath's rounding at 200 bits
        return bool(mpmath.exp(y) * (1 + mpmath.mpf(2) ** -100) < mpmath.mpf(2) ** -1009
                    and e * (1 + mpmath.mpf(2) ** -100) < mpmath.mpf(2) ** -1009)


def test_softmax_binary64_tiny_cut_clamped_entries_below_2_pow_minus_1009():
    assert _clamped_bound_holds(Fraction(sb.TINY_CUT))
    assert not _clamped_bound_holds(Fraction(sb.TINY_CUT) * ONE_PERCENT)  # -693: e^-693 > 2^-1009


def test_softmax_binary64_ln2_split_constants():
    """LN2_HI has at most 40 significant bits (reduction.g proves k LN2_HI exact from the value
    itself), and the rationals the code derives from its Arb enclosure of ln 2 hold against
    mpmath at 400 bits; so does the ln 2 enclosure that reduction.g assumes."""
    hi = Fraction(sb.LN2_HI)
    assert hi.denominator <= 2**40 and 0 < hi < 1
    with mpmath.workprec(400):
        ln2, inv = mpmath.log(2), 1 / mpmath.log(2)
        tol = mpmath.mpf(2) ** -390
        assert _mpf(sb.LN2_UPPER) >= ln2
        assert abs(_mpf(hi) + _mpf(sb.LN2_LO) - ln2) + tol <= _mpf(sb.LN2_SPLIT_ERR)
        assert abs(_mpf(sb.INV_LN2) - inv) + tol <= _mpf(sb.INV_LN2_ERR)
        lo_enc, hi_enc = gs.ln2_enclosure()
        assert _mpf(lo_enc) + tol < ln2 < _mpf(hi_enc) - tol
        assert abs(_mpf(sb.INV_LN2) - inv) <= mpmath.mpf(2) ** -53  # the float nearest 1/ln 2


def test_softmax_binary64_exp_enclosures_in_exp_polynomial_script():
    """The enclosures exp_polynomial.g assumes: exp(-R_MAX), exp(R_MAX), exp(-+nu), against mpmath."""
    with mpmath.workprec(300):
        tol = mpmath.mpf(2) ** -280
        for q, bits in ((Fraction(sb.R_MAX), 64), (gs.dyadic(sb.reduction_error(), up=True), 100)):
            lo, hi = gs.exp_enclosure(q, bits=bits)
            assert _mpf(lo) + tol < mpmath.exp(-_mpf(q))
            assert mpmath.exp(_mpf(q)) < _mpf(hi) - tol
    assert gs.dyadic(sb.polynomial_error(), up=True) >= sb.polynomial_error()


def test_softmax_binary64_rational_constants_consistent():
    """The constants the code derives in exact rationals: KAPPA is exp_relative_error() rounded
    up; the reduction bound lies below R_MAX; ABS_RAD pays for 3 eta + 2^-1009 after its rounding
    (Step R)."""
    u, eta = fb.UNIT_ROUNDOFF, fb.UNDERFLOW_ETA
    assert sb.exp_relative_error() <= sb.KAPPA < sb.exp_relative_error() * (1 + 2 * u)
    assert sb.reduction_bound() <= Fraction(sb.R_MAX)
    assert Fraction(sb.ABS_RAD) * (1 - u) >= 3 * eta + Fraction(1, 2**1009)
