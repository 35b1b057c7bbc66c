"""oracle/subcell_checks.py against proofs/oracle_submatrix.md and docs/oracle.md ("submatrix"):
``_nesting`` counted by hand, ``_indices`` and ``subcell`` on small exact matrices, and
``check_submatrix`` both through the real ``recheck`` (embedded ``row-norm`` /
``row-simplex-distance`` certificates whose truth is worked by hand) and through a recording
stand-in for ``recheck`` (so that what the checker hands on -- the sub-cell it extracts, eps, k,
the inner class, the verdict, the embedded certificate -- and what it refuses before handing
anything on are both seen).  Each test pins one rule: indices distinct and in range, groups
non-empty and disjoint, the sub-cell strictly smaller, the inner class allowed (stochastic only
for a stochastic cell whose groups cover every column), at most MAX_NESTING = 16 nested levels.
Written for the surviving mutants of the cosmic-ray campaign over oracle/subcell_checks.py."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from softrank.oracle.checks import recheck
from softrank.oracle.subcell_checks import CLASSES, MAX_NESTING, _indices, _nesting, check_submatrix, subcell

HALF = F(1, 2)

# 3 x 3, rows: (1, 1, 1/2) (l1 5/2, simplex distance |5/2 - 1| = 3/2), (1/2, 1/4, 1/4)
# (stochastic: distance 0), (0, 0, 1/8) (l1 1/8).
A = [[F(1), F(1), F(1, 2)], [F(1, 2), F(1, 4), F(1, 4)], [F(0), F(0), F(1, 8)]]
ROW_NORM = {"kind": "row-norm", "row": 0}


class Recorder:
    """Stands in for ``recheck``: records its arguments, answers ``answer``."""

    def __init__(self, answer=True):
        self.answer, self.calls = answer, []

    def __call__(self, *args):
        self.calls.append(args)
        return self.answer


def sub(rows, columns, klass="unrestricted", inner=None):
    return {"kind": "submatrix", "rows": rows, "columns": columns, "class": klass,
            "certificate": inner if inner is not None else ROW_NORM}


# ------------------------------------------------------------------ _nesting


def test_nesting_counts_submatrix_levels():
    assert _nesting(ROW_NORM) == 0
    assert _nesting(None) == 0
    assert _nesting("submatrix") == 0
    assert _nesting({"kind": "submatrix"}) == 1  # no embedded certificate: the chain ends
    c = ROW_NORM
    for depth in range(1, 6):
        c = sub([0], [[0]], inner=c)
        assert _nesting(c) == depth


def test_nesting_stops_counting_at_max_plus_one():
    assert MAX_NESTING == 16
    c = ROW_NORM
    for _ in range(16):
        c = sub([0], [[0]], inner=c)
    assert _nesting(c) == 16
    c = sub([0], [[0]], inner=c)
    assert _nesting(c) == 17
    for _ in range(5):
        c = sub([0], [[0]], inner=c)
    assert _nesting(c) == 17


# ------------------------------------------------------------------ _indices / subcell


def test_indices_keeps_order_and_values():
    assert _indices([2, 0], 3) == [2, 0]
    assert _indices([0], 1) == [0]
    assert _indices((1, 2, 0), 3) == [1, 2, 0]


@pytest.mark.parametrize("items", [[], [0, 0], [1, 2, 1], [3], [0, 3], [-1], [2, -1]])
def test_indices_refuses_empty_repeated_or_out_of_range(items):
    assert _indices(items, 3) is None


def test_indices_refuses_non_integers():
    for bad in (["0"], [0.0], [True], "01"):
        with pytest.raises(ValueError):
            _indices(bad, 3)


def test_subcell_keeps_rows_and_sums_column_groups():
    # rows (2, 0), groups {2, 0} and {1}: row 2 -> (0 + 1/8, 0) ; row 0 -> (1/2 + 1, 1).
    assert subcell(A, [2, 0], [[2, 0], [1]]) == [[F(1, 8), F(0)], [F(3, 2), F(1)]]
    assert subcell(A, [1], [[0, 1, 2]]) == [[F(1)]]
    assert subcell(A, [0, 1], [[1]]) == [[F(1)], [F(1, 4)]]


# ------------------------------------------------------------------ check_submatrix: what it hands on


def test_hands_the_extracted_subcell_and_everything_else_to_recheck():
    rec = Recorder()
    inner = {"kind": "whatever", "x": 1}
    assert check_submatrix(A, HALF, sub([2, 0], [[2, 0], [1]], inner=inner), 3, "unrestricted", rec) is True
    assert rec.calls == [([[F(1, 8), F(0)], [F(3, 2), F(1)]], HALF, 3, "unrestricted", "impossible", inner)]


def test_the_inner_verdict_is_the_answer():
    rec = Recorder(answer=False)
    assert check_submatrix(A, HALF, sub([0], [[0], [1]]), 0, "unrestricted", rec) is False
    assert len(rec.calls) == 1


def test_stochastic_inner_class_is_handed_on():
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0, 1], [[0, 1], [2]], "stochastic"), 1, "stochastic", rec) is True
    assert rec.calls[0][0] == [[F(2), F(1, 2)], [F(3, 4), F(1, 4)]]
    assert rec.calls[0][3] == "stochastic"


# ------------------------------------------------------------------ strictly smaller


def test_all_rows_and_all_columns_is_not_smaller():
    # a permutation of A's rows and columns is as large as A: refused even though the inner
    # certificate (row-norm of A's row 0, now row 2) would re-check.
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([1, 2, 0], [[2], [0], [1]]), 0, "unrestricted", rec) is False
    assert rec.calls == []


def test_all_rows_fewer_columns_is_smaller():
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0, 1, 2], [[0, 1], [2]]), 0, "unrestricted", rec) is True
    assert check_submatrix(A, HALF, sub([0, 1, 2], [[0], [1]]), 0, "unrestricted", rec) is True
    assert len(rec.calls) == 2


def test_fewer_rows_all_columns_is_smaller():
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0, 1], [[0], [1], [2]]), 0, "unrestricted", rec) is True
    assert len(rec.calls) == 1


# ------------------------------------------------------------------ indices and groups


@pytest.mark.parametrize("rows", [[], [0, 0], [3], [-1], [0, 3]])
def test_bad_rows_are_refused(rows):
    rec = Recorder()
    assert check_submatrix(A, HALF, sub(rows, [[0]]), 0, "unrestricted", rec) is False
    assert rec.calls == []


@pytest.mark.parametrize("columns", [[], [[]], [[0], []], [[3]], [[-1]], [[0, 0]], [[0], [0]], [[0, 1], [1, 2]],
                                     [[2], [0, 2]]])
def test_bad_column_groups_are_refused(columns):
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0], columns), 0, "unrestricted", rec) is False
    assert rec.calls == []


# ------------------------------------------------------------------ classes


@pytest.mark.parametrize("inner", ["bogus", "Stochastic", None, "impossible"])
def test_an_unknown_inner_class_is_refused(inner):
    for klass in CLASSES:
        rec = Recorder()
        assert check_submatrix(A, HALF, sub([0], [[0], [1], [2]], inner), 0, klass, rec) is False
        assert rec.calls == []


def test_unrestricted_cell_refuses_a_stochastic_inner_class():
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0], [[0], [1], [2]], "stochastic"), 0, "unrestricted", rec) is False
    assert rec.calls == []


def test_class_pairs_allowed():
    # unrestricted inside both classes; stochastic inside stochastic when the groups cover.
    for klass, inner in [("unrestricted", "unrestricted"), ("stochastic", "unrestricted"),
                         ("stochastic", "stochastic")]:
        rec = Recorder()
        assert check_submatrix(A, HALF, sub([0], [[0], [1, 2]], inner), 0, klass, rec) is True
        assert rec.calls[0][3] == inner


def test_stochastic_inner_class_needs_every_column():
    # groups {0}, {1}: column 2 deleted, the sub-cell's rows need not sum to 1 any more.
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0], [[0], [1]], "stochastic"), 0, "stochastic", rec) is False
    assert rec.calls == []
    # the unrestricted class of the same sub-cell is allowed.
    assert check_submatrix(A, HALF, sub([0], [[0], [1]], "unrestricted"), 0, "stochastic", rec) is True


def test_stochastic_inner_certificate_on_a_column_deleting_subcell_is_refused_by_recheck():
    # row 0 without column 2: (1, 1), simplex distance 1 > 1/2; a true statement about the
    # stochastic sub-cell, but the stochastic class of a column-deleting sub-cell says nothing
    # about A (proofs/oracle_submatrix.md, T2 (c)).
    c = sub([0], [[0], [1]], "stochastic", {"kind": "row-simplex-distance", "row": 0})
    assert not recheck(A, HALF, 2, "stochastic", "impossible", c)
    # covering all columns ((1 + 1, 1/2) = (2, 1/2): distance 3/2 > 1/2): accepted.
    c = sub([0], [[0, 1], [2]], "stochastic", {"kind": "row-simplex-distance", "row": 0})
    assert recheck(A, HALF, 2, "stochastic", "impossible", c)


# ------------------------------------------------------------------ through recheck


def test_row_norm_of_a_subcell_re_checks():
    # row 2 of A has l1 1/8: within eps = 1/2 of 0, so its sub-cell proves nothing at k = 0; row 0
    # (l1 5/2, and 2 after merging columns 0 and 1: (2, 1/2) -> 5/2) does.
    assert recheck(A, HALF, 0, "unrestricted", "impossible", sub([0, 2], [[0, 1], [2]]))
    assert not recheck(A, HALF, 0, "unrestricted", "impossible", sub([2, 0], [[0, 1], [2]]))
    assert recheck(A, HALF, 0, "unrestricted", "impossible",
                   sub([2, 0], [[0, 1], [2]], inner={"kind": "row-norm", "row": 1}))


def _chain(levels):
    """A (levels + 1) x 1 cell [[1], ..., [1]] and a chain of ``levels`` submatrix certificates,
    each dropping the last row, around row-norm of row 0 (|1| > 1/2)."""
    M = [[F(1)] for _ in range(levels + 1)]
    c = ROW_NORM
    for n in range(1, levels + 1):  # the innermost level keeps 1 row of a 2-row cell
        c = sub(list(range(n)), [[0]], inner=c)
    return M, c


def test_sixteen_nested_levels_are_accepted_seventeen_refused():
    M, c = _chain(16)
    assert _nesting(c) == 16
    assert recheck(M, HALF, 0, "unrestricted", "impossible", c)
    M, c = _chain(17)
    assert _nesting(c) == 17
    assert not recheck(M, HALF, 0, "unrestricted", "impossible", c)
    rec = Recorder()
    assert check_submatrix(M, HALF, c, 0, "unrestricted", rec) is False
    assert rec.calls == []


def test_fewer_levels_are_accepted():
    for levels in (1, 2, 5):
        M, c = _chain(levels)
        assert recheck(M, HALF, 0, "unrestricted", "impossible", c)


def test_nesting_counts_only_the_submatrix_kind():
    for kind in ("witness", "zero-not-stochastic", "threshold", "submatrices", "row-norm", "branch-and-bound", ""):
        assert _nesting({"kind": kind, "certificate": sub([0], [[0]])}) == 0
    assert _nesting({"certificate": sub([0], [[0]])}) == 0


def test_nesting_of_a_chain_read_from_json():
    # kinds read from JSON text are new string objects: counted by value, not identity.
    import json

    M, c = _chain(17)
    c = json.loads(json.dumps(c))
    assert _nesting(c) == 17
    assert not recheck(M, HALF, 0, "unrestricted", "impossible", c)
    M, c = _chain(16)
    c = json.loads(json.dumps(c))
    assert _nesting(c) == 16
    assert recheck(M, HALF, 0, "unrestricted", "impossible", c)


@pytest.mark.parametrize("items", [[4], [0, 5], [100]])
def test_indices_past_the_bound_are_refused(items):
    assert _indices(items, 3) is None


def test_rows_or_columns_past_the_cell_are_refused_without_raising():
    rec = Recorder()
    assert check_submatrix(A, HALF, sub([0, 4], [[0]]), 0, "unrestricted", rec) is False
    assert check_submatrix(A, HALF, sub([0], [[0], [5]]), 0, "unrestricted", rec) is False
    assert rec.calls == []


def test_a_one_row_cell():
    # m = 1: keeping the row and deleting a column is smaller.
    rec = Recorder()
    assert check_submatrix([[F(1), F(2)]], HALF, sub([0], [[1]]), 0, "unrestricted", rec) is True
    assert rec.calls[0][0] == [[F(2)]]


# Counts past CPython's small-int cache (256) compare by value, never by identity.
BIG = 300


def test_many_indices_are_read():
    assert _indices(list(range(BIG)), BIG) == list(range(BIG))


def test_many_columns_in_one_group():
    # 1 x 300 cell, one group of all 300 columns: 1 < 300 groups, and every column covered.
    M = [[F(1)] * BIG]
    for inner, klass in (("unrestricted", "unrestricted"), ("stochastic", "stochastic")):
        rec = Recorder()
        assert check_submatrix(M, HALF, sub([0], [list(range(BIG))], inner), 0, klass, rec) is True
        assert rec.calls[0][0] == [[F(BIG)]]


def test_many_columns_in_two_groups_for_the_stochastic_class():
    M = [[F(1)] * BIG]
    rec = Recorder()
    c = sub([0], [list(range(0, BIG, 2)), list(range(1, BIG, 2))], "stochastic")
    assert check_submatrix(M, HALF, c, 0, "stochastic", rec) is True
    assert rec.calls[0][0] == [[F(BIG // 2), F(BIG // 2)]]


def test_a_large_permutation_is_not_smaller():
    rec = Recorder()
    tall = [[F(i)] for i in range(BIG)]
    assert check_submatrix(tall, HALF, sub(list(range(BIG))[::-1], [[0]]), 0, "unrestricted", rec) is False
    wide = [[F(j) for j in range(BIG)]]
    assert check_submatrix(wide, HALF, sub([0], [[j] for j in range(BIG)][::-1]), 0, "unrestricted", rec) is False
    assert rec.calls == []
    # one row or one column fewer is smaller
    assert check_submatrix(tall, HALF, sub(list(range(BIG - 1)), [[0]]), 0, "unrestricted", rec) is True
    assert check_submatrix(wide, HALF, sub([0], [[j] for j in range(BIG - 1)]), 0, "unrestricted", rec) is True


def test_class_names_read_from_json_compare_by_value():
    import json

    # the cell's class and the inner class as new string objects (as read from JSON)
    unrestricted, stochastic = json.loads('["unrestricted", "stochastic"]')
    rec = Recorder()
    # unrestricted cell, stochastic inner: refused
    assert check_submatrix(A, HALF, sub([0], [[0], [1, 2]], stochastic), 0, unrestricted, rec) is False
    # stochastic inner that deletes column 2: refused
    assert check_submatrix(A, HALF, sub([0], [[0], [1]], stochastic), 0, stochastic, rec) is False
    assert rec.calls == []
    # unrestricted inner in an unrestricted cell; stochastic covering inner in a stochastic cell
    assert check_submatrix(A, HALF, sub([0], [[0], [1]], unrestricted), 0, unrestricted, rec) is True
    assert check_submatrix(A, HALF, sub([0], [[0], [1, 2]], stochastic), 0, stochastic, rec) is True
