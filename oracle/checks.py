"""Exact re-check of every oracle certificate: small functions, Fraction arithmetic only.

Nothing here calls an LP solver or trusts the code that produced a certificate; each function
rebuilds the inequality it needs from the cell (A, eps) and the certificate's numbers.  One
function per certificate kind, each naming the proof file that says why passing it proves the
verdict.

A certificate is a JSON-able dict (rationals as strings ``"p/q"``, indices, signs and ranks as
JSON integers) with a ``"kind"``.  ``KINDS`` below is the table of kinds: for each, the verdict it
proves, its checker, the largest rank it speaks for, its classes, and the proof files that say why
passing the check proves the verdict (tests/oracle/test_checks.py checks that they exist).

An impossibility for the unrestricted class is one for the stochastic class too (fewer
competitors), and an impossibility at rank K is one at every rank k <= K.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from softrank.exact.rational import ZERO, matmul, transpose
from softrank.oracle.branch_checks import check_branch
from softrank.oracle.check_basics import (
    as_int,
    as_ints,
    as_matrix,
    as_rational,
    as_vector,
    dot,
    l1,
    simplex_distance,
)
from softrank.oracle.decoder_checks import check_decoder
from softrank.oracle.nerve_checks import check_nerve_cycle
from softrank.oracle.radon_checks import check_radon
from softrank.oracle.subcell_checks import check_submatrix
from softrank.errors import InputError

# ---------------------------------------------------------------- one function per kind

def check_witness(A, eps, k, klass, cert) -> bool:
    """B = X Y^T with X m x r, Y N x r, r <= k, ||A - B||_inf <= eps, and (stochastic) B >= 0 with
    unit row sums.  Proof: proofs/oracle_witness.md."""
    m, N = len(A), len(A[0])
    X = as_matrix(cert["X"], rows=m)
    Y = as_matrix(cert["Y"], rows=N)
    r = len(X[0]) if m else 0
    if any(len(row) != r for row in X) or any(len(row) != r for row in Y) or r > k:
        return False
    B = matmul(X, transpose(Y)) if r else [[ZERO] * N for _ in range(m)]
    if any(l1([a - b for a, b in zip(A[i], B[i])]) > eps for i in range(m)):
        return False
    return klass != "stochastic" or (all(b >= 0 for row in B for b in row)
                                     and all(sum(row, ZERO) == 1 for row in B))


def check_row_norm(A, eps, cert) -> bool:
    """Row i with ||a_i||_1 > eps: the only rank-0 matrix, 0, is too far.  proofs/oracle_k0.md."""
    i = as_int(cert["row"])
    return 0 <= i < len(A) and l1(A[i]) > eps


def check_zero_not_stochastic(A, eps, cert) -> bool:
    """The zero matrix has row sums 0, not 1 (m >= 1).  proofs/oracle_k0.md."""
    return len(A) >= 1


def check_row_simplex(A, eps, cert) -> bool:
    """Row i farther than eps (in l1) from every probability vector.
    proofs/oracle_stochastic_rows.md."""
    i = as_int(cert["row"])
    return 0 <= i < len(A) and simplex_distance(A[i]) > eps


def check_rank1_signed(A, eps, cert) -> bool:
    """k = 1, unrestricted: every sign pattern on the non-free rows is refuted by a dual vector.
    proofs/oracle_k1_unrestricted.md (statement R1 and the certificate condition C1)."""
    m, N = len(A), len(A[0])
    rows = as_ints(cert["rows"])
    if not rows or len(set(rows)) != len(rows) or any(not 0 <= i < m for i in rows):
        return False
    if any(l1(A[i]) <= eps for i in rows):  # every listed row must force x_i != 0
        return False
    i0 = rows[0]
    refuted = []
    for pat in cert["patterns"]:
        prow = as_ints(pat["rows"])
        signs = as_ints(pat["signs"])
        lam = as_matrix(pat["lambda"], rows=len(prow), cols=N)
        gam = as_vector(pat["gamma"], len(prow))
        if len(signs) != len(prow) or len(set(prow)) != len(prow) or not set(prow) <= set(rows):
            return False
        if any(s not in (1, -1) for s in signs):
            return False
        pmap = dict(zip(prow, signs))
        if pmap.get(i0) != 1:
            return False
        # |lambda_ij| <= gamma_i
        if any(abs(x) > g for lrow, g in zip(lam, gam) for x in lrow):
            return False
        # sum_i sigma_i lambda_i = 0
        for j in range(N):
            if sum((s * lrow[j] for s, lrow in zip(signs, lam)), ZERO) != 0:
                return False
        # a_i . lambda_i - eps gamma_i >= 0 for every i, with a positive sum
        gaps = [dot(A[i], lrow) - eps * g for i, lrow, g in zip(prow, lam, gam)]
        if any(d < 0 for d in gaps) or sum(gaps, ZERO) <= 0:
            return False
        refuted.append(pmap)
    return patterns_cover(rows, refuted)


def patterns_cover(rows, patterns) -> bool:
    """Coverage for ``rank1-signed``: every sign vector sigma on ``rows`` with sigma = +1 at
    ``rows[0]`` agrees with some pattern (a dict row -> sign on rows).  A case split on one row
    at a time: a branch is closed when a pattern agreeing with it has all its rows assigned,
    fails when no pattern agrees with it, and otherwise splits on the first row (in ``rows``
    order) that an agreeing pattern names and the branch has not assigned.  At most
    ``2 * (number of patterns) + 1`` branches are examined (a tree of refuted prefixes needs
    fewer); beyond that the certificate is refused, which is always sound.
    proofs/oracle_k1_unrestricted.md (coverage)."""
    order = {i: t for t, i in enumerate(rows)}
    budget = 2 * len(patterns) + 1
    stack = [({rows[0]: 1}, [p for p in patterns if p.get(rows[0]) == 1])]
    while stack:
        budget -= 1
        if budget < 0:
            return False
        sigma, live = stack.pop()
        if any(all(i in sigma for i in p) for p in live):
            continue  # every extension of sigma agrees with that pattern
        if not live:
            return False  # an extension of sigma agrees with no pattern
        i = min((i for p in live for i in p if i not in sigma), key=order.__getitem__)
        for s in (1, -1):
            stack.append(({**sigma, i: s}, [p for p in live if p.get(i, s) == s]))
    return True


def kernel_bound(A, j: int, y) -> tuple[Fraction, Fraction]:
    """(g_j - sum_{l != j} |g_l|, ||y||_1) for g = A^T y: for every w with ||w||_inf <= 1 and
    w_j = 1, ||A w||_inf * ||y||_1 >= g_j - sum_{l != j} |g_l|.  proofs/oracle_kN_minus_1.md."""
    N = len(A[0])
    g = [sum((A[i][l] * y[i] for i in range(len(A))), ZERO) for l in range(N)]
    return g[j] - sum((abs(g[l]) for l in range(N) if l != j), ZERO), l1(y)


def check_kernel(A, eps, cert) -> bool:
    """k = N - 1: for every column j a vector y with g_j - sum_{l!=j} |g_l| > eps ||y||_1.
    proofs/oracle_kN_minus_1.md."""
    m, N = len(A), len(A[0])
    ys = cert["y"]
    if len(ys) != N:
        return False
    for j in range(N):
        num, den = kernel_bound(A, j, as_vector(ys[j], m))
        if not num > eps * den:
            return False
    return True


def cokernel_bound(A, signs, w) -> Fraction | None:
    """min_i s_i (A w)_i, or None if ||w||_inf > 1: a lower bound of ||A^T y||_1 over y in the
    orthant s with ||y||_1 = 1.  proofs/oracle_km_minus_1.md."""
    if any(abs(x) > 1 for x in w):
        return None
    return min(s * dot(row, w) for s, row in zip(signs, A))


def _orthants_covered(m, entries) -> bool:
    """Every s in {+1,-1}^m with s_0 = +1 is among ``entries`` (each of length m with entries
    +1/-1): counted, without listing the 2^(m-1) orthants."""
    return len({tuple(e) for e in entries if e[0] == 1}) == 2 ** (m - 1)


def covered_orthant_bounds(A, orthants) -> list[Fraction] | None:
    """The cokernel bound of each orthant entry; None if an entry is malformed or has no bound,
    or the entries miss an orthant (s_0 = +1)."""
    m, N = len(A), len(A[0])
    seen, bounds = [], []
    for entry in orthants:
        signs = as_ints(entry["signs"])
        if len(signs) != m or any(s not in (1, -1) for s in signs):
            return None
        b = cokernel_bound(A, signs, as_vector(entry["w"], N))
        if b is None:
            return None
        seen.append(signs)
        bounds.append(b)
    return bounds if _orthants_covered(m, seen) else None


def check_cokernel(A, eps, cert) -> bool:
    """k = m - 1: for every orthant s (s_0 = +1) a w, ||w||_inf <= 1, with s_i (A w)_i > eps.
    proofs/oracle_km_minus_1.md."""
    bounds = covered_orthant_bounds(A, cert["orthants"])
    return bounds is not None and all(b > eps for b in bounds)


def rank1_stochastic_bound(A, lam) -> tuple[Fraction, Fraction]:
    """(sum_i lambda_i.a_i - max_j sum_i lambda_ij, sum_i ||lambda_i||_inf): for every probability
    vector v, max_i ||a_i - v||_1 * (second) >= (first).  proofs/oracle_k1_stochastic.md."""
    N = len(A[0])
    col = [sum((row[j] for row in lam), ZERO) for j in range(N)]
    num = sum((dot(a, l) for a, l in zip(A, lam)), ZERO) - max(col)
    den = sum((max(abs(x) for x in l) for l in lam), ZERO)
    return num, den


def check_rank1_stochastic(A, eps, cert) -> bool:
    """k = 1, stochastic: lambda with sum_i lambda_i.a_i - max_j Lambda_j > eps sum_i ||lambda_i||_inf.
    proofs/oracle_k1_stochastic.md."""
    num, den = rank1_stochastic_bound(A, as_matrix(cert["lambda"], rows=len(A), cols=len(A[0])))
    return num > eps * den


def _plain(checker):
    """A checker that needs only (A, eps, cert), in the table's signature."""
    return lambda A, eps, cert, k, klass: checker(A, eps, cert)


def _witness(A, eps, cert, k, klass):
    return check_witness(A, eps, k, klass, cert)


def _submatrix(A, eps, cert, k, klass):
    return check_submatrix(A, eps, cert, k, klass, recheck)


@dataclass(frozen=True)
class Kind:
    """A certificate kind: the verdict it proves, ``check(A, eps, cert, k, klass)``, the largest
    rank it speaks for as a function of (m, N) (None: no own limit), the classes it speaks for,
    what it proves, and the proof files it rests on (as replay/rules.py's rules name theirs)."""

    verdict: str
    check: Callable
    max_rank: Callable[[int, int], int] | None
    classes: tuple[str, ...]
    proves: str
    proofs: tuple[str, ...]


BOTH = ("unrestricted", "stochastic")
STOCHASTIC = ("stochastic",)
_P = "proofs/oracle_"
KINDS: dict[str, Kind] = {
    "witness": Kind("feasible", _witness, None, BOTH, "B = X Y^T of rank <= k within eps, in the class",
                    (_P + "witness.md",)),
    "row-norm": Kind("impossible", _plain(check_row_norm), lambda m, N: 0, BOTH, "no B of rank 0",
                     (_P + "k0.md",)),
    "zero-not-stochastic": Kind("impossible", _plain(check_zero_not_stochastic), lambda m, N: 0, STOCHASTIC,
                                "no stochastic B of rank 0", (_P + "k0.md",)),
    "row-simplex-distance": Kind("impossible", _plain(check_row_simplex), None, STOCHASTIC,
                                 "no stochastic B at any rank", (_P + "stochastic_rows.md",)),
    "rank1-signed": Kind("impossible", _plain(check_rank1_signed), lambda m, N: 1, BOTH,
                         "no B of rank <= 1", (_P + "k1_unrestricted.md",)),
    "kernel-dual": Kind("impossible", _plain(check_kernel), lambda m, N: N - 1, BOTH,
                        "no B of rank <= N - 1", (_P + "kN_minus_1.md",)),
    "cokernel-dual": Kind("impossible", _plain(check_cokernel), lambda m, N: m - 1, BOTH,
                          "no B of rank <= m - 1", (_P + "km_minus_1.md",)),
    "rank1-stochastic-dual": Kind("impossible", _plain(check_rank1_stochastic), lambda m, N: 1, STOCHASTIC,
                                  "no stochastic B of rank <= 1", (_P + "k1_stochastic.md",)),
    "radon-separation": Kind("impossible", _plain(check_radon), lambda m, N: m - 1, STOCHASTIC,
                             "no stochastic B of rank <= m - 1", (_P + "radon_stochastic.md",)),
    "submatrix": Kind("impossible", _submatrix, None, BOTH,
                      "what its embedded certificate proves for a sub-cell extracted from A",
                      (_P + "submatrix.md",)),
    "branch-and-bound": Kind("impossible", check_branch, lambda m, N: N - 1, BOTH,
                             "no B of rank <= k (every factor box of every pivot column set refuted)",
                             (_P + "branch_bound.md",)),
    "nerve-cycle": Kind("impossible", check_nerve_cycle, lambda m, N: m - 1, BOTH,
                        "no B of rank <= d (a mod-2 cycle of signed row simplices, odd alternating)",
                        (_P + "nerve_cycle.md",)),
    "decoder": Kind("impossible", check_decoder, lambda m, N: m - 1, BOTH,
                    "no B of rank < p (p rows and a W with the Lemma D sum below 1)",
                    ("proofs/lemma_D_contractive_decoder.md",)),
}


def recheck(A, eps, k, klass, verdict, certificate) -> bool:
    """True iff ``certificate`` proves ``verdict`` for the cell (A, eps, k, klass), exactly.

    ``outside-scope`` claims nothing and re-checks trivially.  Malformed certificates give False
    (a rank k that is not a JSON integer too).  (A row-simplex-distance certificate excludes
    stochastic B at every rank; a submatrix one carries the rank limit of the certificate it
    embeds.)
    """
    if verdict == "outside-scope":
        return True
    if klass not in BOTH or not isinstance(certificate, dict):
        return False
    try:
        eps = as_rational(eps)
        kind = KINDS.get(certificate.get("kind"))
        if kind is None or kind.verdict != verdict:
            return False
        k = as_int(k)
        if klass not in kind.classes or k < 0 or (kind.max_rank is not None and k > kind.max_rank(len(A), len(A[0]))):
            return False
        return bool(kind.check(A, eps, certificate, k, klass))
    except (KeyError, ValueError, TypeError, IndexError, ArithmeticError, InputError, RecursionError):
        return False
