"""Every inequality the replay accepts comes from a registered rule (VeriPB-style rule registry).

A rule has a name, the tuple of proof files it rests on, the side of the bracket it proves and a
checker ``check(claim: Claim) -> Check``.  PROVED from a lower rule means ``r_eps(A) >= claim's
lower end`` for the exact operator; PROVED from the upper rule means ``r_eps(A) <= rank(X Y^T)``.
Lower certificates are looked up by their ``kind``; an unknown kind is a rejection, never a skip.
Malformed certificate data is a non-PROVED ``Check`` with the reason, never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from softrank.replay.record import LowerCertificate, UpperWitness
from softrank.validated.contractive_decoder import LEMMA_D, check_contractive_decoder
from softrank.validated.frobenius_tail import LEMMA_F, check_frobenius_tail
from softrank.validated.outcome import Check, Outcome
from softrank.validated.projected_tail import LEMMA_P, check_projected_tail
from softrank.validated.singular_values import LEMMA_E
from softrank.validated.subspace_certificate import LEMMA_G, check_subspace_certificate
from softrank.validated.softmax_enclosure import SoftmaxEnclosure
from softrank.validated.upper_witness import LEMMA_U, check_upper_witness

ENCLOSURE = "proofs/softmax_enclosure.md"
ENCLOSURE_B64 = "proofs/softmax_binary64.md"
BINARY64 = "proofs/binary64_error_bounds.md"
LEMMA_S = "proofs/lemma_S_slack_sandwich.md"
LEMMA_T = "proofs/lemma_trivial_lower.md"
RECORD_FORMAT = "docs/record-format.md"


@dataclass(frozen=True)
class Claim:
    """What one rule is asked to accept: a record's operator (enclosed), a tolerance, a certificate."""

    enclosure: SoftmaxEnclosure | None  # |A - a_mid| <= a_rad, plus Arb rows (None: not available)
    chi: Fraction | None  # proven bound on ||A - A_hat||_inf
    eps: Fraction
    strict: bool
    operator_assumption: str = ""  # how the stored numbers define A (``Record.operator_assumption``)
    shape: tuple[int, int] | None = None  # (m, N) of A
    a_hat: np.ndarray | None = None  # the producer's float64 A_hat (the chi route of Lemma S)
    cert: LowerCertificate | None = None  # lower rules
    witness: UpperWitness | None = None  # the upper rule


@dataclass(frozen=True)
class Rule:
    name: str
    side: str  # "upper" or "lower"
    proofs: tuple[str, ...]
    check: Callable[[Claim], Check]


class MalformedCertificate(ValueError):
    """The certificate's data does not have the documented form (docs/record-format.md)."""


def _claimed_lower(claim: Claim) -> int:
    """The claimed lower end, after the tolerance: every lower rule reads it first."""
    eps = claim.eps
    if not isinstance(eps, Fraction) or not 0 < eps < 1:
        raise MalformedCertificate(f"eps must be an exact rational in (0, 1), got {eps!r}")
    lower = claim.cert.lower
    if isinstance(lower, bool) or not isinstance(lower, (int, np.integer)) or lower < 1:
        raise MalformedCertificate(f"claimed lower must be an integer >= 1, got {lower!r}")
    return int(lower)


def _rows(claim: Claim, m: int) -> np.ndarray:
    rows = claim.cert.data.get("rows")
    if type(rows) is not np.ndarray:
        raise MalformedCertificate("'rows' must be an int64 array")
    if rows.dtype != np.int64 or rows.ndim != 1:
        raise MalformedCertificate(f"'rows' must be a 1-d int64 array, got {rows.dtype} with shape {list(rows.shape)}")
    if rows.size == 0:
        raise MalformedCertificate("'rows' is empty")
    if rows.min() < 0 or rows.max() >= m:
        raise MalformedCertificate(f"'rows' has an index outside [0, {m})")
    if np.unique(rows).size != rows.size:
        raise MalformedCertificate("'rows' has repeated indices")
    return rows


def _w(claim: Claim, n: int, cols: int | None) -> np.ndarray:
    w = claim.cert.data.get("W")
    if type(w) is not np.ndarray:
        raise MalformedCertificate("'W' must be a float64 array")
    if w.dtype != np.float64 or w.ndim != 2:
        raise MalformedCertificate(f"'W' must be a 2-d float64 array, got {w.dtype} with shape {list(w.shape)}")
    if w.shape[0] != n or w.shape[1] < 1 or (cols is not None and w.shape[1] != cols):
        want = f"[{n}, {cols}]" if cols is not None else f"[{n}, q >= 1]"
        raise MalformedCertificate(f"'W' has shape {list(w.shape)}, expected {want}")
    if not np.all(np.isfinite(w)):
        raise MalformedCertificate("'W' has a non-finite entry")
    return w


def _guarded(lemma: str, body: Callable[[], Check]) -> Check:
    try:
        return body()
    except MalformedCertificate as err:
        return Check(Outcome.UNRESOLVED, lemma, reason=f"malformed certificate: {err}")
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
        return Check(Outcome.UNRESOLVED, lemma, reason=f"check could not be completed: {type(err).__name__}: {err}")


def check_upper(claim: Claim) -> Check:
    """Lemma U (with Lemma S on the chi route): PROVED implies ``r_eps(A) <= rank``."""
    w = claim.witness
    return _guarded(LEMMA_U, lambda: check_upper_witness(
        claim.enclosure, w.X, w.Y, claim.eps, strict=claim.strict, chi=claim.chi, a_hat=claim.a_hat,
        operator_assumption=claim.operator_assumption))


def check_trivial(claim: Claim) -> Check:
    """Lemma T: a row-stochastic A with at least one row has ``||A - 0||_inf = 1``, so for eps < 1
    no rank-0 matrix is within eps and ``r_eps(A) >= 1``.  A = rowsoftmax(H) is exactly
    row-stochastic for every real H; the claim is the lower end 1 itself."""
    m = claim.shape[0] if claim.shape is not None else claim.enclosure.a_mid.shape[0]
    if m >= 1 and 0 < claim.eps < 1:
        return Check(Outcome.PROVED, LEMMA_T, value="1", route="exact", assumptions=[claim.operator_assumption])
    return Check(Outcome.UNRESOLVED, LEMMA_T, reason="needs m >= 1 and 0 < eps < 1")


def check_frobenius(claim: Claim) -> Check:
    """kind "frobenius": Lemma F with Lemma E; PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        return check_frobenius_tail(claim.enclosure, claim.eps, _claimed_lower(claim), strict=claim.strict,
                                    operator_assumption=claim.operator_assumption)
    return _guarded(LEMMA_F, body)


def check_projected(claim: Claim) -> Check:
    """kind "projected": Lemma P with Lemma E; PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        m, n = claim.enclosure.a_mid.shape
        lower = _claimed_lower(claim)
        return check_projected_tail(claim.enclosure, claim.eps, lower, _rows(claim, m), _w(claim, n, None),
                                    strict=claim.strict, operator_assumption=claim.operator_assumption)
    return _guarded(LEMMA_P, body)


def check_decoder(claim: Claim) -> Check:
    """kind "decoder": Lemma D; PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        m, n = claim.enclosure.a_mid.shape
        lower = _claimed_lower(claim)
        rows = _rows(claim, m)
        if rows.size != lower:
            raise MalformedCertificate(f"decoder needs |rows| = lower = {lower}, got {rows.size} rows")
        return check_contractive_decoder(claim.enclosure, claim.eps, rows, _w(claim, n, lower),
                                         strict=claim.strict, operator_assumption=claim.operator_assumption)
    return _guarded(LEMMA_D, body)


def _indices(claim: Claim, key: str, n: int) -> np.ndarray:
    idx = claim.cert.data.get(key)
    if type(idx) is not np.ndarray or idx.dtype != np.int64 or idx.ndim != 1 or idx.size == 0:
        raise MalformedCertificate(f"{key!r} must be a non-empty 1-d int64 array")
    if idx.min() < 0 or idx.max() >= n:
        raise MalformedCertificate(f"{key!r} has an index outside [0, {n})")
    if np.unique(idx).size != idx.size:
        raise MalformedCertificate(f"{key!r} has repeated indices")
    return idx


def _matrix(claim: Claim, key: str, shape: tuple[int, int]) -> np.ndarray:
    x = claim.cert.data.get(key)
    if type(x) is not np.ndarray or x.dtype != np.float64 or x.shape != shape:
        got = f"{x.dtype} with shape {list(x.shape)}" if isinstance(x, np.ndarray) else type(x).__name__
        raise MalformedCertificate(f"{key!r} must be a float64 array of shape {list(shape)}, got {got}")
    if not np.all(np.isfinite(x)):
        raise MalformedCertificate(f"{key!r} has a non-finite entry")
    return x


def check_subspace(claim: Claim) -> Check:
    """kind "subspace": Lemma G; PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        m, n = claim.enclosure.a_mid.shape
        lower = _claimed_lower(claim)
        w = _w(claim, n, lower)
        pivots = _indices(claim, "pivots", n)
        if pivots.size != lower:
            raise MalformedCertificate(f"subspace needs |pivots| = lower = {lower}, got {pivots.size}")
        if not np.array_equal(w[pivots], np.eye(lower)):
            raise MalformedCertificate("'W' restricted to 'pivots' is not exactly the identity")
        cover = _indices(claim, "cover", n)
        if not np.isin(pivots, cover).all():
            raise MalformedCertificate("'cover' does not contain every pivot")
        u = _matrix(claim, "u", (cover.size, m))
        v = _matrix(claim, "v", (cover.size, n))
        return check_subspace_certificate(claim.enclosure, claim.eps, w, cover, u, v,
                                          operator_assumption=claim.operator_assumption)
    return _guarded(LEMMA_G, body)


_COMMON = (ENCLOSURE, ENCLOSURE_B64, BINARY64)
UPPER_RULE = Rule("upper-witness", "upper", (LEMMA_U, LEMMA_S) + _COMMON, check_upper)
TRIVIAL_RULE = Rule("trivial", "lower", (LEMMA_T,), check_trivial)
#: lower-certificate kind (docs/record-format.md) -> rule
LOWER_RULES: dict[str, Rule] = {
    "frobenius": Rule("frobenius", "lower", (LEMMA_F, LEMMA_E) + _COMMON, check_frobenius),
    "projected": Rule("projected", "lower", (LEMMA_P, LEMMA_E) + _COMMON, check_projected),
    "decoder": Rule("decoder", "lower", (LEMMA_D,) + _COMMON, check_decoder),
    "subspace": Rule("subspace", "lower", (LEMMA_G, ENCLOSURE, ENCLOSURE_B64), check_subspace),
}
RULES: tuple[Rule, ...] = (UPPER_RULE, TRIVIAL_RULE, *LOWER_RULES.values())


def check_lower_certificate(claim: Claim) -> Check:
    """The rule registered for ``claim.cert.kind``; an unknown kind is rejected with the reason."""
    rule = LOWER_RULES.get(claim.cert.kind)
    if rule is None:
        return Check(Outcome.UNRESOLVED, RECORD_FORMAT,
                     reason=f"unknown certificate kind {claim.cert.kind!r}: rejected")
    return rule.check(claim)
