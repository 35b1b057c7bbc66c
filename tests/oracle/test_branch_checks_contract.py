"""oracle/branch_checks.py against its contract (proofs/oracle_branch_bound.md, B2 and B3): the
relaxation rows of a box are exactly the rows B2 lists, a Farkas vector is accepted only as the
docstring of ``check_farkas_rows`` states (distinct in-range row indices, y >= 0 on "<=" rows,
combination zero, right-hand side < 0), a split must lie strictly inside its interval, and the
trees must cover every k'-subset with k <= k' < N.

Every certificate here is hand-built on the cell I2 (2 x 2 identity), eps = 1/10, k = 1: for a
pivot column j the other column l = 1 - j must be rebuilt in row i = l as b_il = z_i c (a_il = 1),
while |z_i| <= 1/10 (a_ij = 0); the McCormick row (zu - z)(c - cL) >= 0 and the box bound
w <= 1/10 + ... far below 1 - eps, so every box met below is empty.  The Farkas vectors are
derived by hand from the rows of B2 (see ``_leaf``), never taken from a producer.  Written for
surviving mutants of the cosmic-ray campaign over the exact oracle's re-checkers."""

from __future__ import annotations

import collections
import copy
from fractions import Fraction as F

import pytest
from softrank.oracle import branch_checks as bc
from softrank.oracle import recheck

I2 = [[F(1), F(0)], [F(0), F(1)]]
EPS = F(1, 10)


def _q(x) -> str:
    x = F(x)
    return f"{x.numerator}/{x.denominator}"


def _eye(n):
    return [[F(int(i == j)) for j in range(n)] for i in range(n)]


def _root(j, n=2, J=None):
    """The root box of pivot set J (default [j]) for I_n, by hand: c in [-1, 1], z_it within eps
    of a_(i, J_t) (1 on the diagonal, else 0)."""
    J = [j] if J is None else J
    box = {("c", t, l): (F(-1), F(1)) for t in range(len(J)) for l in range(n) if l not in J}
    box.update({("z", i, t): (F(int(i == J[t])) - EPS, F(int(i == J[t])) + EPS) for i in range(n) for t in range(len(J))})
    return box


def _index(rows, coefs, rhs, eq=False):
    want = ({v: F(x) for v, x in coefs.items() if x != 0}, F(rhs), eq)
    for r, (co, b, e) in enumerate(rows):
        if ({v: x for v, x in co.items() if x != 0}, b, e) == want:
            return r
    raise AssertionError(f"row {want} missing")


def _leaf(j, box, n=2, J=None, row=None):
    """A Farkas vector for the box of pivot set J = [j] (or J) of I_n, eps 1/10, unrestricted,
    from B2's rows.  l is a free column with a_il = 1 in row i (default: the free column, i = l),
    every other a_iq = 0.  With b_iq = z_it (q = J_t) or sum_t w_itq (q free), per t:
      (zu - z)(c - cL) >= 0:      w - zu c - cL z <= -zu cL        (z = z_it, c = c_tl, w = w_itl)
      zu * (c <= cU) [zu >= 0] or (-zu) * (-c <= -cL) [zu < 0]      cancels c
      (-cL) * (-z <= -zl) [cL < 0] or cL * (z <= zu) [cL >= 0]      cancels z
    so w_itl <= R_t = -zu cL + zu (cU or cL) + cL (zl or zu); then
      -b_il - e_il <= -1 (a_il = 1),  sum_q e_iq <= eps,
      (b_iq - e_iq <= 0) / 2 + (-b_iq - e_iq <= 0) / 2 for q != l  (e_iq >= 0)
    sums to 0 <= sum_t R_t - 1 + eps, which is < 0 on every box used here."""
    J = [j] if J is None else J
    l = next(q for q in range(n) if q not in J) if row is None else row
    i = l
    rows = bc.relaxation_rows(_eye(n), EPS, "unrestricted", J, box)
    y = collections.Counter()
    for t in range(len(J)):
        c, z, w = ("c", t, l), ("z", i, t), ("w", i, t, l)
        (cL, cU), (zl, zu) = box[c], box[z]
        y[_index(rows, {w: 1, c: -zu, z: -cL}, -zu * cL)] += 1
        if zu >= 0:
            y[_index(rows, {c: 1}, cU)] += zu
        else:
            y[_index(rows, {c: -1}, -cL)] += -zu
        if cL < 0:
            y[_index(rows, {z: -1}, -zl)] += -cL
        else:
            y[_index(rows, {z: 1}, zu)] += cL
    b = {q: {("z", i, J.index(q)): 1} if q in J else {("w", i, t, q): 1 for t in range(len(J))} for q in range(n)}
    for q in range(n):
        if q != l:
            y[_index(rows, {**b[q], ("e", i, q): -1}, 0)] += F(1, 2)
            y[_index(rows, {**{v: -x for v, x in b[q].items()}, ("e", i, q): -1}, 0)] += F(1, 2)
    y[_index(rows, {**{v: -x for v, x in b[l].items()}, ("e", i, l): -1}, -1)] += 1
    y[_index(rows, {("e", i, q): 1 for q in range(n)}, EPS)] += 1
    return {"y": [[r, _q(v)] for r, v in sorted(y.items())]}


def _split(j, box, key, at):
    """A one-split tree at ``at`` on ``key``, each child a hand-built leaf for its box."""
    L, U = box[key]
    low, high = {**box, key: (L, F(at))}, {**box, key: (F(at), U)}
    return {"split": [key[0], key[1], key[2], _q(at)], "low": _leaf(j, low), "high": _leaf(j, high)}, low, high


def _cert(trees, klass="unrestricted"):
    return {"kind": "branch-and-bound", "class": klass,
            "trees": [{"columns": list(j) if isinstance(j, tuple) else [j], "tree": t} for j, t in trees.items()]}


def _i3_cert():
    """k' = 2 on I3: a hand-built leaf for each of the three pivot pairs."""
    return _cert({J: _leaf(None, _root(None, 3, list(J)), 3, list(J)) for J in ((0, 1), (0, 2), (1, 2))})


def _leaves_cert():
    return _cert({j: _leaf(j, _root(j)) for j in (0, 1)})


# ---------------------------------------------------------------- relaxation_rows (B2)

def _norm(rows):
    return collections.Counter((tuple(sorted((v, F(x)) for v, x in co.items() if x != 0)), F(b), bool(e))
                               for co, b, e in rows)


def _expected_rows(klass, box):
    """B2's rows for I2, J = [0], written out by hand: variables c = c_01, z_i = z_i0, w_i = w_i01
    (b_i0 = z_i, b_i1 = w_i), e_il."""
    c = ("c", 0, 1)
    (cL, cU) = box[c]
    out = [({c: 1}, cU, False), ({c: -1}, -cL, False)]
    for i in range(2):
        z, w = ("z", i, 0), ("w", i, 0, 1)
        zl, zu = box[z]
        out += [({z: 1}, zu, False), ({z: -1}, -zl, False)]
        # (z - zl)(c - cL), (zu - z)(cU - c), (zu - z)(c - cL), (z - zl)(cU - c) >= 0
        out += [({c: zl, z: cL, w: -1}, zl * cL, False), ({c: zu, z: cU, w: -1}, zu * cU, False),
                ({w: 1, c: -zu, z: -cL}, -zu * cL, False), ({w: 1, c: -zl, z: -cU}, -zl * cU, False)]
        e0, e1 = ("e", i, 0), ("e", i, 1)
        a0, a1 = I2[i]
        out += [({z: 1, e0: -1}, a0, False), ({z: -1, e0: -1}, -a0, False),
                ({w: 1, e1: -1}, a1, False), ({w: -1, e1: -1}, -a1, False),
                ({e0: 1, e1: 1}, EPS, False)]
        if klass == "stochastic":
            out += [({z: -1}, 0, False), ({w: -1}, 0, False), ({z: 1, w: 1}, 1, True)]
    return out


@pytest.mark.parametrize("klass", ["unrestricted", "stochastic"])
def test_relaxation_rows_of_the_root_box_are_exactly_b2s_rows(klass):
    box = {("c", 0, 1): (F(-1), F(1)), ("z", 0, 0): (F(9, 10), F(11, 10) if klass == "unrestricted" else F(1)),
           ("z", 1, 0): (F(-1, 10) if klass == "unrestricted" else F(0), F(1, 10))}
    assert bc.root_box(I2, EPS, klass, [0]) == box
    rows = bc.relaxation_rows(I2, EPS, klass, [0], box)
    assert len(rows) == (24 if klass == "unrestricted" else 30)
    assert _norm(rows) == _norm(_expected_rows(klass, box))


def test_mccormick_rows_of_an_off_centre_box():
    """Bounds with cU != 1 and zl != 0 (zl cU = 1/8 and zl ** cU = 1/2 differ)."""
    box = {("c", 0, 1): (F(1, 3), F(1, 2)), ("z", 0, 0): (F(-3, 4), F(2, 5)), ("z", 1, 0): (F(1, 4), F(3, 4))}
    rows = bc.relaxation_rows(I2, EPS, "unrestricted", [0], box)
    assert _norm(rows) == _norm(_expected_rows("unrestricted", box))
    # the envelope holds at the four corners (w = z c) and each row is tight at three of them
    for i in range(2):
        z, w, c = ("z", i, 0), ("w", i, 0, 1), ("c", 0, 1)
        env = [r for r in rows if set(r[0]) == {z, w, c}]
        assert len(env) == 4
        for co, rhs, _ in env:
            tight = 0
            for zv in box[z]:
                for cv in box[c]:
                    lhs = co[z] * zv + co[c] * cv + co[w] * zv * cv
                    assert lhs <= rhs
                    tight += lhs == rhs
            assert tight == 3


# ---------------------------------------------------------------- check_farkas_rows

X_LE_0_AND_X_GE_1 = [({"x": 1}, F(0), False), ({"x": -1}, F(-1), False)]


def test_farkas_accepts_a_valid_vector_and_a_zero_multiplier():
    assert bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [1, "1"]])
    assert bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[1, 2], [0, 2]])
    rows = X_LE_0_AND_X_GE_1 + [({"x": 1}, F(5), False)]
    assert bc.check_farkas_rows(rows, [[0, "1"], [1, "1"], [2, "0"]])  # y = 0 is allowed


def test_farkas_refuses_a_row_named_twice():
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [1, "1/2"], [1, "1/2"]])
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [1, "1"], [1, "0"]])


@pytest.mark.parametrize("bad", [-1, -2, 2, 3, 7, 300, 10**6])
def test_farkas_refuses_a_row_index_out_of_range(bad):
    """Indices are 0 <= r < len(rows); a negative one must not wrap around to the last rows."""
    y = [[0, "1"], [1, "1"]]
    assert bc.check_farkas_rows(X_LE_0_AND_X_GE_1, y)
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [bad, "1"]])
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[bad, "1"], [1, "1"]])


def test_farkas_negative_index_would_name_a_real_row():
    # rows[-1] is the row x >= 1: with wrap-around this "proof" would sum to 0 <= -1
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [-1, "1"]])
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[-2, "1"], [1, "1"]])


@pytest.mark.parametrize("y", ["-1/2", "-1/1000", "-1", "-2"])
def test_farkas_refuses_a_negative_multiplier_on_an_inequality(y):
    """x <= 1 and x <= 0 are feasible (x = 0); -t (x <= 1) + t (x <= 0) would 'prove' 0 <= -t."""
    rows = [({"x": 1}, F(1), False), ({"x": 1}, F(0), False)]
    assert not bc.check_farkas_rows(rows, [[0, y], [1, str(-F(y))]])


def test_farkas_allows_a_negative_multiplier_on_an_equality():
    rows = [({"x": 1}, F(1), True), ({"x": 1}, F(0), False)]  # x = 1 and x <= 0
    assert bc.check_farkas_rows(rows, [[0, "-1"], [1, "1"]])
    assert bc.check_farkas_rows(rows, [[0, "-1/2"], [1, "1/2"]])


def test_farkas_needs_a_negative_rhs_and_a_zero_combination():
    rows = [({"x": 1}, F(0), False), ({"x": -1}, F(0), False)]  # x = 0 is feasible
    assert not bc.check_farkas_rows(rows, [[0, "1"], [1, "1"]])  # 0 <= 0: rhs not < 0
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[0, "1"], [1, "2"]])  # combination -x
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [[1, "1"]])
    assert not bc.check_farkas_rows(X_LE_0_AND_X_GE_1, [])


# ---------------------------------------------------------------- trees (B3)

def test_hand_built_leaves_are_accepted():
    for j in (0, 1):
        assert bc.check_farkas_rows(bc.relaxation_rows(I2, EPS, "unrestricted", [j], _root(j)), _leaf(j, _root(j))["y"])
    cert = _leaves_cert()
    assert bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    assert bc.check_branch(I2, EPS, cert, 1, "stochastic")  # unrestricted speaks for both
    assert bc.check_branch(I2, EPS, cert, 0, "unrestricted")  # k <= k'
    assert recheck(I2, EPS, 1, "unrestricted", "impossible", cert)
    # a tampered leaf is refused
    bad = copy.deepcopy(cert)
    y = bad["trees"][0]["tree"]["y"]
    y[0][1] = _q(F(y[0][1]) + F(1, 10**6))
    assert not bc.check_branch(I2, EPS, bad, 1, "unrestricted")


@pytest.mark.parametrize("coord", ["c", "z"])
def test_a_split_strictly_inside_is_accepted(coord):
    for j in (0, 1):
        box = _root(j)
        key = ("c", 0, 1 - j) if coord == "c" else ("z", 1 - j, 0)
        L, U = box[key]
        tree, _, _ = _split(j, box, key, (L + U) / 2 + (U - L) / 7)
        assert bc.check_branch(I2, EPS, _cert({j: tree, 1 - j: _leaf(1 - j, _root(1 - j))}), 1, "unrestricted")


@pytest.mark.parametrize("coord", ["c", "z"])
@pytest.mark.parametrize("where", ["at U", "at L", "below L", "above U"])
def test_a_split_not_strictly_inside_its_interval_is_refused(coord, where):
    """B3: a split [name, a, b, at] needs L < at < U.  Both children carry valid Farkas vectors
    for the boxes the split would give them, so only the split's position is wrong."""
    j = 0
    box = _root(j)
    key = ("c", 0, 1) if coord == "c" else ("z", 1, 0)
    L, U = box[key]
    at = {"at U": U, "at L": L, "below L": L - (U - L) / 2, "above U": U + (U - L) / 2}[where]
    tree, low, high = _split(j, box, key, at)
    for child, b in (("low", low), ("high", high)):
        assert bc.check_farkas_rows(bc.relaxation_rows(I2, EPS, "unrestricted", [j], b), tree[child]["y"]), child
    cert = _cert({0: tree, 1: _leaf(1, _root(1))})
    assert not bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    assert not recheck(I2, EPS, 1, "unrestricted", "impossible", cert)


def test_nested_splits_track_the_box():
    """The second split is inside the low child's interval [-1, 0] but not inside the root's
    interval at 1/2: at 1/2 it is refused, at -1/2 accepted."""
    j, key = 0, ("c", 0, 1)
    root = _root(j)
    low = {**root, key: (F(-1), F(0))}
    high = {**root, key: (F(0), F(1))}
    for at, ok in ((F(-1, 2), True), (F(1, 2), False), (F(0), False)):
        inner, _, _ = _split(j, low, key, at)
        tree = {"split": ["c", 0, 1, "0"], "low": inner, "high": _leaf(j, high)}
        assert bc.check_branch(I2, EPS, _cert({0: tree, 1: _leaf(1, _root(1))}), 1, "unrestricted") is ok, at


@pytest.mark.parametrize("split", [["c", 0, 0, "0"], ["c", 1, 1, "0"], ["z", 2, 0, "0"], ["z", 0, 1, "0"],
                                   ["w", 1, 0, "0"], ["c", "0", 1, "0"], ["c", 0, True, "0"], ["c", 0, 1.0, "0"],
                                   ["c", 0, 1, "zero"], ["c", 0, 1], ["c", 0, 1, "0", "1"]])
def test_a_malformed_split_is_refused(split):
    tree = {"split": split, "low": _leaf(0, _root(0)), "high": _leaf(0, _root(0))}
    assert not recheck(I2, EPS, 1, "unrestricted", "impossible", _cert({0: tree, 1: _leaf(1, _root(1))}))


@pytest.mark.parametrize("node", [{}, {"low": {"y": []}}, {"split": ["c", 0, 1, "0"], "low": {"y": []}},
                                  {"y": [[0]]}, {"y": [["0", "1"]]}, {"y": [[True, "1"]]}, {"y": [[0, "x"]]}])
def test_a_malformed_node_is_refused(node):
    cert = _leaves_cert()
    assert recheck(I2, EPS, 1, "unrestricted", "impossible", cert)
    cert["trees"][0]["tree"] = node
    assert not recheck(I2, EPS, 1, "unrestricted", "impossible", cert)


# ---------------------------------------------------------------- check_branch: pivot sets and class

def test_pivot_sets_must_have_fewer_than_n_columns():
    """k <= k' < N: trees over N or more columns prove nothing (C(N, k') is 1 or 0 there)."""
    for cols in ([0, 1], [0, 1, 2], [0, 1, 2, 3]):
        cert = {"kind": "branch-and-bound", "class": "unrestricted", "trees": [{"columns": cols, "tree": {"y": []}}]}
        assert not bc.check_branch(I2, EPS, cert, 1, "unrestricted"), cols
        assert not bc.check_branch(I2, EPS, cert, 0, "unrestricted"), cols
        assert not recheck(I2, EPS, 1, "unrestricted", "impossible", cert), cols


def test_pivot_sets_smaller_than_k_are_refused():
    cert = _leaves_cert()  # k' = 1
    assert bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    assert not bc.check_branch(I2, EPS, cert, 2, "unrestricted")


def test_every_pivot_set_needs_a_tree():
    cert = _leaves_cert()
    for drop in (0, 1):
        bad = copy.deepcopy(cert)
        del bad["trees"][drop]
        assert not bc.check_branch(I2, EPS, bad, 1, "unrestricted")
    # a tree for an out-of-range set does not stand in for a missing one
    bad = copy.deepcopy(cert)
    bad["trees"][1]["columns"] = [2]
    assert not recheck(I2, EPS, 1, "unrestricted", "impossible", bad)
    # mixed sizes are refused
    bad = copy.deepcopy(cert)
    bad["trees"].append({"columns": [0, 1], "tree": {"y": []}})
    assert not bc.check_branch(I2, EPS, bad, 1, "unrestricted")


def test_relaxation_class_must_be_the_cells_or_unrestricted():
    cert = _leaves_cert()
    for klass in ("stochastic", "Unrestricted", "", "cokernel"):
        assert not bc.check_branch(I2, EPS, dict(cert, **{"class": klass}), 1, "unrestricted"), klass
    for klass in ("Stochastic", "", "bounded"):
        assert not bc.check_branch(I2, EPS, dict(cert, **{"class": klass}), 1, "stochastic"), klass


def test_hand_built_i3_certificate_for_pivot_pairs():
    cert = _i3_cert()
    I3 = _eye(3)
    for k in (0, 1, 2):
        assert bc.check_branch(I3, EPS, cert, k, "unrestricted"), k
    assert recheck(I3, EPS, 2, "unrestricted", "impossible", cert)
    assert not bc.check_branch(I3, F(1, 2), cert, 2, "unrestricted")  # the leaves need 3/5 - 1 + eps < 0


@pytest.mark.parametrize("extra", [[0, 0], [2, 2], [1, 1]])
def test_a_pivot_key_with_a_repeated_column_is_refused(extra):
    """A key naming a column twice is not a set of k' columns: the certificate is malformed, even
    when every true pivot pair has its tree."""
    cert = _i3_cert()
    cert["trees"].append({"columns": extra, "tree": {"y": []}})
    assert not bc.check_branch(_eye(3), EPS, cert, 2, "unrestricted")
    assert not recheck(_eye(3), EPS, 2, "unrestricted", "impossible", cert)


@pytest.mark.parametrize("extra", [[0, 0], [1, 1, 1], [0, 0, 1]])
def test_keys_of_mixed_lengths_are_refused(extra):
    """All keys must have one length k' (here 1 for I2), even a key whose set has k' columns."""
    cert = _leaves_cert()
    assert bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    cert["trees"].append({"columns": extra, "tree": _leaf(0, _root(0))})
    assert not bc.check_branch(I2, EPS, cert, 1, "unrestricted")


def test_a_pivot_key_below_column_0_is_refused():
    """Keys are increasing sequences inside [0, N): [-1] is no pivot set of I2, even with a leaf
    that refutes the rows built for it (there every column is free and row 0 needs
    b_00 = z_0 c_00 = 1 with |z_0| <= 1/10, a_(0, -1) read as a_01 = 0)."""
    box = {("c", 0, 0): (F(-1), F(1)), ("c", 0, 1): (F(-1), F(1)),
           ("z", 0, 0): (-EPS, EPS), ("z", 1, 0): (1 - EPS, 1 + EPS)}
    leaf = _leaf(None, box, 2, [-1], row=0)
    assert bc.check_farkas_rows(bc.relaxation_rows(I2, EPS, "unrestricted", [-1], box), leaf["y"])
    cert = _leaves_cert()
    assert bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    cert["trees"][1] = {"columns": [-1], "tree": leaf}  # [1] replaced by [-1]
    assert not bc.check_branch(I2, EPS, cert, 1, "unrestricted")
    assert not recheck(I2, EPS, 1, "unrestricted", "impossible", cert)


# ---------------------------------------------------------------- a stochastic argument

A3 = [[F(3), F(0)], [F(0), F(3)]]  # rows of sum 3: no stochastic row within 1/10


def _z_box_leaf(j, A=A3, J=None, i=None):
    """In the stochastic class the root box of z_it with a_(i, J_t) = 3 is [max(29/10, 0),
    min(31/10, 1)] = [29/10, 1]: its own two box rows z <= 1 and -z <= -29/10 sum to 0 <= -19/10.
    Default: J = [j], i = j (a_jj = 3), t = 0."""
    J = [j] if J is None else J
    i = j if i is None else i
    t = 0
    box = bc.root_box(A, EPS, "stochastic", J)
    assert box[("z", i, t)] == (F(29, 10), F(1))
    rows = bc.relaxation_rows(A, EPS, "stochastic", J, box)
    return {"y": [[_index(rows, {("z", i, t): 1}, 1), "1"], [_index(rows, {("z", i, t): -1}, F(-29, 10)), "1"]]}


def test_a_stochastic_relaxation_speaks_only_for_the_stochastic_class():
    """The class string is compared by value: one read from JSON (a distinct str object) is the
    same class."""
    cert = _cert({j: _z_box_leaf(j) for j in (0, 1)}, klass="stochastic")
    assert bc.check_branch(A3, EPS, cert, 1, "stochastic")
    assert recheck(A3, EPS, 1, "stochastic", "impossible", cert)
    for klass in ("stochastic", "".join(["stoch", "astic"])):
        c = dict(cert, **{"class": klass})
        assert not bc.check_branch(A3, EPS, c, 1, "unrestricted")
        assert not recheck(A3, EPS, 1, "unrestricted", "impossible", c)
    import json
    c = json.loads(json.dumps(cert))
    assert recheck(A3, EPS, 1, "stochastic", "impossible", c)
    assert not recheck(A3, EPS, 1, "unrestricted", "impossible", c)
    # the same leaves do not refute the unrestricted rows (z_00 in [29/10, 31/10] there)
    assert not bc.check_branch(A3, EPS, dict(cert, **{"class": "unrestricted"}), 1, "stochastic")


def test_the_stochastic_row_sum_is_an_equality():
    """sum_l b_il = 1 is an equality (B2), so it may carry a negative multiplier.  Row 0 of
    A = [[0, 0], [1/2, 1/2]], J = [0], stochastic: z = z_00 in [0, 1/10], w = w_001 = b_01;
      -1 * (z + w = 1)              -z - w        = -1
      (z <= 1/10)                    z            <= 1/10
      (w - e_01 <= a_01 = 0)         w - e_01     <= 0
      (e_00 + e_01 <= eps)           e_00 + e_01  <= 1/10
      (z - e_00 <= 0) / 2 + (-z - e_00 <= 0) / 2:   -e_00 <= 0
    sums to 0 <= -4/5."""
    A = [[F(0), F(0)], [F(1, 2), F(1, 2)]]
    box = bc.root_box(A, EPS, "stochastic", [0])
    assert box[("z", 0, 0)] == (F(0), EPS)
    rows = bc.relaxation_rows(A, EPS, "stochastic", [0], box)
    z, w, e0, e1 = ("z", 0, 0), ("w", 0, 0, 1), ("e", 0, 0), ("e", 0, 1)
    eq = _index(rows, {z: 1, w: 1}, 1, eq=True)
    rest = [[_index(rows, {z: 1}, EPS), "1"], [_index(rows, {w: 1, e1: -1}, 0), "1"],
            [_index(rows, {e0: 1, e1: 1}, EPS), "1"],
            [_index(rows, {z: 1, e0: -1}, 0), "1/2"], [_index(rows, {z: -1, e0: -1}, 0), "1/2"]]
    assert bc.check_farkas_rows(rows, [[eq, "-1"]] + rest)
    assert not bc.check_farkas_rows(rows, [[eq, "1"]] + rest)
    assert not bc.check_farkas_rows(rows, rest)
    # the unrestricted rows have no such equality: nothing refutes them this way
    un = bc.relaxation_rows(A, EPS, "unrestricted", [0], bc.root_box(A, EPS, "unrestricted", [0]))
    assert not any(e for _, _, e in un)


def test_the_cell_class_is_compared_by_value():
    cert = _cert({j: _z_box_leaf(j) for j in (0, 1)}, klass="stochastic")
    assert recheck(A3, EPS, 1, "".join(["stoch", "astic"]), "impossible", cert)
    assert bc.check_branch(A3, EPS, cert, 1, "".join(["stoch", "astic"]))


def test_a_single_row_cell():
    """A = [3, 3] (1 x 2), stochastic: for either pivot column z_00 lies in [29/10, 1]."""
    A = [[F(3), F(3)]]
    cert = _cert({j: _z_box_leaf(j, A, i=0) for j in (0, 1)}, klass="stochastic")
    assert bc.check_branch(A, EPS, cert, 1, "stochastic")
    assert recheck(A, EPS, 1, "stochastic", "impossible", cert)
    assert not recheck(A, EPS, 1, "unrestricted", "impossible", cert)


def test_pivot_sets_of_all_n_columns_are_refused_even_with_a_valid_tree():
    """k' = N is not allowed (B1 needs k < N), even when the rows of J = all columns are refuted."""
    leaf = _z_box_leaf(0, A3, J=[0, 1], i=0)
    cert = {"kind": "branch-and-bound", "class": "stochastic", "trees": [{"columns": [0, 1], "tree": leaf}]}
    assert bc.check_farkas_rows(bc.relaxation_rows(A3, EPS, "stochastic", [0, 1], bc.root_box(A3, EPS, "stochastic", [0, 1])), leaf["y"])
    assert not bc.check_branch(A3, EPS, cert, 1, "stochastic")
    assert not recheck(A3, EPS, 1, "stochastic", "impossible", cert)


def test_no_trees_is_refused():
    for klass in ("unrestricted", "stochastic"):
        assert bc.check_branch(I2, EPS, {"class": klass, "trees": []}, 1, "stochastic") is False


def test_an_unsorted_pivot_key_does_not_stand_in_for_a_sorted_one():
    """I3, k' = 2: trees for (0, 1), (0, 2) and (2, 1), each a valid leaf for its own rows, miss
    the set {1, 2} as a key (keys are increasing sequences)."""
    cert = _i3_cert()
    assert bc.check_branch(_eye(3), EPS, cert, 2, "unrestricted")
    J = [2, 1]
    cert["trees"][2] = {"columns": J, "tree": _leaf(None, _root(None, 3, J), 3, J)}
    assert bc.check_farkas_rows(bc.relaxation_rows(_eye(3), EPS, "unrestricted", J, _root(None, 3, J)), cert["trees"][2]["tree"]["y"])
    assert not bc.check_branch(_eye(3), EPS, cert, 2, "unrestricted")
    assert not recheck(_eye(3), EPS, 2, "unrestricted", "impossible", cert)


def test_many_pivot_sets_are_counted_by_value():
    """A = [3, ..., 3] (1 x 11), stochastic, k' = 5: C(11, 5) = 462 trees, each the z_00 box leaf;
    one missing is refused."""
    import itertools
    import math

    A = [[F(3)] * 11]
    sets = list(itertools.combinations(range(11), 5))
    assert len(sets) == math.comb(11, 5) == 462
    leaf = _z_box_leaf(0, A, J=list(sets[0]), i=0)
    rows0 = bc.relaxation_rows(A, EPS, "stochastic", list(sets[-1]), bc.root_box(A, EPS, "stochastic", list(sets[-1])))
    assert bc.check_farkas_rows(rows0, leaf["y"])  # the same row numbers for every set
    cert = {"kind": "branch-and-bound", "class": "stochastic", "trees": [{"columns": list(J), "tree": leaf} for J in sets]}
    assert bc.check_branch(A, EPS, cert, 5, "stochastic")
    cert["trees"].pop(100)
    assert not bc.check_branch(A, EPS, cert, 5, "stochastic")
