"""The Gappa scripts of proofs/gappa/, generated from the constants of the trusted core.

Each script machine-checks the floating-point steps of one part of proofs/softmax_binary64.md or
proofs/binary64_error_bounds.md.  Its goals are the constants that validated/softmax_binary64.py
and validated/float_bounds.py use, read from the modules and written into the goal (a rational
that is not a short dyadic number is rounded toward the stronger claim), so a proved script
proves that the code's constant is a valid bound.  Its hypotheses are either code constants too
(a range the code guarantees) or facts that Arb certifies here (enclosures of ln 2, exp(+-R_MAX),
exp(+-nu)), each widened outward.

``render(name)`` gives a script's text; ``render(name, R_MAX=...)`` the same script with one
constant replaced (the tests weaken a constant by 1% this way and require gappa to fail).  The
files in proofs/gappa/ are exactly ``render(name)`` for every name; after a change of a constant,
regenerate them with

    .venv/bin/python tests/validated/gappa_scripts.py

(the test suite fails, naming the stale file, until they are regenerated and proved again).
"""

from __future__ import annotations

import math
import shutil
import subprocess
from fractions import Fraction
from pathlib import Path

from flint import arb, ctx

from softrank.validated import float_bounds as fb
from softrank.validated import softmax_binary64 as sb
from softrank.validated.balls import lower_fraction, upper_fraction

ROOT = Path(__file__).resolve().parents[2]
GAPPA_DIR = ROOT / "proofs" / "gappa"
GAPPA_MISSING = "gappa not found: run ./dev setup or apt-get install gappa"
SOLLYA_MISSING = "sollya not found: run ./dev setup or apt-get install sollya"
NOT_SATISFIED = "some properties were not satisfied"

ROW_N = 8  # the row length of the R1 instances (row_sum.g)
B2_N = 4  # the row length of the B2 instance (row_sum.g)
DOT_N = 4  # the length of the R3 instance (binary64_rules.g)
CLAMP_SLACK = Fraction(1, 2**44)  # Step X: fl(z) <= TINY_CUT implies z <= TINY_CUT + 2^-44


# ---------------------------------------------------------------------------------------------
# Constants


def code_constants() -> dict[str, Fraction]:
    """Every constant a script reads, from validated/softmax_binary64.py and
    validated/float_bounds.py, as exact rationals."""
    r = Fraction(sb.R_MAX)
    return {
        "TINY_CUT": Fraction(sb.TINY_CUT),
        "K_MAX": Fraction(sb.K_MAX),
        "R_MAX": r,
        "INV_LN2": Fraction(sb.INV_LN2),
        "LN2_HI": Fraction(sb.LN2_HI),
        "LN2_LO": Fraction(sb.LN2_LO),
        "M2": sb.M2,
        "REDUCTION_BOUND": sb.reduction_bound(),
        "NU": sb.reduction_error(),
        "HORNER": sb.horner_error(r),
        "POLY": sb.polynomial_error(),
        "KAPPA": sb.KAPPA,
        "LOGIT_RAD_MAX": Fraction(sb.LOGIT_RAD_MAX),
        "RHO_MAX": sb.RHO_MAX,
        "U": fb.UNIT_ROUNDOFF,
        "ETA": fb.UNDERFLOW_ETA,
        "GAMMA_R1": fb.gamma(ROW_N - 1),  # R1: (1 - gamma_(n-1)) S <= fl(S) <= (1 + gamma_(n-1)) S
        "GAMMA_B2": fb.gamma(B2_N + 1),  # B2 with c = 2 (max_rowsum_abs_diff_upper's gamma(n + 1))
        "GAMMA_R3": fb.gamma(DOT_N),  # R3 with non-negative products
    }


def _coeffs() -> list[Fraction]:
    return [Fraction(c) for c in sb.COEFFS]


def _is_dyadic(q: Fraction) -> bool:
    return q.denominator & (q.denominator - 1) == 0


def dyadic(q: Fraction, up: bool, bits: int = 64) -> Fraction:
    """q itself when it is a dyadic rational of at most ``bits`` significant bits, else the
    nearest such number above (``up``) or below q."""
    q = Fraction(q)
    if q == 0:
        return q
    a = abs(q)
    if _is_dyadic(a):
        odd = a.numerator >> ((a.numerator & -a.numerator).bit_length() - 1)
        if odd.bit_length() <= bits:
            return q
    e = a.numerator.bit_length() - a.denominator.bit_length() - bits
    while a / Fraction(2) ** e >= 2**bits:
        e += 1
    while a / Fraction(2) ** e < 2 ** (bits - 1):
        e -= 1
    m = a / Fraction(2) ** e
    away = up == (q > 0)  # rounding up a positive number, or down a negative one
    mm = math.ceil(m) if away else math.floor(m)
    return (1 if q > 0 else -1) * Fraction(mm) * Fraction(2) ** e


def lit(q: Fraction) -> str:
    """A Gappa number literal with exactly the value q (a dyadic rational)."""
    q = Fraction(q)
    if not _is_dyadic(q):
        raise ValueError(f"{q} is not a dyadic rational")
    if q.denominator == 1:
        return str(q.numerator)
    sign, a = ("-" if q < 0 else ""), abs(q)
    if a.numerator < 2**20:  # a short dyadic number: 3b-7, 1b-53
        return f"{sign}{a.numerator}b-{a.denominator.bit_length() - 1}"
    f = float(q)
    if Fraction(f) == q and f != 0 and abs(f) >= 2.0**-1022:
        return f.hex()
    n, e = a.numerator, a.denominator.bit_length() - 1
    return f"{sign}{n}b-{e}"


def goal(q: Fraction) -> str:
    """A goal bound: the code's constant, rounded down (toward the stronger claim)."""
    return lit(dyadic(q, up=False))


def _arb_of(q: Fraction) -> arb:
    return arb(q.numerator) / arb(q.denominator)


def ln2_enclosure() -> tuple[Fraction, Fraction]:
    """Dyadic rationals lo < ln 2 < hi, 120 bits (Arb at 300 bits)."""
    with ctx.workprec(300):
        ln2 = arb(2).log()
        return dyadic(lower_fraction(ln2), up=False, bits=120), dyadic(upper_fraction(ln2), up=True, bits=120)


def exp_enclosure(q: Fraction, bits: int = 64) -> tuple[Fraction, Fraction]:
    """Dyadic rationals lo <= exp(-q) and hi >= exp(q), for q >= 0 (Arb at 300 bits)."""
    with ctx.workprec(300):
        a = _arb_of(Fraction(q))
        return dyadic(lower_fraction((-a).exp()), up=False, bits=bits), dyadic(upper_fraction(a.exp()), up=True, bits=bits)


def _binades(lo: int, hi: int, sign: str = "") -> str:
    """The bisection points sign 2^e for e from lo to hi, in increasing order of value."""
    exps = range(hi, lo - 1, -1) if sign == "-" else range(lo, hi + 1)
    return ", ".join(f"{sign}1b{e}" for e in exps)


def _header(title: str, lines: list[str], options: str) -> str:
    body = "\n".join(f"# {line}" if line else "#" for line in lines)
    return (f"#@{options}\n# {title}\n{body}\n#\n# Generated by tests/validated/gappa_scripts.py from the "
            "constants of the trusted core;\n# tests/validated/test_gappa_proofs.py checks that this "
            "file is current and that gappa proves it.\n")


# ---------------------------------------------------------------------------------------------
# The scripts


def reduction(c: dict[str, Fraction]) -> str:
    inv, hi, lo_c = lit(c["INV_LN2"]), lit(c["LN2_HI"]), lit(c["LN2_LO"])
    l_lo, l_hi = ln2_enclosure()
    return _header(
        "Step P1 of proofs/softmax_binary64.md: the Cody-Waite reduction of exp_nonpositive.",
        ["For every binary64 x in [TINY_CUT, 0]: k = rint(fl(x INV_LN2)) has |k| <= K_MAX; k LN2_HI",
         "is exact; |fl(k LN2_LO)| <= M2; the reduced argument r = fl(fl(x - k LN2_HI) - fl(k LN2_LO))",
         "has |r| <= R_MAX and |r| <= reduction_bound(), and |r - (x - k ln 2)| <= nu (reduction_error).",
         "ln 2 is any real in an Arb enclosure of width 2^-118."],
        "-Eprecision=200 -Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
@rint = int<ne>;                   # np.rint: to nearest, ties to even
x = rnd(x_);                       # a clamped shifted logit
y rnd= x * {inv};                  # fl(x * INV_LN2)
k = rint(y);
kh rnd= k * {hi};                  # fl(k * LN2_HI)
t rnd= x - kh;
p rnd= k * {lo_c};                 # fl(k * LN2_LO)
r rnd= t - p;                      # r_f
rr = x - k * ln2;                  # rho_red = x - k ln 2, exact

{{ x in [{lit(c["TINY_CUT"])}, 0]                                   # TINY_CUT
   /\\ ln2 in [{lit(l_lo)}, {lit(l_hi)}]
-> k in [-{goal(c["K_MAX"])}, 0]                                     # K_MAX
   /\\ kh = k * {hi}                                               # exact: LN2_HI has 40 bits
   /\\ |p| <= {goal(c["M2"])}                                         # M2
   /\\ |r| <= {goal(c["R_MAX"])}                                      # R_MAX
   /\\ |r| <= {goal(c["REDUCTION_BOUND"])}                                   # reduction_bound()
   /\\ |r - rr| <= {goal(c["NU"])}                                    # nu = reduction_error()
}}

# x - k ln 2 = (y - k) ln 2 - (y - x INV_LN2) ln 2 + x (1 - INV_LN2 ln 2)
rr -> (y - k) * ln2 - (y - x * {inv}) * ln2 + x * (1 - {inv} * ln2);
x - kh -> rr + k * (ln2 - {hi}) - (kh - k * {hi});
t - p -> (x - kh) + (t - (x - kh)) - p;
r - rr -> (r - (t - p)) + (t - (x - kh)) - (p - k * {lo_c}) - (kh - k * {hi}) - k * (({hi} + {lo_c}) - ln2);
"""


def exp_polynomial(c: dict[str, Fraction]) -> str:
    coeffs = _coeffs()
    n = len(coeffs) - 1
    v = [f"v{n - 1} rnd= {lit(coeffs[n])} * r + {lit(coeffs[n - 1])};"]
    v += [f"v{j} rnd= v{j + 1} * r + {lit(coeffs[j])};" for j in range(n - 2, -1, -1)]
    p = [f"P{n - 1} = {lit(coeffs[n])} * r + {lit(coeffs[n - 1])};"]
    p += [f"P{j} = P{j + 1} * r + {lit(coeffs[j])};" for j in range(n - 2, -1, -1)]
    e_lo, e_hi = exp_enclosure(c["R_MAX"])
    nu = dyadic(c["NU"], up=True)
    d_lo, d_hi = exp_enclosure(nu, bits=100)
    return _header(
        "Steps P2 and P3 of proofs/softmax_binary64.md: the Horner evaluation of exp_nonpositive.",
        [f"For every binary64 r with |r| <= R_MAX, Horner's scheme of degree DEGREE = {n} with the",
         "coefficients COEFFS (c_j = fl(1/j!)), each step rounded to nearest, returns v0 with",
         "|v0 - P(r)| <= horner_error(R_MAX) (P the exact polynomial) and v0 in [0.7, 1.42]. With",
         "er = exp(r) and ed = exp(r - rho_red) (only their enclosures are used: exp(+-R_MAX) and",
         "exp(+-nu) from Arb, |P(r) - exp(r)| <= polynomial_error(), which the tests certify with",
         "sollya's supnorm and with Arb), the result E = 2^k v0 has",
         "|E/exp(x) - 1| = |v0 ed / er - 1| <= KAPPA."],
        "-Eprecision=200 -Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
r = rnd(r_);                       # the reduced argument
{chr(10).join(v)}
{chr(10).join(p)}

{{ |r| <= {lit(c["R_MAX"])}                                         # R_MAX (proved by reduction.g)
   /\\ er in [{lit(e_lo)}, {lit(e_hi)}]         # exp(r), |r| <= R_MAX
   /\\ |P0 - er| <= {lit(dyadic(c["POLY"], up=True))}                                   # polynomial_error()
   /\\ ed in [{lit(d_lo)}, {lit(d_hi)}]   # exp(r - rho_red), |r - rho_red| <= nu
-> |v0 - P0| <= {goal(c["HORNER"])}                                 # horner_error(R_MAX)
   /\\ v0 in [0.7, 1.42]                                          # Step P3's range of v_0
   /\\ |(v0 * ed - er) / er| <= {goal(c["KAPPA"])}                     # KAPPA
}}

# E / exp(x) = v0 / exp(rho_red) = v0 ed / er
(v0 * ed - er) / er -> ((v0 - P0) + (P0 - er)) * ed / er + (ed - 1) {{ er <> 0 }};
"""


def exp_scaling(c: dict[str, Fraction]) -> str:
    return _header(
        "Step P3 of proofs/softmax_binary64.md: the reconstruction E = ldexp(v0, k) of exp_nonpositive.",
        ["For binary64 v0 in [0.7, 1.42] and every power of two s = 2^k, -K_MAX <= k <= 0, the product",
         "v0 s is a binary64 number (so ldexp is exact: no rounding, no underflow), is normal",
         "(>= 2^-1022) and is at most 2."],
        "-Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
@pow2 = float<1, -1074, ne>;       # the powers of two (one significant bit)
v0 = rnd(v0_);                     # fl(Horner)
s = pow2(s_);                      # 2^k
E rnd= v0 * s;

{{ v0 in [0.7, 1.42]                                                # proved by exp_polynomial.g
   /\\ s in [{lit(Fraction(1, 2 ** int(c["K_MAX"])))}, 1]                                   # K_MAX
-> E = v0 * s
   /\\ E >= 1b-1022
   /\\ E <= 2
}}
"""


def shift(c: dict[str, Fraction]) -> str:
    u = goal(c["U"])
    clamp = lit(c["TINY_CUT"] + CLAMP_SLACK)
    return _header(
        "Step X of proofs/softmax_binary64.md: the shift x = fl(h - c) by the row maximum, the clamp.",
        ["For binary64 h <= c: |(h - c) - x| <= u |x| when 2^-1022 <= |h - c| <= 1024 (R2, measured",
         "against the computed x; an unclamped entry has |h - c| < 701) and x = h - c below 2^-1022;",
         "fl(h - c) <= TINY_CUT implies h - c <= TINY_CUT + 2^-44 (any h, c);",
         "and rho = r + u |x| <= RHO_MAX for every logit radius r <= LOGIT_RAD_MAX and x in [TINY_CUT, 0]."],
        "-Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
h = rnd(h_);                       # a logit
c = rnd(c_);                       # the row maximum
x rnd= h - c;                      # the shifted logit
z = h - c;                         # exact
xs = rnd(xs_);                     # an unclamped shifted logit
{{ h in [-1b1022, 1b1022] /\\ c in [-1b1022, 1b1022] /\\ z <= 0
   /\\ rad in [0, {lit(c["LOGIT_RAD_MAX"])}]                               # LOGIT_RAD_MAX
   /\\ xs in [{lit(c["TINY_CUT"])}, 0]                                   # TINY_CUT
-> (z in [-1b10, -1b-1022] -> |(z - x) / x| <= {u})                  # u (unclamped: |z| < 701)
   /\\ (z in [-1b-1022, 0] -> x = z)
   /\\ (x <= {lit(c["TINY_CUT"])} -> z <= {clamp})                  # TINY_CUT + 2^-44
   /\\ rad + {u} * |xs| <= {goal(c["RHO_MAX"])}                        # RHO_MAX
}}

$ z in ({_binades(-1021, 10, "-")});
"""


def division(c: dict[str, Fraction]) -> str:
    return _header(
        "Step Q of proofs/softmax_binary64.md: the quotient q = fl(E / s).",
        ["For binary64 E in [2^-1011, 2] (every term of a row, Step P) and s in [1, 2^60] (a row sum):",
         "E/s = q (1 + theta) with |theta| <= u when E/s >= 2^-1022, |E/s - q| <= eta/2 below, and",
         "0 <= q <= 1 when E <= s."],
        "-Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
E = rnd(E_);
S = rnd(S_);
q rnd= E / S;                      # a_mid
z = E / S;                         # exact
{{ E in [1b-1011, 2] /\\ S in [1, 1b60]
-> (z in [1b-1022, 1] -> |(z - q) / q| <= {goal(c["U"])})                 # u (the code charges u/(1-u))
   /\\ (z in [0, 1b-1022] -> |q - z| <= {goal(c["ETA"] / 2)})              # eta/2
   /\\ (z in [0, 1] -> q in [0, 1])
}}

$ z in ({_binades(-1022, -1)});
"""


def row_sum(c: dict[str, Fraction]) -> str:
    n, m = ROW_N, B2_N
    terms = [f"e{i} = rnd(e{i}_);" for i in range(n)]
    seq = ["a1 rnd= e0 + e1;"] + [f"a{i} rnd= a{i - 1} + e{i};" for i in range(2, n)]
    seq_exact = ["A1 = e0 + e1;"] + [f"A{i} = A{i - 1} + e{i};" for i in range(2, n)]

    def tree(names: list[str]) -> str:
        while len(names) > 1:
            names = [f"({names[i]} + {names[i + 1]})" for i in range(0, len(names), 2)]
        return names[0]

    leaves = [f"e{i}" for i in range(n)]
    b2 = []
    for i in range(m):
        b2 += [f"m{i} = rnd(m{i}_); p{i} = rnd(p{i}_); w{i} = rnd(w{i}_);",
               f"d{i} = rnd(|m{i} - p{i}|);     # = |fl(m - p)|",
               f"T{i} rnd= d{i} + w{i};", f"t{i} = |m{i} - p{i}| + w{i};"]
    b2_sum = "B rnd= " + " + ".join(f"T{i}" for i in range(m)) + ";"
    b2_exact = "Bx = " + " + ".join(f"t{i}" for i in range(m)) + ";"
    g1, g2 = goal(c["GAMMA_R1"]), goal(c["GAMMA_B2"])
    pos = "[1b-1074, 1b1000]"
    hyp = " /\\ ".join(f"e{i} in {pos}" for i in range(n))
    hyp_b2 = " /\\ ".join(f"m{i} in [-1b1000, 1b1000] /\\ p{i} in [-1b1000, 1b1000] /\\ w{i} in {pos}"
                          for i in range(m))
    return _header(
        "Step S of proofs/softmax_binary64.md and R1, B2 of proofs/binary64_error_bounds.md: row sums.",
        [f"R1 for a row of N = {n} positive binary64 terms (any magnitude, subnormals included; a zero",
         "term is added exactly), summed left to right and pairwise: fl(S) = S (1 + theta) with",
         f"|theta| <= gamma_(N-1) (float_bounds.gamma({n - 1})); the code charges gamma_N.",
         f"B2 for a row of N = {m} terms t = |a - p| + r, each computed with c = 2 roundings as",
         f"fl(|fl(a - p)| + r): fl(sum T) = (sum t)(1 + theta), |theta| <= gamma_(N+1) (float_bounds.gamma({m + 1}),",
         "as max_rowsum_abs_diff_upper uses it)."],
        "-Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
{chr(10).join(terms)}
{chr(10).join(seq)}
{chr(10).join(seq_exact)}
pw rnd= {tree(leaves)};
Pw = {tree(leaves)};
{chr(10).join(b2)}
{b2_sum}
{b2_exact}

{{ {hyp}
   /\\ {hyp_b2}
-> a{n - 1} -/ A{n - 1} in [-{g1}, {g1}]                       # gamma_(N-1), left to right
   /\\ pw -/ Pw in [-{g1}, {g1}]                              # gamma_(N-1), pairwise
   /\\ B -/ Bx in [-{g2}, {g2}]                               # gamma_(N+1), B2
}}
"""


def binary64_rules(c: dict[str, Fraction]) -> str:
    u, half_eta = goal(c["U"]), goal(c["ETA"] / 2)
    g3 = goal(c["GAMMA_R3"])
    big = "[-1b1000, 1b1000]"
    xs = [f"x{i} = rnd(x{i}_); y{i} = rnd(y{i}_);" for i in range(DOT_N)]
    dot = "x0 * y0"
    for i in range(1, DOT_N):
        dot = f"({dot} + x{i} * y{i})" if i < DOT_N - 1 else f"{dot} + x{i} * y{i}"
    normal_products = " /\\ ".join(f"x{i} * y{i} in [1b-1022, 1b500]" for i in range(DOT_N))
    split_products = ", ".join(f"x{i} * y{i} in (1b-1021)" for i in range(DOT_N))
    return _header(
        "R2 and R3 of proofs/binary64_error_bounds.md: one rounding, and a dot product.",
        ["R2 for binary64 operands a, b: fl(a + b) = (a + b)(1 + d) and fl(a - b) = (a - b)(1 + d),",
         "|d| <= u, in every range, exact when |a + b| <= 2^-1022; fl(a b) = a b (1 + d), |d| <= u, when",
         "|a b| >= 2^-1022, and |fl(a b) - a b| <= eta/2 below.",
         f"R3 with non-negative products in the normal range, n = {DOT_N}: fl(x^T y) = x^T y (1 + theta),",
         f"|theta| <= gamma_n (float_bounds.gamma({DOT_N})). (An underflowing product adds at most eta/2: R2.)"],
        "-Eno-auto-dichotomy") + f"""
@rnd = float<ieee_64, ne>;
a1 = rnd(a1_); b1 = rnd(b1_); s1 rnd= a1 + b1; z1 = a1 + b1;
a2 = rnd(a2_); b2 = rnd(b2_); s2 rnd= a2 - b2; z2 = a2 - b2;
a3 = rnd(a3_); b3 = rnd(b3_); s3 rnd= a3 + b3; z3 = a3 + b3;
a4 = rnd(a4_); b4 = rnd(b4_); m4 rnd= a4 * b4; z4 = a4 * b4;
a5 = rnd(a5_); b5 = rnd(b5_); m5 rnd= a5 * b5; z5 = a5 * b5;
a6 = rnd(a6_); b6 = rnd(b6_); m6 rnd= a6 * b6; z6 = a6 * b6;
{chr(10).join(xs)}
dot rnd= {dot};
Dot = {dot};

{{ a1 in {big} /\\ b1 in {big} /\\ a2 in {big} /\\ b2 in {big}
   /\\ a3 in {big} /\\ b3 in {big} /\\ z3 in [-1b-1022, 1b-1022]
   /\\ a4 in {big} /\\ b4 in {big} /\\ z4 in [1b-1022, 1b1000]
   /\\ a5 in {big} /\\ b5 in {big} /\\ z5 in [-1b1000, -1b-1022]
   /\\ a6 in {big} /\\ b6 in {big} /\\ z6 in [-1b-1022, 1b-1022]
   /\\ {normal_products}
-> s1 -/ z1 in [-{u}, {u}]                                   # u, addition
   /\\ s2 -/ z2 in [-{u}, {u}]                                # u, subtraction
   /\\ s3 = z3                                               # exact below 2^-1022
   /\\ m4 -/ z4 in [-{u}, {u}]                                # u, product, normal range
   /\\ m5 -/ z5 in [-{u}, {u}]
   /\\ |m6 - z6| <= {half_eta}                                     # eta/2, product below 2^-1022
   /\\ dot -/ Dot in [-{g3}, {g3}]                             # gamma_n
}}

$ z4 in (1b-1021);
$ z5 in (-1b-1021);
$ {split_products};
"""


SCRIPTS = {
    "reduction": reduction,
    "exp_polynomial": exp_polynomial,
    "exp_scaling": exp_scaling,
    "shift": shift,
    "division": division,
    "row_sum": row_sum,
    "binary64_rules": binary64_rules,
}


def _align(text: str, column: int = 60) -> str:
    """Line up the trailing comments of the code lines (not the header) at ``column``."""
    out = []
    for line in text.splitlines():
        code, sep, comment = line.partition("  # ")
        if sep and code.strip() and not line.startswith("#"):
            line = f"{code.rstrip().ljust(column - 1)} # {comment.strip()}"
        out.append(line)
    return "\n".join(out) + "\n"


def render(name: str, **overrides: Fraction) -> str:
    """The text of script ``name``, with the code's constants (some replaced by ``overrides``)."""
    c = code_constants()
    unknown = set(overrides) - set(c)
    if unknown:
        raise KeyError(f"no such constant: {sorted(unknown)}")
    c.update({k: Fraction(v) for k, v in overrides.items()})
    return _align(SCRIPTS[name](c))


def script_path(name: str) -> Path:
    return GAPPA_DIR / f"{name}.g"


# ---------------------------------------------------------------------------------------------
# Running gappa


def gappa_executable() -> str | None:
    return shutil.which("gappa")


def run_gappa(path: Path, timeout: float = 60) -> tuple[bool, str]:
    """(proved, gappa's messages) for the script at ``path``: proved when gappa exits 0 and does
    not report an unsatisfied property."""
    exe = gappa_executable()
    if exe is None:
        raise FileNotFoundError(GAPPA_MISSING)
    done = subprocess.run([exe, str(path)], capture_output=True, text=True, timeout=timeout)
    out = done.stderr + done.stdout
    return done.returncode == 0 and NOT_SATISFIED not in out, out


if __name__ == "__main__":
    GAPPA_DIR.mkdir(parents=True, exist_ok=True)
    for name in SCRIPTS:
        script_path(name).write_text(render(name))
        print(f"wrote {script_path(name).relative_to(ROOT)}")
