"""The independent re-check rejects every tampered, misapplied or incomplete certificate."""

from __future__ import annotations

import copy
import random
from fractions import Fraction as F

import pytest
from softrank.oracle import check_threshold, recheck
from softrank.oracle.search import decide, thresholds

Q = lambda rows: [[F(x) for x in r] for r in rows]
ID3 = Q([[1, 0, 0], [0, 1, 0], [0, 0, 1]])
ID4 = Q([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]])
CELL = Q([[F(1, 2), 0, F(1, 2)], [F(1, 7), F(3, 7), F(3, 7)], [F(2, 5), F(1, 5), F(2, 5)]])


def _bump(x: str, by=F(1, 10 ** 12)) -> str:
    q = F(x) + by
    return f"{q.numerator}/{q.denominator}"


def cases():
    """(name, A, eps, k, class, verdict) covering every certificate kind."""
    return [
        ("witness-k1", CELL, F(2, 5), 1, "unrestricted", "feasible"),
        ("witness-stoch-k2", CELL, F(2, 5), 2, "stochastic", "feasible"),
        ("row-norm", CELL, F(2, 5), 0, "unrestricted", "impossible"),
        ("zero-not-stochastic", CELL, F(2, 5), 0, "stochastic", "impossible"),
        ("rank1-signed", ID3, F(1, 2), 1, "unrestricted", "impossible"),
        ("kernel-dual", ID3, F(1, 2), 2, "unrestricted", "impossible"),
        ("cokernel-dual", Q([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]]), F(1, 2), 2, "unrestricted", "impossible"),
        ("rank1-stochastic-dual", CELL, F(2, 5), 1, "stochastic", "impossible"),
        ("row-simplex-distance", Q([[2, 0], [0, 1]]), F(1, 2), 1, "stochastic", "impossible"),
        ("radon-separation", ID3, F(1, 2), 2, "stochastic", "impossible"),
        ("submatrix", ID4, F(1, 2), 2, "unrestricted", "impossible"),
        ("submatrix-stochastic", ID4, F(1, 2), 2, "stochastic", "impossible"),
        ("decoder", DUP, F(1, 2), 3, "unrestricted", "impossible"),
        ("decoder-stochastic", DUP, F(1, 2), 3, "stochastic", "impossible"),
    ]


# four unit rows and two averages of them, six columns: k = 3 has no direct reduction
DUP = Q([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0],
         [F(1, 2), F(1, 2), 0, 0, 0, 0], [0, 0, F(1, 2), F(1, 2), 0, 0]])


@pytest.mark.parametrize("case", cases(), ids=lambda c: c[0])
def test_genuine_certificate_rechecks_and_tampering_fails(case):
    name, A, eps, k, klass, verdict = case
    v = decide(A, eps, k, klass, decoders=not name.startswith("submatrix"))
    assert v.verdict == verdict and v.recheck()
    assert (v.certificate["kind"] == "decoder") == name.startswith("decoder")
    cert = v.certificate
    # 1. sharpness: the certificate proves its inequality for eps below its own bound, not at it
    bound = _certified_bound(A, cert)
    if bound is not None:
        if verdict == "feasible":  # proves error <= eps: fails just below the error
            assert bound == 0 or not recheck(A, bound * F(999, 1000), k, klass, verdict, cert)
            assert recheck(A, bound if bound > 0 else eps, k, klass, verdict, cert)
        else:  # proves "something > eps": fails at eps = bound, holds just below
            assert not recheck(A, bound, k, klass, verdict, cert)
            assert recheck(A, bound * F(999, 1000), k, klass, verdict, cert)
    # 2. certificates resting on equalities break under any perturbation of a number
    if cert["kind"] in ("witness", "rank1-signed"):
        nums = list(_numbers(cert))
        rng = random.Random(1)
        for path in rng.sample(nums, min(25, len(nums))):
            bad = copy.deepcopy(cert)
            _set(bad, path, _bump(_get(bad, path)))
            if cert["kind"] == "rank1-signed" and path[-2] == "gamma":
                continue  # gamma only bounds |lambda| from above: raising it keeps a valid proof or breaks it
            assert not recheck(A, eps, k, klass, verdict, bad) or cert["kind"] == "witness" and bound is not None \
                and bound < eps, path
    # zero duals prove nothing
    if verdict == "impossible" and cert["kind"] not in ("row-norm", "zero-not-stochastic", "row-simplex-distance"):
        zero = copy.deepcopy(cert)
        for path in _numbers(cert):
            _set(zero, path, "0")
        assert not recheck(A, eps, k, klass, verdict, zero)
    # 3. the wrong verdict, a wrong class, a larger k, garbage
    other = "impossible" if verdict == "feasible" else "feasible"
    assert not recheck(A, eps, k, klass, other, cert)
    assert not recheck(A, eps, k, klass, verdict, {"kind": "nonsense"})
    assert not recheck(A, eps, k, klass, verdict, None)
    assert not recheck(A, eps, k, "doubly", verdict, cert)
    if verdict == "impossible" and cert["kind"] != "row-simplex-distance":
        assert not recheck(A, eps, k + 1, klass, verdict, cert)
    if cert["kind"] in ("zero-not-stochastic", "rank1-stochastic-dual", "row-simplex-distance", "radon-separation") \
            or cert.get("class") == "stochastic":
        assert not recheck(A, eps, k, "unrestricted", verdict, cert)  # stochastic-only arguments


def test_witness_of_too_high_rank_rejected():
    v = decide(CELL, F(2, 5), 2, "stochastic")
    assert not recheck(CELL, F(2, 5), 1, "stochastic", "feasible", v.certificate)


def test_stochastic_witness_must_be_stochastic():
    v = decide(CELL, F(2, 5), 1, "unrestricted")  # x v^T, not stochastic
    assert v.verdict == "feasible"
    assert not recheck(CELL, F(2, 5), 1, "stochastic", "feasible", v.certificate)


def test_signed_certificate_coverage_and_free_rows():
    v = decide(ID3, F(1, 2), 1, prune=False)
    cert = v.certificate
    assert len(cert["patterns"]) == 4
    dropped = copy.deepcopy(cert)
    dropped["patterns"].pop()
    assert not recheck(ID3, F(1, 2), 1, "unrestricted", "impossible", dropped)
    # claiming a row is non-free when ||a_i||_1 <= eps
    assert not recheck(ID3, F(1), 1, "unrestricted", "impossible", cert)
    # a pattern whose pivot row sign is -1
    flipped = copy.deepcopy(cert)
    flipped["patterns"][0]["signs"] = [-s for s in flipped["patterns"][0]["signs"]]
    assert not recheck(ID3, F(1, 2), 1, "unrestricted", "impossible", flipped)
    # an all-zero dual (no strict inequality)
    zero = copy.deepcopy(cert)
    for p in zero["patterns"]:
        p["lambda"] = [["0"] * 3 for _ in p["lambda"]]
        p["gamma"] = ["0"] * len(p["gamma"])
    assert not recheck(ID3, F(1, 2), 1, "unrestricted", "impossible", zero)


def test_cokernel_certificate_needs_every_orthant():
    A = Q([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 1]])
    cert = decide(A, F(1, 2), 2).certificate
    assert cert["kind"] == "cokernel-dual"
    short = copy.deepcopy(cert)
    short["orthants"].pop()
    assert not recheck(A, F(1, 2), 2, "unrestricted", "impossible", short)
    big = copy.deepcopy(cert)
    big["orthants"][0]["w"] = [_bump(x, F(2)) for x in big["orthants"][0]["w"]]  # ||w||_inf > 1
    assert not recheck(A, F(1, 2), 2, "unrestricted", "impossible", big)


def test_threshold_certificates_tamper():
    A = Q([[2, 1, 0], [1, 3, 1], [0, 1, 4]])
    _vals, certs = thresholds(A)
    for k, c in certs.items():
        assert check_threshold(A, c)
        low = dict(c, value=_bump(c["value"], F(-1, 10 ** 9)))
        high = dict(c, value=_bump(c["value"], F(1, 10 ** 9)))
        assert not check_threshold(A, low)
        assert not check_threshold(A, high)
        assert not check_threshold(A, c, k=k + 1) or c["kind"] == "zero"  # a threshold speaks for its own k
    # rank A = 3: the "zero" threshold (B = A) holds at k = 3, not at k = 2
    assert check_threshold(A, certs[3]) and not check_threshold(A, certs[3], k=2)


# ---------------------------------------------------------------- helpers

def _certified_bound(A, cert):
    """The number the certificate compares eps with (None where there is no single one)."""
    from softrank.oracle import checks as rc

    kind = cert["kind"]
    if kind == "witness":
        return max(sum(abs(a - b) for a, b in zip(ra, rb)) for ra, rb in zip(A, _product(cert)))
    if kind == "row-norm":
        return sum(abs(x) for x in A[cert["row"]])
    if kind == "row-simplex-distance":
        return rc.simplex_distance(A[cert["row"]])
    if kind == "kernel-dual":
        bounds = [rc.kernel_bound(A, j, [F(x) for x in y]) for j, y in enumerate(cert["y"])]
        return min(n / d for n, d in bounds)
    if kind == "cokernel-dual":
        return min(rc.cokernel_bound(A, e["signs"], [F(x) for x in e["w"]]) for e in cert["orthants"])
    if kind == "rank1-stochastic-dual":
        n, d = rc.rank1_stochastic_bound(A, [[F(x) for x in r] for r in cert["lambda"]])
        return n / d
    if kind == "decoder":  # the sum reaches 1 at eps = (1 - residual) / max_j ||W_j||_1
        from softrank.oracle.decoder_checks import decoder_value

        W = [[F(x) for x in r] for r in cert["W"]]
        residual = decoder_value(A, F(0), cert["rows"], W)
        return (1 - residual) / max(sum(abs(x) for x in r) for r in W)
    return None


def _product(cert):
    X = [[F(x) for x in r] for r in cert["X"]]
    Y = [[F(x) for x in r] for r in cert["Y"]]
    return [[sum((a * b for a, b in zip(xr, yr)), F(0)) for yr in Y] for xr in X]


def _numbers(obj, path=()):
    if isinstance(obj, dict):
        for key, val in obj.items():
            if key in ("kind", "derivation", "threshold", "row_l1", "distance", "rows", "signs"):
                continue
            yield from _numbers(val, path + (key,))
    elif isinstance(obj, list):
        for i, val in enumerate(obj):
            yield from _numbers(val, path + (i,))
    elif isinstance(obj, str):
        yield path


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _set(obj, path, value):
    for p in path[:-1]:
        obj = obj[p]
    obj[path[-1]] = value


def _covers_by_enumeration(rows, patterns) -> bool:
    """The definition of coverage, over all 2^(len(rows) - 1) sign vectors (small cases only)."""
    import itertools

    for tail in itertools.product((1, -1), repeat=len(rows) - 1):
        sigma = dict(zip(rows, (1,) + tail))
        if not any(all(sigma[i] == s for i, s in p.items()) for p in patterns):
            return False
    return True


def test_pattern_coverage_agrees_with_enumeration():
    """The case split accepts exactly the pattern sets that cover every sign vector (random
    pattern sets on up to 7 rows, pivot row +1; prefix trees, their subsets and random subsets
    of rows), or refuses within its branch budget; it never accepts a set that misses one."""
    from softrank.oracle.checks import patterns_cover

    rng = random.Random(7)
    accepted = 0
    for _ in range(1500):
        n = rng.randint(1, 7)
        rows = rng.sample(range(10), n)
        pats = []
        for _ in range(rng.randint(0, 12)):
            chosen = [rows[0]] + [i for i in rows[1:] if rng.random() < 0.5]
            pats.append({i: (1 if i == rows[0] else rng.choice((1, -1))) for i in chosen})
        if rng.random() < 0.5:  # a complete tree of prefixes, then perhaps one leaf dropped
            pats, stack = [], [{rows[0]: 1}]
            while stack:
                p = stack.pop()
                if len(p) == n or rng.random() < 0.3:
                    pats.append(p)
                else:
                    nxt = rows[len(p)]
                    stack += [{**p, nxt: 1}, {**p, nxt: -1}]
            if rng.random() < 0.3:
                pats.pop(rng.randrange(len(pats)))
        truth = _covers_by_enumeration(rows, pats)
        got = patterns_cover(rows, pats)
        assert not got or truth  # never accepts a set that misses a sign vector
        if truth and all(len(p) <= n for p in pats) and _is_prefix_tree(rows, pats):
            assert got  # the producer's form is always accepted
        accepted += got
    assert accepted > 300


def _is_prefix_tree(rows, pats) -> bool:
    return all(set(p) == set(rows[:len(p)]) for p in pats)


def test_pattern_coverage_on_deep_trees_is_fast():
    """40 rows: a comb of refuted prefixes (one leaf per depth plus the last pair) is checked in
    about 80 branches, where listing the sign vectors would take 2^39; dropping any leaf or
    flipping one sign is refused.  A pair of patterns on the pivot and one far row covers
    everything and is accepted without splitting on the rows between."""
    import time

    from softrank.oracle.checks import patterns_cover

    rows = list(range(40))
    pats = []
    for d in range(1, 40):  # prefix (+1, ..., +1, -1) of length d + 1
        pats.append({**{i: 1 for i in range(d)}, d: -1})
    pats.append({i: 1 for i in range(40)})
    t0 = time.perf_counter()
    assert patterns_cover(rows, pats)
    assert time.perf_counter() - t0 < 1.0
    for j in range(len(pats)):
        assert not patterns_cover(rows, pats[:j] + pats[j + 1:])
    flipped = [dict(p) for p in pats]
    flipped[10][11] = 1  # (+^11, -) becomes +^12, a prefix of the all-plus leaf: (+^11, -) is open
    assert not patterns_cover(rows, flipped)
    assert patterns_cover(rows, [{0: 1, 39: 1}, {0: 1, 39: -1}])
    assert not patterns_cover(rows, [{0: 1, 39: 1}, {0: 1, 38: -1}])
    assert not patterns_cover(rows, [])


def test_orthant_lists_are_counted_not_enumerated():
    """cokernel-dual and radon-separation with a 60-row cell and a handful of entries: refused at
    once (the 2^59 orthants are never listed)."""
    import time

    from softrank.oracle.checks import _orthants_covered
    from softrank.oracle.radon_checks import check_radon

    t0 = time.perf_counter()
    assert not _orthants_covered(60, [[1] * 60, [1] * 59 + [-1]])
    A = [[F(1)] + [F(0)] * 2 for _ in range(60)]
    assert not check_radon(A, F(1, 2), {"splits": []})
    assert time.perf_counter() - t0 < 1.0
    assert _orthants_covered(2, [[1, 1], [1, -1], [-1, 1]])
    assert not _orthants_covered(2, [[1, 1], [-1, 1], [-1, -1]])
    assert not _orthants_covered(3, [[1, 1, 1], [1, 1, -1], [1, -1, 1], [1, 1, 1]])


def test_numbers_as_text_are_bounded_before_they_are_read():
    """A certificate number (or eps) as text with a huge exponent or too many characters is refused
    at once (``Fraction("1e-100000000")`` alone ran past 60 s); ordinary text still reads."""
    import time

    cert = {"kind": "row-norm", "row": 0}
    for eps in ("1/4", "0.25", "1e-3", "25e-2", " 1/4 ", "-2"):
        assert recheck(CELL, eps, 0, "unrestricted", "impossible", cert), eps
    t = time.perf_counter()
    for eps in ("1e-999999999", "1e-1_000_000_000", "1E-99999", "1/1" + "0" * 10 ** 6, "1" * 20_000):
        assert not recheck(CELL, eps, 0, "unrestricted", "impossible", cert), eps[:20]
    lam = decide(CELL, F(2, 5), 1, "stochastic").certificate
    bad = copy.deepcopy(lam)
    bad["lambda"][0][0] = "1e999999999"
    assert not recheck(CELL, F(2, 5), 1, "stochastic", "impossible", bad)
    assert not check_threshold(CELL, {"kind": "norm", "value": "1e-999999999", "k": 0})
    assert time.perf_counter() - t < 5


def test_infinite_json_numbers_are_refused_not_raised():
    """``json.loads("1e400")`` is inf: as an index or a rank it is a refusal, not an OverflowError."""
    assert not recheck(CELL, F(2, 5), 0, "unrestricted", "impossible", {"kind": "row-norm", "row": float("inf")})
    assert not check_threshold(CELL, {"kind": "norm", "value": "1", "k": float("inf")})


def test_every_kind_names_proof_files_that_exist():
    """The re-checker's tables name, for each kind, the proof files it rests on (as replay's rules do)."""
    from pathlib import Path

    from softrank.oracle.checks import KINDS
    from softrank.oracle.threshold_checks import THRESHOLD_KINDS

    root = Path(__file__).resolve().parents[2]
    proofs = [(name, kind.proofs) for name, kind in KINDS.items()] + [(n, p) for n, (_, p) in THRESHOLD_KINDS.items()]
    assert len(KINDS) == 13 and len(THRESHOLD_KINDS) == 6
    assert {kind.verdict for kind in KINDS.values()} == {"feasible", "impossible"}
    for name, files in proofs:
        assert files, name
        for proof in files:
            assert proof.startswith("proofs/") and proof.endswith(".md") and (root / proof).is_file(), (name, proof)
