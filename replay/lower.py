"""One table from lower-certificate kind to its checker (VeriPB-style rule registry).

A checker has the signature ``check(ctx: LowerContext) -> Check``; PROVED means
``r_eps(A) >= ctx.cert.lower`` for the exact operator.  An unknown kind is a rejection
(``UnknownCertificateKind``), never a skip.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from softrank.replay.store import LowerCertificate, Record
from softrank.validated.contractive_decoder import LEMMA_D, check_contractive_decoder
from softrank.validated.frobenius_tail import LEMMA_F, check_frobenius_tail
from softrank.validated.projected_tail import LEMMA_P, check_projected_tail
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

# kind -> checker; filled at the end of this module (kinds of docs/record-format.md).
LOWER_CHECKERS: dict[str, LowerChecker] = {}


def check_lower_certificate(ctx: LowerContext) -> Check:
    """Dispatch on ``ctx.cert.kind``; an unknown kind is rejected with the reason."""
    checker = LOWER_CHECKERS.get(ctx.cert.kind)
    if checker is None:
        err = UnknownCertificateKind(ctx.cert.kind)
        return Check(Outcome.UNRESOLVED, err.lemma, reason=f"unknown certificate kind {ctx.cert.kind!r}: rejected")
    return checker(ctx)


# ----------------------------------------------------------------------------------------------
# Well-formedness of each kind's data, then the lemma's checker.  Malformed data is a
# non-PROVED Check with the reason, never an exception: the replay goes on.
# ----------------------------------------------------------------------------------------------


class MalformedCertificate(ValueError):
    """The certificate's data does not have the documented form (docs/record-format.md)."""


def _malformed(lemma: str, message: str) -> Check:
    return Check(Outcome.UNRESOLVED, lemma, reason=f"malformed certificate: {message}")


def _claimed_lower(ctx: LowerContext) -> int:
    lower = ctx.cert.lower
    if isinstance(lower, bool) or not isinstance(lower, (int, np.integer)) or lower < 1:
        raise MalformedCertificate(f"claimed lower must be an integer >= 1, got {lower!r}")
    return int(lower)


def _rows(ctx: LowerContext, m: int) -> np.ndarray:
    rows = ctx.cert.data.get("rows")
    if not isinstance(rows, np.ndarray):
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


def _w(ctx: LowerContext, n: int, cols: int | None) -> np.ndarray:
    w = ctx.cert.data.get("W")
    if not isinstance(w, np.ndarray):
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
        return _malformed(lemma, str(err))
    except (ArithmeticError, ValueError, np.linalg.LinAlgError) as err:
        return Check(Outcome.UNRESOLVED, lemma, reason=f"check could not be completed: {type(err).__name__}: {err}")


def check_frobenius(ctx: LowerContext) -> Check:
    """kind "frobenius": Lemma F (proofs/lemma_F_frobenius_tail.md); PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        lower = _claimed_lower(ctx)
        return check_frobenius_tail(ctx.enclosure, ctx.eps, lower, strict=ctx.strict,
                                    operator_assumption=ctx.operator_assumption)
    return _guarded(LEMMA_F, body)


def check_projected(ctx: LowerContext) -> Check:
    """kind "projected": Lemma P (proofs/lemma_P_projected_tail.md); PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        m, n = ctx.enclosure.a_mid.shape
        lower = _claimed_lower(ctx)
        rows = _rows(ctx, m)
        w = _w(ctx, n, None)
        return check_projected_tail(ctx.enclosure, ctx.eps, lower, rows, w, strict=ctx.strict,
                                    operator_assumption=ctx.operator_assumption)
    return _guarded(LEMMA_P, body)


def check_decoder(ctx: LowerContext) -> Check:
    """kind "decoder": Lemma D (proofs/lemma_D_contractive_decoder.md); PROVED implies r_eps(A) >= lower."""
    def body() -> Check:
        m, n = ctx.enclosure.a_mid.shape
        lower = _claimed_lower(ctx)
        rows = _rows(ctx, m)
        if rows.size != lower:
            raise MalformedCertificate(f"decoder needs |rows| = lower = {lower}, got {rows.size} rows")
        w = _w(ctx, n, lower)
        return check_contractive_decoder(ctx.enclosure, ctx.eps, rows, w, strict=ctx.strict,
                                         operator_assumption=ctx.operator_assumption)
    return _guarded(LEMMA_D, body)


LOWER_CHECKERS.update({"frobenius": check_frobenius, "projected": check_projected, "decoder": check_decoder})
