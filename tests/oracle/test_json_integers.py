"""Integers in certificates (indices, signs, ranks) are JSON integers, read by one helper
(``check_basics.as_int`` / ``as_ints``): a float, a text, a bool or a dict where an integer stands,
or a text such as "12" where a list stands, makes the re-check fail (False), never raise.  Every
certificate kind is tampered this way, and so is the rank k of every re-check."""

from __future__ import annotations

import copy
import json
from fractions import Fraction as F

import pytest

from softrank.oracle import check_threshold, recheck
from softrank.oracle.check_basics import as_int, as_ints
from softrank.oracle.checks import KINDS
from softrank.oracle.search import branch, decide, nerve, thresholds
from softrank.oracle.search.cell import CellCache

BAD_INTS = [1.5, "2", True, {}]
BAD_LISTS = ["12", {"0": 1}]
I3 = [[F(int(i == j)) for j in range(3)] for i in range(3)]
NEAR_I3 = [[F(7, 10) if i == j else F(3, 20) for j in range(3)] for i in range(3)]
CELL = [[F(1, 2), F(0), F(1, 2)], [F(1, 7), F(3, 7), F(3, 7)], [F(2, 5), F(1, 5), F(2, 5)]]
FAR = [[F(2), F(0), F(0)], [F(0), F(1), F(0)], [F(0), F(0), F(1)]]  # row 0 is 1 away from the simplex


def _decided(A, eps, k, klass, kind, **options):
    v = decide(A, eps, k, klass, **options)
    assert v.certificate is not None and v.certificate["kind"] == kind, (kind, v.certificate)
    return A, eps, k, klass, v.verdict, json.loads(json.dumps(v.certificate))


def _cases():
    """(A, eps, k, class, verdict, certificate) for every kind in the re-checker's table."""
    four_by_three = [[F(int(i == j)) for j in range(3)] for i in range(4)]
    three_by_four = [[F(int(i == j)) for j in range(4)] for i in range(3)]
    cases = [
        _decided(CELL, F(2, 5), 1, "unrestricted", "witness"),
        _decided(I3, F(1, 2), 0, "unrestricted", "row-norm"),
        _decided(CELL, F(1, 4), 0, "stochastic", "zero-not-stochastic"),
        _decided(FAR, F(1, 2), 1, "stochastic", "row-simplex-distance"),
        _decided(I3, F(1, 2), 1, "unrestricted", "rank1-signed"),
        _decided(four_by_three, F(1, 10), 2, "unrestricted", "kernel-dual"),
        _decided(three_by_four, F(1, 10), 2, "unrestricted", "cokernel-dual"),
        _decided(CELL, F(2, 5), 1, "stochastic", "rank1-stochastic-dual"),
        _decided(NEAR_I3, F(1, 10), 2, "stochastic", "radon-separation"),
        (I3, F(1, 10), 2, "unrestricted", "impossible",
         {"kind": "decoder", "rows": [0, 1, 2], "W": [["1", "0", "0"], ["0", "1", "0"], ["0", "0", "1"]]}),
        (I3, F(1, 2), 0, "unrestricted", "impossible",
         {"kind": "submatrix", "rows": [0, 2], "columns": [[0], [1, 2]], "class": "unrestricted",
          "certificate": {"kind": "row-norm", "row": 1}}),
    ]
    cert = nerve.lower_bound(NEAR_I3, F(1, 4), 2)
    cases.append((NEAR_I3, F(1, 4), 2, "unrestricted", "impossible", json.loads(json.dumps(cert))))
    out = branch.decide(I3, F(1, 4), 1, "unrestricted", CellCache(I3), 60)
    cases.append((I3, F(1, 4), 1, "unrestricted", out[0], json.loads(json.dumps(out[1]))))
    return cases


CASES = _cases()


def _integer_spots(node, path=(), skip=("derivation",)):
    """Paths to every JSON integer and every list of JSON integers in a certificate."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key not in skip:
                yield from _integer_spots(value, path + (key,), skip)
    elif isinstance(node, list):
        if node and all(isinstance(x, int) and not isinstance(x, bool) for x in node):
            yield path, "list"
        for i, value in enumerate(node):
            yield from _integer_spots(value, path + (i,), skip)
    elif isinstance(node, int) and not isinstance(node, bool):
        yield path, "int"


def _tampered(cert, path, value):
    out = copy.deepcopy(cert)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


def test_every_kind_is_tampered():
    assert {c[5]["kind"] for c in CASES} == set(KINDS)
    for A, eps, k, klass, verdict, cert in CASES:
        assert recheck(A, eps, k, klass, verdict, cert), cert["kind"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[5]["kind"])
def test_a_malformed_integer_fails_the_recheck(case):
    A, eps, k, klass, verdict, cert = case
    spots = list(_integer_spots(cert))
    assert spots or cert["kind"] in ("witness", "zero-not-stochastic", "kernel-dual", "rank1-stochastic-dual")
    step = max(1, len(spots) // 12)  # large certificates (branch and bound): a spread of their integers
    for path, what in spots[::step]:
        for bad in BAD_INTS if what == "int" else BAD_LISTS:
            assert recheck(A, eps, k, klass, verdict, _tampered(cert, path, bad)) is False, (cert["kind"], path, bad)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[5]["kind"])
def test_a_malformed_rank_fails_the_recheck(case):
    A, eps, k, klass, verdict, cert = case
    for bad in BAD_INTS + [float(k), str(k)]:
        assert recheck(A, eps, bad, klass, verdict, cert) is False, (cert["kind"], bad)


def test_columns_given_as_text_are_not_a_list():
    """The text "12" where the sub-cell's column groups stand is not the groups [1, 2]."""
    A, eps, k, klass, verdict, cert = next(c for c in CASES if c[5]["kind"] == "submatrix")
    for bad in ("12", ["12"], [[0], "12"], {"0": [0]}):
        assert recheck(A, eps, k, klass, verdict, dict(cert, columns=bad)) is False, bad
    assert recheck(A, eps, k, klass, verdict, dict(cert, rows="02")) is False


@pytest.mark.parametrize("klass", ["unrestricted", "stochastic"])
def test_threshold_certificates_read_integers_strictly(klass):
    _, certs = thresholds(CELL, klass)
    assert certs
    for cert in certs.values():
        cert = json.loads(json.dumps(cert))
        assert check_threshold(CELL, cert)
        for path, what in _integer_spots(cert):
            for bad in BAD_INTS if what == "int" else BAD_LISTS:
                assert check_threshold(CELL, _tampered(cert, path, bad)) is False, (cert["kind"], path, bad)
        for bad in BAD_INTS:
            assert check_threshold(CELL, cert, bad) is False


def test_the_helper():
    assert as_int(3) == 3 and as_int(-1) == -1 and as_ints([0, 2]) == [0, 2] and as_ints(()) == []
    for bad in BAD_INTS + [None, [1], float("inf")]:
        with pytest.raises(ValueError):
            as_int(bad)
    for bad in BAD_LISTS + [3, None, [1, "2"], [True]]:
        with pytest.raises(ValueError):
            as_ints(bad)
