"""``validated/outcome.py``: the assumptions each route lists (none beyond the operator's on the
exact route, Arb's on the Arb route, binary64's and Arb's on a binary64-bound route), an unknown
route refused, and ``Check.proved`` true for PROVED only."""

from __future__ import annotations

import pytest

from softrank.validated.float_bounds import BINARY64_ASSUMPTIONS
from softrank.validated.outcome import ARB_ASSUMPTIONS, Check, Outcome, route_assumptions


def test_each_route_lists_its_assumptions():
    assert route_assumptions("", "exact") == []
    assert route_assumptions("A is the row softmax of H", "exact") == ["A is the row softmax of H"]
    assert route_assumptions("", "arb") == ARB_ASSUMPTIONS
    assert route_assumptions("op", "arb") == ["op", *ARB_ASSUMPTIONS]
    for route in ("binary64-bound", "binary64-bound (enclosure)"):
        assert route_assumptions("op", route) == ["op", *BINARY64_ASSUMPTIONS, *ARB_ASSUMPTIONS]
    assert BINARY64_ASSUMPTIONS and ARB_ASSUMPTIONS and not set(BINARY64_ASSUMPTIONS) & set(ARB_ASSUMPTIONS)


@pytest.mark.parametrize("route", ["", "binary64", "Arb", "arbitrary", "zzz", "exact "])
def test_an_unknown_route_is_refused(route):
    with pytest.raises(ValueError, match="unknown route"):
        route_assumptions("op", route)


def test_only_proved_is_proved():
    assert [Check(o, "proofs/x.md").proved for o in Outcome] == [True, False, False]
    assert Check(Outcome.PROVED, "proofs/x.md").assumptions == []
