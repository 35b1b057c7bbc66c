"""Nerve cycles (proofs/oracle_nerve_cycle.md): the search finds checked certificates, they prove
ranks that no sub-cell proves, they never meet a witness, and tampered ones are refused."""

from __future__ import annotations

import copy
import json
import random
from fractions import Fraction as F

from softrank.oracle import recheck
from softrank.oracle.search import decide
from softrank.oracle.search import nerve
from softrank.oracle.search import submatrix as sm
from softrank.oracle.search.cell import CellCache
from softrank.oracle.nerve_checks import check_nerve_cycle

# A 7 x 7 cell cut from a SmolLM2-135M block (rows renormalised, multiples of 1/1024).
SMOL = [[F(v, 1024) for v in row] for row in (
    [504, 35, 296, 153, 25, 0, 11], [373, 13, 251, 217, 117, 11, 42], [466, 8, 169, 184, 130, 4, 63],
    [146, 81, 114, 108, 175, 172, 228], [325, 24, 101, 95, 125, 53, 301], [624, 11, 145, 82, 54, 10, 98],
    [440, 2, 107, 150, 115, 10, 200])]


def identity_like(n, diag=F(7, 10)):
    off = (1 - diag) / (n - 1)
    return [[diag if i == j else off for j in range(n)] for i in range(n)]


def rand_cell(rng, m, n):
    A = []
    for _ in range(m):
        w = [rng.randint(0, 9) for _ in range(n)]
        w[rng.randrange(n)] += rng.randint(0, 30)
        if not any(w):
            w[0] = 1
        A.append([F(x, sum(w)) for x in w])
    return A, F(rng.randint(4, 40), 80)


def test_identity_like_cells_reach_full_rank():
    for n in (3, 4, 5):
        A = identity_like(n)
        cert = nerve.lower_bound(A, F(1, 4), n - 1)
        assert cert is not None and cert["kind"] == "nerve-cycle"
        cert = json.loads(json.dumps(cert))
        assert recheck(A, F(1, 4), n - 1, "unrestricted", "impossible", cert)
        assert recheck(A, F(1, 4), n - 1, "stochastic", "impossible", cert)
        assert recheck(A, F(1, 4), 1, "unrestricted", "impossible", cert)  # and every smaller rank
        assert not recheck(A, F(1, 4), n, "unrestricted", "impossible", cert)  # not a larger one


def test_a_cycle_on_more_rows_than_any_decoder():
    """On the SmolLM2 cell at eps 1/4 no 3-row or 3-column sub-cell proves rank 2 impossible,
    but a cycle of triangles on 5 rows does; decide reports it."""
    eps = F(1, 4)
    assert sm.lower_bound(SMOL, eps, 2, "unrestricted", CellCache(SMOL)) is None
    cert = nerve.lower_bound(SMOL, eps, 2)
    assert cert is not None
    rows = {r for s in cert["simplices"] for r in s["rows"]}
    assert len(rows) > 3 and len(cert["simplices"]) > 4  # not the 4 orthants of one row triple
    v = decide(SMOL, eps, 2, search=False)
    assert v.verdict == "impossible" and v.reduction == "nerve-cycle" and v.rechecked
    assert v.proof == "proofs/oracle_nerve_cycle.md"
    assert decide(SMOL, eps, 2, search=False, nerves=False).verdict == "outside-scope"


def test_nerve_bounds_never_meet_a_witness():
    """Wherever the exact witness search finds B of rank k within eps, the nerve search finds no
    cycle at k (and wherever it finds one, the cell's exact threshold eps*_k is above eps)."""
    rng = random.Random(3)
    found = feasible = 0
    for _ in range(22):
        m = rng.choice([3, 4, 5])
        A, eps = rand_cell(rng, m, rng.choice([3, 4, 5]))
        for k in range(1, m):
            cert = nerve.lower_bound(A, eps, k)
            v = decide(A, eps, k, nerves=False, subcells=False)
            if v.verdict == "feasible":
                feasible += 1
                assert cert is None, (A, eps, k)
            if cert is not None:
                found += 1
                assert recheck(A, eps, k, "unrestricted", "impossible", json.loads(json.dumps(cert)))
                assert v.verdict in ("impossible", "outside-scope"), (A, eps, k)
    assert found >= 10 and feasible >= 10, (found, feasible)


def _tampered(A, eps, cert):
    """Variants of an honest certificate, each breaking one condition of the theorem."""
    out = []
    simp = cert["simplices"]
    for i, s in enumerate(simp):
        for l in range(1, len(s["signs"])):  # flip one sign: a face loses its partner
            c = copy.deepcopy(cert)
            c["simplices"][i]["signs"][l] *= -1
            out.append(c)
        c = copy.deepcopy(cert)  # first sign -1 (not normalised)
        c["simplices"][i]["signs"] = [-x for x in s["signs"]]
        out.append(c)
        c = copy.deepcopy(cert)  # drop one member: the cycle opens
        del c["simplices"][i]
        out.append(c)
        c = copy.deepcopy(cert)  # a member twice
        c["simplices"].append(copy.deepcopy(s))
        out.append(c)
        c = copy.deepcopy(cert)  # the point outside a cone
        c["simplices"][i]["y"] = [str(-F(x)) for x in s["y"]]
        out.append(c)
        c = copy.deepcopy(cert)
        c["simplices"][i]["y"] = ["0"] * len(s["y"])
        out.append(c)
        c = copy.deepcopy(cert)  # rows out of order / repeated / out of range
        c["simplices"][i]["rows"] = list(reversed(s["rows"]))
        out.append(c)
        c = copy.deepcopy(cert)
        c["simplices"][i]["rows"][-1] = c["simplices"][i]["rows"][0]
        out.append(c)
        c = copy.deepcopy(cert)
        c["simplices"][i]["rows"][-1] = len(A)
        out.append(c)
        c = copy.deepcopy(cert)  # a short point, a dropped vertex
        c["simplices"][i]["y"] = s["y"][:-1]
        out.append(c)
        c = copy.deepcopy(cert)
        c["simplices"][i]["rows"] = s["rows"][:-1]
        c["simplices"][i]["signs"] = s["signs"][:-1]
        out.append(c)
        c = copy.deepcopy(cert)  # a point on the column where the first row is lightest
        j = min(range(len(A[0])), key=lambda j: A[s["rows"][0]][j])
        c["simplices"][i]["y"] = ["0"] * len(A[0])
        c["simplices"][i]["y"][j] = str(10 ** 6)
        out.append(c)
    c = copy.deepcopy(cert)
    c["simplices"] = []
    out.append(c)
    c = copy.deepcopy(cert)
    c["simplices"] = simp + [copy.deepcopy(s) for s in simp]  # every member twice: even alternating
    out.append(c)
    for bad in (None, "x", 3, [{}], [{"rows": [0], "signs": [1], "y": ["1"] * len(A[0])}]):
        c = copy.deepcopy(cert)
        c["simplices"] = bad
        out.append(c)
    return out


def test_tampered_certificates_are_refused():
    cases = [(identity_like(4), F(1, 4), 3), (identity_like(5), F(1, 4), 4), (SMOL, F(1, 4), 2)]
    total = 0
    for A, eps, k in cases:
        cert = json.loads(json.dumps(nerve.lower_bound(A, eps, k)))
        assert recheck(A, eps, k, "unrestricted", "impossible", cert)
        assert not recheck(A, eps, k + 1, "unrestricted", "impossible", cert)  # a claim above d
        assert not recheck(A, F(1, 1), k, "unrestricted", "impossible", cert)  # a larger eps
        for bad in _tampered(A, eps, cert):
            total += 1
            assert not recheck(A, eps, k, "unrestricted", "impossible", bad), bad
            assert not recheck(A, eps, k, "stochastic", "impossible", bad)
    assert total >= 100


def test_the_checker_refuses_a_sphere_with_an_even_alternating_count():
    """The octahedron on rows 0, 1, 2 of a 3 x 3 identity-like cell is a cycle; its 4 members
    alternate once.  Replacing the alternating member by a non-alternating copy of another
    orientation breaks condition 2 (and the cycle), and the checker says no."""
    A, eps = identity_like(3), F(1, 4)
    cert = nerve.lower_bound(A, eps, 2)
    assert cert is not None and check_nerve_cycle(A, eps, cert, 2, "unrestricted")
    alt = [s for s in cert["simplices"] if all(a != b for a, b in zip(s["signs"], s["signs"][1:]))]
    assert len(alt) % 2 == 1
    c = copy.deepcopy(cert)
    c["simplices"] = [s for s in c["simplices"] if s not in alt]
    assert not check_nerve_cycle(A, eps, c, 2, "unrestricted")


def test_a_boundary_is_a_cycle_with_an_even_alternating_count_and_is_refused():
    """The faces of one signed simplex form a mod-2 cycle whose alternating count is always even
    (w^d vanishes on boundaries); only the parity condition refuses it."""
    A, eps = identity_like(4), F(1, 4)
    y = ["1", "1", "1", "0"]  # in the cones of rows 0, 1, 2 with sign +1
    faces = [{"rows": [0, 1], "signs": [1, 1], "y": y}, {"rows": [0, 2], "signs": [1, 1], "y": y},
             {"rows": [1, 2], "signs": [1, 1], "y": y}]
    cert = {"kind": "nerve-cycle", "simplices": faces}
    assert not check_nerve_cycle(A, eps, cert, 1, "unrestricted")
    assert not recheck(A, eps, 1, "unrestricted", "impossible", cert)
    # one edge with alternating signs instead: still a loop through rows 0, 1, 2 (faces are row
    # orbits), now with one alternating edge: a valid proof of r >= 2 (true: this A has r = 4)
    odd = copy.deepcopy(cert)
    odd["simplices"][0] = {"rows": [0, 1], "signs": [1, -1], "y": ["1", "-1", "0", "0"]}
    assert check_nerve_cycle(A, eps, odd, 1, "unrestricted")
    assert not check_nerve_cycle(A, eps, odd, 2, "unrestricted")  # a 1-cycle says nothing at rank 2
    # an honest 1-cycle on the same rows: both patterns of the pair (0, 1)
    honest = {"kind": "nerve-cycle", "simplices": [faces[0], odd["simplices"][0]]}
    assert check_nerve_cycle(A, eps, honest, 1, "unrestricted")
