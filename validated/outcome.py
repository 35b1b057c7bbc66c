"""Three-valued outcomes of a check, each naming the lemma (proof file) it rests on, and the
assumptions each route of a check lists (defined here once).

``PROVED``: the inequality holds for the exact operator (under the listed assumptions).
``REFUTED``: its negation holds, certainly.  ``UNRESOLVED``: neither could be certified; this is
never read as false.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from softrank.validated.float_bounds import BINARY64_ASSUMPTIONS

ARB_ASSUMPTIONS = ["Arb ball arithmetic (python-flint) returns balls that contain the exact results"]


def route_assumptions(operator_assumption: str, route: str) -> list[str]:
    """What a check accepted on ``route`` rests on: how the stored numbers define A (if given), then
    nothing more on the ``exact`` route, the Arb assumption on the ``arb`` route, and on a
    ``binary64-bound`` route the binary64 ones (proofs/binary64_error_bounds.md) and the Arb one
    (the enclosure of A it starts from may be Arb's)."""
    if route == "exact":
        extra = []
    elif route == "arb":
        extra = ARB_ASSUMPTIONS
    elif route.startswith("binary64-bound"):
        extra = BINARY64_ASSUMPTIONS + ARB_ASSUMPTIONS
    else:
        raise ValueError(f"unknown route {route!r}")
    return ([operator_assumption] if operator_assumption else []) + extra


class Outcome(str, Enum):
    PROVED = "proved"
    REFUTED = "refuted"
    UNRESOLVED = "unresolved"


@dataclass
class Check:
    """Result of one checking function: outcome, the bound it computed, and its assumptions."""

    outcome: Outcome
    lemma: str  # proof file, e.g. "proofs/lemma_U_upper_witness.md"
    value: str = ""  # the certified quantity, as text (e.g. an upper bound as a decimal)
    route: str = ""  # "binary64-bound" or "arb"
    assumptions: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def proved(self) -> bool:
        return self.outcome is Outcome.PROVED
