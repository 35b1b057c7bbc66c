"""Exact closure of the gauge and grid families (docs/families.md; no floats in any proof step).

- ``close_gauge_family(beta, t)``: queries and keys at +-e1, +-e2, logit scale beta, shear S_t.
  Symbolic (sympy): every logit is independent of t; Gamma(t) = beta (1 + t^2) from the
  Chebyshev radii of the sheared clouds; kappa(C) = beta from both sides.
  Proof: proofs/family_gauge.md.
- ``close_grid_family(r, L, eps)``: points {0..L-1}^r, logits 2 s <a,b> - s ||b||^2,
  s = log(8r / (1 - eps)).  Exact rationals: A is rational (q = e^-s = (1 - eps)/(8r)); rank C = r;
  kappa(C)/s = r (L-1)^2 / 2 from both sides (s is enclosed in an Arb ball only to print kappa);
  r_eps(A) = L^r by Lemma D with W = I (its sum computed by ``decoder_checks.lemma_d_sum``), using
  the product structure of the row sums.
  Proof: proofs/family_grid.md (lemmas: proofs/kappa_duality_contrast.md; Lemma D in step 4).

Each ``check_*`` function: well-formed input and check passes implies the claim in its docstring.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from fractions import Fraction

import sympy as sp
from flint import arb, fmpz_mat

from softrank.exact.rational import ONE
from softrank.exact.rational import parse_rational as exact_rational
from softrank.oracle.decoder_checks import lemma_d_sum
from softrank.errors import InputError
from softrank.validated.precision import PRECISION, working_precision

PROOF_GAUGE = "proofs/family_gauge.md"
PROOF_GRID = "proofs/family_grid.md"
PROOF_KAPPA = "proofs/kappa_duality_contrast.md"


# ---------------------------------------------------------------- arguments (InputError: one line, exit 2)

def parse_rational(text, where: str, name: str) -> Fraction:
    """An exact rational from an int, a Fraction or a string such as "1/4", "0.25", "3" (text of
    bounded size: ``softrank.exact.rational.parse_rational``, so "1e-999999999" is refused)."""
    if isinstance(text, (int, Fraction)) and not isinstance(text, bool):
        return Fraction(text)
    return exact_rational(str(text).strip(), where, name)


def _check_grid_args(r: int, L: int, eps: Fraction) -> None:
    if not isinstance(r, int) or isinstance(r, bool) or r < 1:
        raise InputError("families grid", "r", f"must be an integer >= 1, got {r!r}")
    if not isinstance(L, int) or isinstance(L, bool) or L < 2:
        raise InputError("families grid", "L", f"must be an integer >= 2, got {L!r}")
    if not (0 < eps < 1):
        raise InputError("families grid", "eps", f"must lie in (0, 1), got {eps}")
    if r > 17 or L**r > 200_000:  # 2^18 > 200000: a larger r is refused without computing L^r
        raise InputError("families grid", "L", f"L^r points (L = {L}, r = {r}) are beyond this exact check "
                                               "(limit 200000)")


# ---------------------------------------------------------------- gauge example (symbolic)

_T = sp.Symbol("t", real=True)
_BETA = sp.Symbol("beta", positive=True)


def gauge_clouds():
    """Q = K = rows e1, -e1, e2, -e2 (4 x 2) and the shear S_t = [[1, t], [0, 1]] (sympy)."""
    q = sp.Matrix([[1, 0], [-1, 0], [0, 1], [0, -1]])
    shear = sp.Matrix([[1, _T], [0, 1]])
    return q, q.copy(), shear


def check_gauge_invariance_symbolic() -> bool:
    """Well-formed and check passes implies: for every real t, beta (Q S_t)(K S_t^-T)^T = beta Q K^T,
    so every logit (hence A, C) is independent of t (proofs/family_gauge.md, step 1)."""
    q, k, s = gauge_clouds()
    diff = _BETA * (q * s) * (k * s.inv().T).T - _BETA * q * k.T
    return all(sp.simplify(e) == 0 for e in diff)


def _centrally_symmetric(rows: list) -> bool:
    """The multiset of rows equals the multiset of their negatives (symbolic equality)."""
    remaining = [sp.Matrix(r) for r in rows]
    for r in rows:
        neg = -sp.Matrix(r)
        hit = next((i for i, x in enumerate(remaining) if sp.simplify(x - neg) == sp.zeros(*neg.shape)), None)
        if hit is None:
            return False
        remaining.pop(hit)
    return True


def chebyshev_radius_sq_symmetric(cloud: sp.Matrix):
    """rad(cloud)^2 for a centrally symmetric cloud = max_i ||x_i||^2 (proofs/family_gauge.md, step 2).

    Returns the symbolic maximum, found as the one squared norm that every other squared norm
    is certainly <= for all real t (sympy's sign inference); None if no such entry is certain."""
    rows = [cloud.row(i) for i in range(cloud.rows)]
    if not _centrally_symmetric(rows):
        return None
    norms = [sp.expand((r * r.T)[0, 0]) for r in rows]
    for cand in norms:
        if all(sp.simplify(cand - other).is_nonnegative for other in norms):
            return cand
    return None


def native_gamma_gauge_symbolic():
    """Gamma(t) = beta rad(Q S_t) rad(K S_t^-T) as a sympy expression in beta, t."""
    q, k, s = gauge_clouds()
    rq2 = chebyshev_radius_sq_symmetric(q * s)
    rk2 = chebyshev_radius_sq_symmetric(k * s.inv().T)
    if rq2 is None or rk2 is None:
        return None
    return sp.simplify(_BETA * sp.sqrt(rq2) * sp.sqrt(rk2))


def check_gauge_kappa_exact(beta: Fraction) -> tuple[Fraction, Fraction]:
    """Well-formed and both returned bounds equal beta implies kappa(C) = beta for the gauge example
    at scale beta (proofs/family_gauge.md step 3; contrast lemma of proofs/kappa_duality_contrast.md).

    Returns (lower, upper), exact rationals: upper from the factorization C = (sqrt(beta) Q)
    (sqrt(beta) K)^T, i.e. beta rad(Q) rad(K) with rad^2 = max squared norm (symmetric clouds);
    lower from the rectangle contrast |C11 - C12 - C21 + C22| / 4."""
    q, k, _ = gauge_clouds()
    b = sp.Rational(beta.numerator, beta.denominator)
    h = b * q * k.T
    m, n = h.shape
    pm = sp.eye(m) - sp.ones(m, m) / m
    pn = sp.eye(n) - sp.ones(n, n) / n
    c = pm * h * pn
    rq2 = chebyshev_radius_sq_symmetric(q)
    rk2 = chebyshev_radius_sq_symmetric(k)
    upper = b * sp.sqrt(rq2) * sp.sqrt(rk2)  # rad(sqrt(b) Q) rad(sqrt(b) K), and C = H here
    if sp.simplify(c - h) != sp.zeros(m, n) or not upper.is_Rational:
        raise ArithmeticError("gauge example: factorization bound is not the expected rational")
    lower = abs(c[0, 0] - c[0, 1] - c[1, 0] + c[1, 1]) / 4
    return Fraction(int(lower.p), int(lower.q)), Fraction(int(upper.p), int(upper.q))


@dataclass
class GaugeClosure:
    beta: Fraction
    t: Fraction
    invariant: bool
    gamma_symbolic: str
    gamma: Fraction
    kappa_lower: Fraction
    kappa_upper: Fraction
    first_row_A: list[float] = field(default_factory=list)

    @property
    def proved(self) -> bool:
        return self.invariant and self.kappa_lower == self.kappa_upper == self.beta

    def as_json(self) -> dict:
        return {
            "family": "gauge", "beta": str(self.beta), "t": str(self.t), "invariant": self.invariant,
            "gamma_formula": self.gamma_symbolic, "gamma": float(self.gamma), "gamma_exact": str(self.gamma),
            "kappa": float(self.kappa_upper) if self.proved else None,
            "kappa_exact": str(self.kappa_upper) if self.proved else None,
            "kappa_lower": str(self.kappa_lower), "kappa_upper": str(self.kappa_upper),
            "first_row_A": self.first_row_A, "proved": self.proved, "proofs": [PROOF_GAUGE, PROOF_KAPPA],
        }


def close_gauge_family(beta, t) -> GaugeClosure:
    """Close the gauge example at positive rational beta and rational shear t."""
    beta = parse_rational(beta, "families gauge", "beta")
    t = parse_rational(t, "families gauge", "t")
    if beta <= 0:
        raise InputError("families gauge", "beta", f"must be > 0, got {beta}")
    invariant = check_gauge_invariance_symbolic()
    g = native_gamma_gauge_symbolic()
    if g is None:
        raise ArithmeticError("gauge example: Chebyshev radius not determined symbolically")
    g_at = sp.nsimplify(g.subs({_BETA: sp.Rational(beta.numerator, beta.denominator),
                                _T: sp.Rational(t.numerator, t.denominator)}))
    if not g_at.is_Rational:
        raise ArithmeticError("gauge example: Gamma is not rational at rational beta, t")
    lo, up = check_gauge_kappa_exact(beta)
    # First row of A (display only), enclosed in Arb: e^{b}, e^{-b}, 1, 1 normalised.
    with working_precision("families_display"):
        bb = arb(beta.numerator) / beta.denominator
        e = [bb.exp(), (-bb).exp(), arb(1), arb(1)]
        tot = e[0] + e[1] + e[2] + e[3]
        row = [float((x / tot).mid()) for x in e]
    return GaugeClosure(beta=beta, t=t, invariant=invariant, gamma_symbolic=str(g),
                        gamma=Fraction(int(g_at.p), int(g_at.q)), kappa_lower=lo, kappa_upper=up,
                        first_row_A=row)


# ---------------------------------------------------------------- grid family (exact rationals)

def grid_q(r: int, eps: Fraction) -> Fraction:
    """q = e^{-s} = (1 - eps) / (8 r), exact."""
    return (1 - eps) / (8 * r)


def grid_points(r: int, L: int):
    return list(itertools.product(range(L), repeat=r))


def grid_attention_exact(r: int, L: int, eps: Fraction) -> list[list[Fraction]]:
    """The exact rational A = rowsoftmax(H), A_ab = q^{||a-b||^2} / sum_b' q^{||a-b'||^2}
    (proofs/family_grid.md, step 1).  Dense; for tests at small L^r."""
    q = grid_q(r, eps)
    pts = grid_points(r, L)
    rows = []
    for a in pts:
        w = [q ** sum((x - y) ** 2 for x, y in zip(a, b)) for b in pts]
        z = sum(w)
        rows.append([x / z for x in w])
    return rows


def grid_row_factor_numerators(L: int, q: Fraction) -> tuple[list[int], int]:
    """(N_0, ..., N_{L-1}; B) with z(v) = N_v / B exactly, B = b^D, D = (L - 1)^2, q = a/b.

    z(v) = sum_w q^{(v-w)^2} depends on the distances d = |v - w| only: with integers
    T_d = a^{d^2} b^{D - d^2} and their prefix sums P_n = T_0 + ... + T_n,
    N_v = P_v + P_{L-1-v} - T_0 (w <= v gives d = 0..v, w > v gives d = 1..L-1-v).  L powers and
    O(L) integer additions instead of L^2 rational powers (L = 200 took minutes)."""
    a, b = q.numerator, q.denominator
    D = (L - 1) ** 2
    T = [a ** (d * d) * b ** (D - d * d) for d in range(L)]
    P = list(itertools.accumulate(T))
    return [P[v] + P[L - 1 - v] - T[0] for v in range(L)], b**D


def grid_row_factor_sums(L: int, q: Fraction) -> list[Fraction]:
    """z(v) = sum_{w=0}^{L-1} q^{(v-w)^2}; the row sum of A's numerators at point a is
    prod_k z(a_k) (distributivity; proofs/family_grid.md, step 4)."""
    N, B = grid_row_factor_numerators(L, q)
    return [Fraction(n, B) for n in N]


def check_grid_lemma_D_identity(r: int, L: int, eps: Fraction) -> tuple[bool, Fraction]:
    """Lemma D with S = all rows, W = I (proved in proofs/family_grid.md, step 4).

    Well-formed and check passes (first value True) implies r_eps(A) >= L^r, hence
    r_eps(A) = L^r (B = A has rank <= L^r).  Returns (passes, ||A - I||_inf + eps) exactly.

    ||A - I||_inf = max_a 2 (1 - A_aa) since the rows are positive and sum to 1, and
    A_aa = 1 / Z_a with Z_a = prod_k z(a_k) maximal at (argmax z)^r; max_j ||W_j||_1 = 1."""
    q = grid_q(r, eps)
    N, B = grid_row_factor_numerators(L, q)
    n = max(N)  # zmax = n / B
    value = lemma_d_sum(2 * (1 - Fraction(B**r, n**r)), eps, ONE)  # ||A - I||_inf, max_j ||I_j||_1 = 1
    return value < 1, value


def check_grid_rank_C(r: int, L: int) -> bool:
    """Well-formed and check passes implies rank C = r (proofs/family_grid.md, step 2):
    C = 2 s (P Z)(P Z)^T with s > 0, so rank C = rank (P Z)^T (P Z) = rank(Z^T P Z), computed exactly."""
    pts = grid_points(r, L)
    n = len(pts)
    sums = [sum(p[k] for p in pts) for k in range(r)]
    # n * Z^T P Z = n Z^T Z - (Z^T 1)(1^T Z): an integer matrix with the same rank.
    gram_n = [[n * sum(p[i] * p[j] for p in pts) - sums[i] * sums[j] for j in range(r)] for i in range(r)]
    return fmpz_mat(r, r, [x for row in gram_n for x in row]).rank() == r


def grid_kappa_over_s_upper(r: int, L: int) -> Fraction:
    """Upper bound on kappa(C)/s from the factorization X = Y = sqrt(2 s) P Z
    (proofs/family_grid.md step 3): rad(X) rad(Y) = 2 s rad(Z)^2 <= 2 s max_a ||a - c||^2 with the
    centre c = ((L-1)/2, ...); returns 2 max_a ||a - c||^2 exactly (max over the grid)."""
    c = Fraction(L - 1, 2)
    # ||a - c||^2 is a sum over coordinates: its maximum is r * max_v (v - c)^2.
    worst = max((v - c) ** 2 for v in range(L))
    return 2 * r * worst


def grid_kappa_over_s_lower(r: int, L: int) -> Fraction:
    """Lower bound on kappa(C)/s from the dual certificate p = q = uniform on the 2^r corners
    (proofs/kappa_duality_contrast.md, Lemma K1; proofs/family_grid.md step 3):
    kappa(C) >= ||W_p C W_p^T||_* = 2 s tr(Sig_p) (PSD, so nuclear norm = trace), with Sig_p the
    corner covariance computed exactly.  Returns 2 tr(Sig_p)."""
    corners = list(itertools.product((0, L - 1), repeat=r))
    n = len(corners)
    mean = [Fraction(sum(c[k] for c in corners), n) for k in range(r)]
    trace = sum(Fraction(sum((c[k] - mean[k]) ** 2 for c in corners), n) for k in range(r))
    return 2 * trace


def grid_s_ball(r: int, eps: Fraction, prec: int = PRECISION["families"]) -> arb:
    """A ball containing s = log(8 r / (1 - eps))."""
    with working_precision(prec):
        x = arb(8 * r * eps.denominator) / arb(eps.denominator - eps.numerator)
        return x.log()


@dataclass
class GridClosure:
    r: int
    L: int
    eps: Fraction
    q: Fraction
    rank_C_is_r: bool
    kappa_over_s_lower: Fraction
    kappa_over_s_upper: Fraction
    s_ball: arb
    lemma_D_value: Fraction
    lemma_D_passes: bool

    @property
    def kappa_closed(self) -> bool:
        return self.kappa_over_s_lower == self.kappa_over_s_upper

    @property
    def proved(self) -> bool:
        return self.rank_C_is_r and self.kappa_closed and self.lemma_D_passes

    def kappa_ball(self) -> arb:
        with working_precision("families"):
            k = self.kappa_over_s_upper
            return self.s_ball * arb(k.numerator) / k.denominator

    def as_json(self) -> dict:
        kb = self.kappa_ball()
        return {
            "family": "grid", "r": self.r, "L": self.L, "eps": str(self.eps), "q": str(self.q),
            "n_points": self.L**self.r,
            "rank_C": self.r if self.rank_C_is_r else None,
            "kappa": float(kb.mid()) if self.kappa_closed else None,
            "kappa_ball": kb.str(20, radius=True) if self.kappa_closed else None,
            "kappa_over_s": str(self.kappa_over_s_upper) if self.kappa_closed else None,
            "kappa_over_s_lower": str(self.kappa_over_s_lower),
            "kappa_over_s_upper": str(self.kappa_over_s_upper),
            "s": f"log({8 * self.r}/(1 - {self.eps}))",
            "s_ball": self.s_ball.str(20, radius=True),
            "approximation_rank": self.L**self.r if self.lemma_D_passes else None,
            "lemma_D_value": float(self.lemma_D_value),
            "lemma_D_value_exact_below_1": self.lemma_D_passes,
            "proved": self.proved,
            "proofs": [PROOF_GRID, PROOF_KAPPA],
        }


def close_grid_family(r: int, L: int, eps) -> GridClosure:
    """Close the grid family exactly at (r, L, eps)."""
    eps = parse_rational(eps, "families grid", "eps")
    _check_grid_args(r, L, eps)
    passes, value = check_grid_lemma_D_identity(r, L, eps)
    return GridClosure(r=r, L=L, eps=eps, q=grid_q(r, eps), rank_C_is_r=check_grid_rank_C(r, L),
                       kappa_over_s_lower=grid_kappa_over_s_lower(r, L),
                       kappa_over_s_upper=grid_kappa_over_s_upper(r, L),
                       s_ball=grid_s_ball(r, eps), lemma_D_value=value, lemma_D_passes=passes)
