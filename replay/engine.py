"""The replay engine: one record in, a typed result out (no I/O, no tables, no timing).

For every tolerance of a record it asks the registered rules (``softrank.replay.rules``) to
accept the upper witness and each lower certificate, keeps the largest proved lower end and the
proved upper rank, and refuses a verdict when the proved ends contradict each other (validated
L > validated U cannot happen for sound rules: it is reported as an error naming both
certificates).  Tables and summaries are written by the results room (``softrank.findings.replay_job``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from softrank.replay.record import Record
from softrank.replay.tolerance import Tolerance
from softrank.replay.rules import TRIVIAL_RULE, UPPER_RULE, Claim, check_lower_certificate
from softrank.validated.float_bounds import binary64_environment_ok
from softrank.validated.outcome import Check, Outcome
from softrank.validated.softmax_binary64 import softmax_binary64_enclosure
from softrank.validated.softmax_enclosure import chi_upper, logits_balls, rowsoftmax_enclosure

TRIVIAL_LOWER_KIND = "trivial(||A||_inf=1>eps)"


@dataclass(frozen=True)
class LowerResult:
    kind: str
    claimed: int
    check: Check


@dataclass
class ToleranceResult:
    tolerance: Tolerance  # the record's, as read
    upper: Check | None  # None: the record has no witness at this eps
    lowers: list[LowerResult]
    validated_lower: int | None  # None only with a contradiction
    lower_kind: str  # the rule that proved the lower end
    validated_upper: int | None
    assumptions: tuple[str, ...]
    contradiction: str = ""  # non-empty: proved L > proved U, no verdict is emitted

    def verdict(self, k: int) -> str:
        """Budget k: feasible if U <= k, impossible if L > k, else unresolved (error on a contradiction)."""
        if self.contradiction:
            return "error"
        return validated_verdict(k, self.validated_lower, self.validated_upper)

    @property
    def eps(self) -> Fraction:
        return self.tolerance.value

    @property
    def eps_text(self) -> str:  # as written in the record
        return str(self.tolerance.json_field)


@dataclass
class RecordResult:
    record: Record
    chi: Fraction | None  # proven bound on ||A - A_hat||_inf; None when A could not be enclosed
    enclosure_error: str
    tolerances: list[ToleranceResult] = field(default_factory=list)


def validated_verdict(k: int, lower: int | None, upper: int | None) -> str:
    """Verdict for budget k from validated ends: feasible if U <= k, impossible if L > k."""
    if upper is not None and upper <= k:
        return "feasible"
    if lower is not None and lower > k:
        return "impossible"
    return "unresolved"


def replay_record(record: Record, strict: bool = False) -> RecordResult:
    """Replay one record (already read and validated by ``softrank.replay.reader``).

    The binary64 routes, the enclosure of A among them, are used only when the floating-point
    environment is the one their rules assume (``binary64_environment_ok``); otherwise every check
    runs in Arb balls, as with ``strict``.
    """
    strict = strict or not binary64_environment_ok()
    operator = dict(logits=record.logits, queries=record.queries, keys=record.keys, scale=record.scale,
                    bias=record.bias)
    mask = record.mask  # None: every key visible; else A is 0 off the support (docs/record-format.md)
    try:
        # binary64 enclosure (proofs/softmax_binary64.md) unless strict or unavailable; else Arb
        enc = None if strict else softmax_binary64_enclosure(**operator, mask=mask)
        if enc is None:
            enc = rowsoftmax_enclosure(logits_balls(**operator), mask=mask)
        chi = chi_upper(enc, record.a_hat)
        enclosure_error = ""
    except (ArithmeticError, ValueError) as err:
        enc, chi, enclosure_error = None, None, f"no enclosure of A: {err}"
    result = RecordResult(record=record, chi=chi, enclosure_error=enclosure_error)
    for tol in record.tolerances:
        base = Claim(enclosure=enc, chi=chi, eps=tol.eps, strict=strict, shape=record.shape, a_hat=record.a_hat,
                     operator_assumption=record.operator_assumption)
        result.tolerances.append(_replay_tolerance(base, tol, enclosure_error))
    return result


def _replay_tolerance(base: Claim, tol, enclosure_error: str) -> ToleranceResult:
    assumptions: set[str] = set()
    upper, v_upper = None, None
    if tol.upper is not None:
        if base.enclosure is None:
            upper = Check(Outcome.UNRESOLVED, UPPER_RULE.proofs[0], reason=enclosure_error)
        else:
            upper = UPPER_RULE.check(replace(base, witness=tol.upper))
            if upper.proved:
                v_upper = tol.upper.rank
                assumptions.update(upper.assumptions)
    trivial = TRIVIAL_RULE.check(base)
    v_lower, lower_kind = (1, TRIVIAL_LOWER_KIND) if trivial.proved else (0, "")
    assumptions.update(trivial.assumptions)  # an unproved check lists none
    lowers = []
    for cert in tol.lower:
        chk = (Check(Outcome.UNRESOLVED, "", reason=enclosure_error) if base.enclosure is None
               else check_lower_certificate(replace(base, cert=cert)))
        lowers.append(LowerResult(cert.kind, cert.lower, chk))
        if chk.proved and cert.lower > v_lower:
            v_lower, lower_kind = cert.lower, cert.kind
            assumptions.update(chk.assumptions)
    contradiction = ""
    if v_upper is not None and v_lower > v_upper:
        contradiction = (f"contradiction at eps {tol.eps_text}: lower certificate {lower_kind} proves "
                         f"r_eps(A) >= {v_lower} but the upper witness ({tol.upper.construction or 'unnamed'}, "
                         f"rank {v_upper}) proves r_eps(A) <= {v_upper}")
    return ToleranceResult(
        tolerance=tol.tolerance, upper=upper, lowers=lowers,
        validated_lower=None if contradiction else v_lower, lower_kind=lower_kind,
        validated_upper=None if contradiction else v_upper,
        assumptions=tuple(sorted(a for a in assumptions if a)), contradiction=contradiction)
