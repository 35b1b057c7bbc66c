"""Three-valued outcomes of a check, each naming the lemma (proof file) it rests on.

``PROVED``: the inequality holds for the exact operator (under the listed assumptions).
``REFUTED``: its negation holds, certainly.  ``UNRESOLVED``: neither could be certified; this is
never read as false.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


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
