"""Bracketing (untrusted float64) and validated replay of one record, in memory.

- :func:`bracket` runs the producer's float64 bracketing (``softrank.fastpath.bracket.matrix.bracket_matrix``)
  on a record's ``A_hat`` and returns a copy carrying, per eps, the best witness, the lower
  certificates and the float64 bracket: claims, not proofs.
- :func:`validate` replays a record with the trusted checker (``softrank.replay.engine.replay_record``),
  after the structural checks the store reader makes, and returns a :class:`Validation`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from softrank.api.records import Record
from softrank.replay import record as core
from softrank.replay.record import check_record  # the store reader's checks, for records made in memory
from softrank.replay.tolerance import Tolerance
from softrank.errors import InputError

BRACKET_EPS = (0.15, 0.25, 0.35)


def bracket(record: core.Record, eps=BRACKET_EPS, mode: str = "fast") -> Record:
    """A copy of ``record`` with float64 brackets at each eps (a float or an exact rational in (0, 1)):
    the best witness ``X Y^T``, the certificates achieving the largest lower end, and
    ``float64_lower``, ``float64_upper`` and verdicts at the budgets 8, 16, 32 (untrusted)."""
    from softrank.fastpath.bracket.matrix import bracket_matrix

    eps_list = [eps] if isinstance(eps, (int, float, str, Fraction)) else list(eps)
    tolerances = Tolerance.parse_list(eps_list, "eps", record.record_id, keep_text=True)  # a float: its decimal
    result = bracket_matrix(record.a_hat, [t.binary64 for t in tolerances], mode=mode)
    out = Record.from_record(record)
    for tol in tolerances:
        b = result[tol.binary64]  # the float kernel's result at the tolerance's binary64 number
        upper = None if b.witness is None else core.UpperWitness(
            rank=int(b.witness.X.shape[1]), X=b.witness.X, Y=b.witness.Y, construction=b.witness.construction)
        lower = [_certificate(c.as_record()) for c in b.certificates]
        out = out.with_tolerance(core.ToleranceEntry(
            tolerance=tol, upper=upper, lower=lower, float64_lower=b.lower, float64_upper=b.upper,
            float64_verdicts={int(k): v for k, v in b.verdicts.items()}))
    return out


def _certificate(fields: dict) -> core.LowerCertificate:
    data = {k: v for k, v in fields.items() if k not in ("kind", "lower")}
    return core.LowerCertificate(kind=fields["kind"], lower=int(fields["lower"]), data=data)


@dataclass(frozen=True)
class ValidatedTolerance:
    """The validated result at one eps: what the checker proved, and on what."""

    eps: Fraction
    eps_text: str
    validated_lower: int | None  # proved r_eps(A) >= this (None only with a contradiction)
    validated_upper: int | None  # proved r_eps(A) <= this (None: no witness proved)
    upper_outcome: str | None  # "proved", "refuted", "unresolved"; None without a witness
    upper_bound: str  # the certified bound on ||A - X Y^T||_inf (text), when computed
    upper_route: str  # "binary64-bound" or "arb"
    lower_kind: str  # the rule that proved the lower end
    lemmas: tuple[str, ...]  # proof files of the accepted checks
    assumptions: tuple[str, ...]
    contradiction: str = ""

    def verdict(self, k: int) -> str:
        """Budget k: ``feasible`` if U <= k, ``impossible`` if L > k, else ``unresolved``."""
        from softrank.replay.engine import validated_verdict

        return "error" if self.contradiction else validated_verdict(k, self.validated_lower, self.validated_upper)


@dataclass(frozen=True)
class Validation:
    """The validated replay of one record: ``chi`` (a proven bound on ``||A - A_hat||_inf``) and
    one :class:`ValidatedTolerance` per tolerance; ``raw`` is the engine's own result."""

    record_id: str
    chi: Fraction | None
    enclosure_error: str
    tolerances: tuple[ValidatedTolerance, ...]
    raw: object

    def __getitem__(self, eps) -> ValidatedTolerance:
        """The result at tolerance ``eps`` (compared exactly)."""
        value = Tolerance.parse(eps, "eps", self.record_id).value
        for t in self.tolerances:
            if t.eps == value:
                return t
        held = ", ".join(t.eps_text for t in self.tolerances) or "none"
        raise ToleranceNotFound(self.record_id, "eps", f"no result at tolerance {eps!r}; the tolerances "
                                                       f"validated are: {held}")


class ToleranceNotFound(InputError, KeyError):
    """``validate(record)[eps]`` at a tolerance that was not validated: an ``InputError`` (and a
    ``KeyError``) naming the tolerances that exist."""

    def __str__(self) -> str:
        return self.one_line()


def validate(record: core.Record, strict: bool = False) -> Validation:
    """Replay ``record`` with the validated checker (Arb balls throughout with ``strict``)."""
    from softrank.replay.engine import replay_record

    check_record(record)
    result = replay_record(record, strict=strict)
    tols = tuple(_tolerance(t) for t in result.tolerances)
    return Validation(record_id=record.record_id, chi=result.chi, enclosure_error=result.enclosure_error,
                      tolerances=tols, raw=result)


def _tolerance(t) -> ValidatedTolerance:
    lemmas = []
    if t.upper is not None and t.upper.proved:
        lemmas.append(t.upper.lemma)
    lemmas += [lo.check.lemma for lo in t.lowers if lo.check.proved and lo.check.lemma]
    return ValidatedTolerance(
        eps=t.eps, eps_text=t.eps_text, validated_lower=t.validated_lower, validated_upper=t.validated_upper,
        upper_outcome=None if t.upper is None else t.upper.outcome.value,
        upper_bound="" if t.upper is None else t.upper.value, upper_route="" if t.upper is None else t.upper.route,
        lower_kind=t.lower_kind, lemmas=tuple(dict.fromkeys(lemmas)), assumptions=tuple(t.assumptions),
        contradiction=t.contradiction)
