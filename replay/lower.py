"""One table from lower-certificate kind to its checker (VeriPB-style rule registry).

A checker has the signature ``check(ctx: LowerContext) -> Check``; PROVED means
``r_eps(A) >= ctx.cert.lower`` for the exact operator.  An unknown kind is a rejection
(``UnknownCertificateKind``), never a skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

from softrank.replay.store import LowerCertificate, Record
from softrank.validated.outcome import Check, Outcome, UnknownCertificateKind
from softrank.validated.softmax_enclosure import SoftmaxEnclosure


@dataclass
class LowerContext:
    record: Record
    enclosure: SoftmaxEnclosure  # |A - a_mid| <= a_rad, plus Arb rows
    chi: Fraction | None  # proven bound on ||A - A_hat||_inf
    eps: Fraction
    cert: LowerCertificate
    strict: bool
    operator_assumption: str


LowerChecker = Callable[[LowerContext], Check]

# kind -> checker; filled by the validated lower-certificate modules (issue 4).
LOWER_CHECKERS: dict[str, LowerChecker] = {}


def check_lower_certificate(ctx: LowerContext) -> Check:
    """Dispatch on ``ctx.cert.kind``; an unknown kind is rejected with the reason."""
    checker = LOWER_CHECKERS.get(ctx.cert.kind)
    if checker is None:
        err = UnknownCertificateKind(ctx.cert.kind)
        return Check(Outcome.UNRESOLVED, err.lemma, reason=f"unknown certificate kind {ctx.cert.kind!r}: rejected")
    return checker(ctx)
