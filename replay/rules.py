"""Every inequality the replay accepts comes from a registered rule (VeriPB-style rule registry).

A rule has a name, the tuple of proof files it rests on, the side of the bracket it proves and a
checker ``check(claim: Claim) -> Check``.  PROVED from a lower rule means ``r_eps(A) >= claim's
lower end`` for the exact operator; PROVED from the upper rule means ``r_eps(A) <= rank(X Y^T)``.
Lower certificates are looked up by their ``kind``; an unknown kind is a rejection, never a skip.
Malformed certificate data is a non-PROVED ``Check`` with the reason, never an exception.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from softrank.replay.record import LowerCertificate, UpperWitness
from softrank.validated.contractive_decoder import LEMMA_D, check_contractive_decoder
from softrank.validated.frobenius_tail import LEMMA_F, check_frobenius_tail
from softrank.validated.outcome import Check, Outcome, route_assumptions
from softrank.validated.projected_tail import LEMMA_P, check_projected_tail
from softrank.validated.singular_values import LEMMA_E
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


def _array(claim: Claim, key: str, dtype: str, shape: tuple, bound: int | None = None) -> np.ndarray:
    """The certificate's array ``key``: a plain numpy array of ``dtype`` and ``shape`` (``None``: any
    length >= 1), finite; with ``bound``, distinct indices in ``[0, bound)``."""
    x = claim.cert.data.get(key)
    if type(x) is not np.ndarray or x.dtype != dtype or x.ndim != len(shape):
        got = f"{x.dtype} with shape {list(x.shape)}" if isinstance(x, np.ndarray) else type(x).__name__
        raise MalformedCertificate(f"{key!r} must be a {len(shape)}-d {dtype} array, got {got}")
    if any(size < 1 if want is None else size != want for size, want in zip(x.shape, shape)):
        want = ", ".join("q >= 1" if w is None else str(w) for w in shape)
        raise MalformedCertificate(f"{key!r} has shape {list(x.shape)}, expected [{want}]"
                                   + (" (empty)" if x.size == 0 else ""))
    if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
        raise MalformedCertificate(f"{key!r} has a non-finite entry")
    if bound is not None and (x.min() < 0 or x.max() >= bound):
        raise MalformedCertificate(f"{key!r} has an index outside [0, {bound})")
    if bound is not None and np.unique(x).size != x.size:
        raise MalformedCertificate(f"{key!r} has repeated indices")
    return x


def _guarded(lemma: str):
    """A rule's checker whose malformed data, or a check that cannot be completed, is a non-PROVED
    ``Check`` naming ``lemma`` with the reason, never an exception."""
    def wrap(body: Callable[[Claim], Check]) -> Callable[[Claim], Check]:
        @functools.wraps(body)
        def check(claim: Claim) -> Check:
            try:
                return body(claim)
            except MalformedCertificate as err:
                return Check(Outcome.UNRESOLVED, lemma, reason=f"malformed certificate: {err}")
            except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
                return Check(Outcome.UNRESOLVED, lemma, reason=f"check could not be completed: {type(err).__name__}: {err}")
        return check
    return wrap


@_guarded(LEMMA_U)
def check_upper(claim: Claim) -> Check:
    """Lemma U (with Lemma S on the chi route): PROVED implies ``r_eps(A) <= rank``."""
    w = claim.witness
    return check_upper_witness(claim.enclosure, w.X, w.Y, claim.eps, strict=claim.strict, chi=claim.chi,
                               a_hat=claim.a_hat, operator_assumption=claim.operator_assumption)


def check_trivial(claim: Claim) -> Check:
    """Lemma T: a row-stochastic A with at least one row has ``||A - 0||_inf = 1``, so for eps < 1
    no rank-0 matrix is within eps and ``r_eps(A) >= 1``.  A = rowsoftmax(H) is exactly
    row-stochastic for every real H; the claim is the lower end 1 itself."""
    m = claim.shape[0] if claim.shape is not None else claim.enclosure.a_mid.shape[0]
    if m >= 1 and 0 < claim.eps < 1:
        return Check(Outcome.PROVED, LEMMA_T, value="1", route="exact",
                     assumptions=route_assumptions(claim.operator_assumption, "exact"))
    return Check(Outcome.UNRESOLVED, LEMMA_T, reason="needs m >= 1 and 0 < eps < 1")


@_guarded(LEMMA_F)
def check_frobenius(claim: Claim) -> Check:
    """kind "frobenius": Lemma F with Lemma E; PROVED implies r_eps(A) >= lower."""
    return check_frobenius_tail(claim.enclosure, claim.eps, _claimed_lower(claim), strict=claim.strict,
                                operator_assumption=claim.operator_assumption)


@_guarded(LEMMA_P)
def check_projected(claim: Claim) -> Check:
    """kind "projected": Lemma P with Lemma E; PROVED implies r_eps(A) >= lower."""
    m, n = claim.enclosure.a_mid.shape
    lower = _claimed_lower(claim)
    return check_projected_tail(claim.enclosure, claim.eps, lower, _array(claim, "rows", "int64", (None,), m),
                                _array(claim, "W", "float64", (n, None)), strict=claim.strict,
                                operator_assumption=claim.operator_assumption)


@_guarded(LEMMA_D)
def check_decoder(claim: Claim) -> Check:
    """kind "decoder": Lemma D; PROVED implies r_eps(A) >= lower."""
    m, n = claim.enclosure.a_mid.shape
    lower = _claimed_lower(claim)
    rows = _array(claim, "rows", "int64", (None,), m)
    if rows.size != lower:
        raise MalformedCertificate(f"decoder needs |rows| = lower = {lower}, got {rows.size} rows")
    return check_contractive_decoder(claim.enclosure, claim.eps, rows, _array(claim, "W", "float64", (n, lower)),
                                     strict=claim.strict, operator_assumption=claim.operator_assumption)


_COMMON = (ENCLOSURE, ENCLOSURE_B64, BINARY64)
UPPER_RULE = Rule("upper-witness", "upper", (LEMMA_U, LEMMA_S) + _COMMON, check_upper)
TRIVIAL_RULE = Rule("trivial", "lower", (LEMMA_T,), check_trivial)
#: lower-certificate kind (docs/record-format.md) -> rule
LOWER_RULES: dict[str, Rule] = {
    "frobenius": Rule("frobenius", "lower", (LEMMA_F, LEMMA_E) + _COMMON, check_frobenius),
    "projected": Rule("projected", "lower", (LEMMA_P, LEMMA_E) + _COMMON, check_projected),
    "decoder": Rule("decoder", "lower", (LEMMA_D,) + _COMMON, check_decoder),
}
RULES: tuple[Rule, ...] = (UPPER_RULE, TRIVIAL_RULE, *LOWER_RULES.values())


def check_lower_certificate(claim: Claim) -> Check:
    """The rule registered for ``claim.cert.kind``; an unknown kind is rejected with the reason."""
    rule = LOWER_RULES.get(claim.cert.kind)
    if rule is None:
        return Check(Outcome.UNRESOLVED, RECORD_FORMAT,
                     reason=f"unknown certificate kind {claim.cert.kind!r}: rejected")
    return rule.check(claim)
