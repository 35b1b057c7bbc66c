"""oracle/radon_checks.py against proofs/oracle_radon_stochastic.md (R3, R4) and docs/oracle.md
("radon-separation"): ``side_bound`` and ``split_gap`` pinned to exact values worked by hand from
c_i = a_i.g_i + eps ||g_i||_inf + max_j (s_i w_j - g_ij) and gap = max_{s_i=+1} c_i +
max_{s_i=-1} c_i, and ``check_radon`` on identity cells where, for the split s, w = -s and
g_i = s_i w give c_i = -1 + eps (so the gap is 2 eps - 2 < 0 for eps < 1).  Each test pins one
rule: every split present (2^(m-1) - 1 of them, counted for m = 2, 3, 4), signs of length m, in
{+1, -1}, s_0 = +1, both sides non-empty, the gap strictly negative.  Written for the surviving
mutants of the cosmic-ray campaign over oracle/radon_checks.py."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest
from softrank.oracle.checks import recheck
from softrank.oracle.radon_checks import check_radon, side_bound, split_gap

Q = F(1, 4)


def eye(n):
    return [[F(int(i == j)) for j in range(n)] for i in range(n)]


def entry(signs):
    """The split's (w, g) on an identity cell: w = -s, g_i = s_i w (so max_j (s_i w_j - g_ij) = 0
    and a_i . g_i = s_i w_i = -1, ||g_i||_inf = 1)."""
    w = [-s for s in signs]
    g = [[s * x for x in w] for s in signs]
    return {"signs": list(signs), "w": [str(x) for x in w], "g": [[str(x) for x in r] for r in g]}


def splits(m):
    return [(1,) + t for t in itertools.product((1, -1), repeat=m - 1) if -1 in t]


def cert(m):
    return {"kind": "radon-separation", "splits": [entry(s) for s in splits(m)]}


# ------------------------------------------------------------------ side_bound / split_gap


def test_side_bound_exact_value_positive_side():
    # a = (1/2, 1/3, 1/6), g = (2, -1, 1/2): a.g = 1 - 1/3 + 1/12 = 3/4; eps ||g||_inf = 2/5;
    # w = (1, -2, 3): max(1 - 2, -2 + 1, 3 - 1/2) = 5/2.  Total 3/4 + 2/5 + 5/2 = 73/20.
    a, g, w = [F(1, 2), F(1, 3), F(1, 6)], [F(2), F(-1), F(1, 2)], [F(1), F(-2), F(3)]
    assert side_bound(a, F(1, 5), 1, w, g) == F(73, 20)


def test_side_bound_exact_value_negative_side():
    # s = -1: max(-1 - 2, 2 + 1, -3 - 1/2) = 3.  Total 3/4 + 2/5 + 3 = 83/20.
    a, g, w = [F(1, 2), F(1, 3), F(1, 6)], [F(2), F(-1), F(1, 2)], [F(1), F(-2), F(3)]
    assert side_bound(a, F(1, 5), -1, w, g) == F(83, 20)


def test_side_bound_norm_of_g_is_its_largest_absolute_entry():
    # a = (0, 0), g = (1, -3), w = g (s = 1: max(0, 0) = 0): c = eps * 3.
    assert side_bound([F(0), F(0)], F(1, 7), 1, [F(1), F(-3)], [F(1), F(-3)]) == F(3, 7)
    # eps = 0: c = a.g + max_j (w_j - g_j) = (2 - 3) + max(1 - 1, 5 - (-3)) = -1 + 8 = 7.
    assert side_bound([F(2), F(1)], F(0), 1, [F(1), F(5)], [F(1), F(-3)]) == F(7)


def _flat(eps, xs):
    """Rows g_i = (x_i, x_i), w = 0 on a stochastic 2-column A: c_i = x_i + eps |x_i| - x_i =
    eps |x_i|."""
    return [[F(x), F(x)] for x in xs]


def test_split_gap_adds_the_largest_bound_of_each_side():
    # eps = 1, c = (1, 2, 3) (x = (1, 2, 3)); signs (+, -, -): max(1) + max(2, 3) = 4.
    A = [[F(1, 2), F(1, 2)], [F(1), F(0)], [F(0), F(1)]]
    g = _flat(1, [1, 2, 3])
    w = [F(0), F(0)]
    assert split_gap(A, F(1), (1, -1, -1), w, g) == F(4)
    # signs (+, -, +): max(1, 3) + max(2) = 5; (+, +, -): max(1, 2) + 3 = 5.
    assert split_gap(A, F(1), (1, -1, 1), w, g) == F(5)
    assert split_gap(A, F(1), (1, 1, -1), w, g) == F(5)
    # c = (3, 2, 1), signs (+, -, -): 3 + 2 = 5.
    assert split_gap(A, F(1), (1, -1, -1), w, _flat(1, [3, 2, 1])) == F(5)


def test_split_gap_sides_are_exactly_plus_one_and_minus_one():
    # a row whose sign is neither +1 nor -1 belongs to no side: c = (1, 9, 2), signs (1, 2, -1):
    # gap = 1 + 2 = 3 (row 1, sign 2, ignored); signs (1, -2, -1): also 3.
    A = [[F(1, 2), F(1, 2)]] * 3
    g = _flat(1, [1, 9, 2])
    w = [F(0), F(0)]
    assert split_gap(A, F(1), (1, 2, -1), w, g) == F(3)
    assert split_gap(A, F(1), (1, -2, -1), w, g) == F(3)
    assert split_gap(A, F(1), (1, 0, -1), w, g) == F(3)


def test_split_gap_of_the_identity_entries():
    # m = 3, split (+, -, -): c_i = -1 + eps each: gap = 2 eps - 2 = -3/2 at eps = 1/4.
    e = entry((1, -1, -1))
    g = [[F(x) for x in r] for r in e["g"]]
    w = [F(x) for x in e["w"]]
    assert split_gap(eye(3), Q, (1, -1, -1), w, g) == F(-3, 2)


# ------------------------------------------------------------------ check_radon: accepted


@pytest.mark.parametrize("m", [2, 3, 4])
def test_every_split_with_a_negative_gap_is_accepted(m):
    assert len(splits(m)) == 2 ** (m - 1) - 1
    assert check_radon(eye(m), Q, cert(m)) is True
    assert recheck(eye(m), Q, m - 1, "stochastic", "impossible", cert(m))


def test_one_row_needs_no_split():
    # m = 1: 2^0 - 1 = 0 splits; no stochastic B of rank 0 (its rows sum to 0).
    assert check_radon([[F(1, 2), F(1, 2)]], Q, {"kind": "radon-separation", "splits": []}) is True


def test_rectangular_cells_use_n_columns():
    # I_2 padded with a zero column (2 x 3): w and g of length 3.
    A = [[F(1), F(0), F(0)], [F(0), F(1), F(0)]]
    e = {"signs": [1, -1], "w": ["-1", "1", "0"], "g": [["-1", "1", "0"], ["1", "-1", "0"]]}
    assert check_radon(A, Q, {"splits": [e]}) is True
    e2 = {"signs": [1, -1], "w": ["-1", "1"], "g": [["-1", "1"], ["1", "-1"]]}
    with pytest.raises(ValueError):
        check_radon(A, Q, {"splits": [e2]})


# ------------------------------------------------------------------ check_radon: refused


def test_gap_zero_is_refused_gap_just_below_accepted():
    # identity entries: gap = 2 eps - 2: zero at eps = 1.
    assert check_radon(eye(2), F(1), cert(2)) is False
    assert check_radon(eye(2), F(99, 100), cert(2)) is True
    assert check_radon(eye(3), F(1), cert(3)) is False


def test_one_positive_gap_refuses_the_certificate():
    # m = 3 at eps = 1/4, one split's w, g replaced by zeros: c_i = 0 + 0 + max_j(0) = 0, gap 0.
    c = cert(3)
    c["splits"][1]["w"] = ["0"] * 3
    c["splits"][1]["g"] = [["0"] * 3] * 3
    assert check_radon(eye(3), Q, c) is False


@pytest.mark.parametrize("m", [2, 3, 4])
def test_a_missing_split_is_refused(m):
    c = cert(m)
    for t in range(len(c["splits"])):
        short = {"splits": c["splits"][:t] + c["splits"][t + 1:]}
        assert check_radon(eye(m), Q, short) is False


def test_a_split_listed_twice_does_not_stand_for_a_missing_one():
    c = cert(3)
    c["splits"][2] = c["splits"][0]
    assert check_radon(eye(3), Q, c) is False


def test_a_repeated_split_with_all_present_is_accepted():
    c = cert(3)
    c["splits"].append(c["splits"][0])
    assert check_radon(eye(3), Q, c) is True


def test_signs_longer_than_m_are_refused():
    # m = 2: (1, -1, 1): its first two rows are the only split; the extra sign is out of place.
    e = entry((1, -1))
    e["signs"] = [1, -1, 1]
    assert check_radon(eye(2), Q, {"splits": [e]}) is False


def test_signs_shorter_than_m_are_refused():
    # m = 3: two real splits and a short (1, -1) standing for the third; g has m rows.
    c = cert(3)
    e = entry((1, -1, 0))  # w = (-1, 1, 0), g rows s_i w, last row zero
    e["signs"] = [1, -1]
    c["splits"] = [x for x in c["splits"] if x["signs"] != [1, -1, -1]] + [e]
    assert len(c["splits"]) == 3
    assert check_radon(eye(3), Q, c) is False


@pytest.mark.parametrize("bad", [[1, 2], [1, -2], [1, 0]])
def test_signs_outside_plus_minus_one_are_refused(bad):
    # m = 2 with signs (1, +-2) or (1, 0): the single split replaced.
    e = entry((1, -1))
    e["signs"] = bad
    assert check_radon(eye(2), Q, {"splits": [e]}) is False


def test_first_sign_must_be_plus_one():
    # m = 2: (-1, +1) is the negated split; its own (w, g) (w = -s) gives the same gap -3/2.
    assert check_radon(eye(2), Q, {"splits": [entry((-1, 1))]}) is False
    # m = 3: the three splits with s_0 = +1 minus one, replaced by a negated one.
    c = cert(3)
    c["splits"][0] = entry(tuple(-s for s in c["splits"][0]["signs"]))
    assert check_radon(eye(3), Q, c) is False


def test_all_plus_is_not_a_split():
    # (1, 1): no row on the -1 side; refused without evaluating an empty side.
    assert check_radon(eye(2), Q, {"splits": [entry((1, 1))]}) is False
    c = cert(3)
    c["splits"].append(entry((1, 1, 1)))
    assert check_radon(eye(3), Q, c) is False


def test_g_of_the_wrong_shape_raises():
    e = entry((1, -1))
    e["g"] = e["g"][:1]
    with pytest.raises(ValueError):
        check_radon(eye(2), Q, {"splits": [e]})
    assert not recheck(eye(2), Q, 1, "stochastic", "impossible", {"kind": "radon-separation", "splits": [e]})


def test_signs_must_be_json_integers():
    e = entry((1, -1))
    e["signs"] = [1, -1.0]
    assert not recheck(eye(2), Q, 1, "stochastic", "impossible", {"kind": "radon-separation", "splits": [e]})
    e["signs"] = "1-1"
    assert not recheck(eye(2), Q, 1, "stochastic", "impossible", {"kind": "radon-separation", "splits": [e]})


class Int(int):
    """An int that is not one of CPython's cached small ints (as ``json.loads(..., parse_int=Int)``
    gives): signs must be compared by value, never by identity."""


def test_signs_are_compared_by_value():
    import json

    c = json.loads(json.dumps(cert(3)), parse_int=Int)
    assert type(c["splits"][0]["signs"][2]) is Int
    assert check_radon(eye(3), Q, c) is True
    assert recheck(eye(3), Q, 2, "stochastic", "impossible", c)


def test_a_positive_gap_is_refused():
    # identity entries at eps = 2: gap 2 * 2 - 2 = 2 > 0; at eps = 3/2: 1.
    assert check_radon(eye(2), F(2), cert(2)) is False
    assert check_radon(eye(3), F(3, 2), cert(3)) is False


def test_ten_rows_need_all_511_splits():
    # 2^9 - 1 = 511 splits (a count past CPython's small-int cache: compared by value).
    m = 10
    entries = []
    for s in splits(m):
        w = [-x for x in s]
        entries.append({"signs": list(s), "w": w, "g": [[x * v for v in w] for x in s]})
    assert len(entries) == 511
    assert check_radon(eye(m), Q, {"splits": entries}) is True
