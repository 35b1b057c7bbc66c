"""Lemma G (kind ``subspace``, validated/subspace_certificate.py through ``replay.rules``) end to end:
certificates from the untrusted producer (fastpath/subspace.py) are proved; tampered ones whose
claim is false (above the exact r_eps of the oracle, above rank A, above min(m, N)) or whose data
break the lemma are never proved; malformed data are UNRESOLVED with a reason and never raise;
and on small rational cells every proved subspace lower end is at most the oracle's exact upper end.

Each well-formed tampered certificate is also evaluated here in exact rationals (``lemma_holds``:
the conditions of proofs/lemma_G_expanding_subspace.md, G2, for the exact rational A), so a
tampered certificate whose claim stays true is only required to be refused when the lemma itself
does not hold for its data.
"""

from __future__ import annotations

import itertools
import time
from fractions import Fraction as F

import numpy as np
import pytest

from helpers import block_logits, exact_enclosure, rowsoftmax_float, softmax_enclosure_of
from softrank.fastpath.bracket.matrix import bracket_matrix
from softrank.fastpath.subspace import (coordinate_bound, needs_cover, pivot_basis, subspace_certificate,
                                        svd_subspace_search)
from softrank.fastpath.studies.tighten_cells import cut_cell
from softrank.oracle import profile
from softrank.replay.record import LowerCertificate
from softrank.replay.rules import Claim, check_lower_certificate
from softrank.validated.outcome import Outcome

#: the 6 x 6 cell (/ 1024) of the brief: columns 1..5 expand by more than 1/4 (r >= 5) while the
#: decoders of the fast path reach 3 only
SINK6 = [[1020, 1, 0, 3, 0, 0], [598, 409, 2, 1, 2, 12], [617, 8, 339, 23, 3, 34], [444, 3, 19, 549, 7, 2],
         [684, 4, 4, 10, 314, 8], [537, 30, 25, 4, 34, 394]]
EPS = (F(3, 20), F(1, 4), F(7, 20))


# ----------------------------------------------------------------------------------------------
# rational cells, the rule, the exact reference


class Cell:
    """A rational cell Z / den (binary64-exact entries) with a zero-radius enclosure and the
    oracle's exact bracket per eps (cached)."""

    def __init__(self, z, den: int):
        self.Z = np.asarray(z, dtype=np.int64)
        self.den = den
        self.A = self.Z / den
        self.Af = [[F(int(x), den) for x in row] for row in self.Z]
        self.enc = exact_enclosure(self.A)
        self._brackets: dict[F, tuple[int, int]] = {}

    @property
    def n(self) -> int:
        return self.A.shape[1]

    def bracket(self, eps: F) -> tuple[int, int]:
        """(lower, upper) on r_eps(A), proved by the oracle; eps >= 1: B = 0 is within eps of a
        row-stochastic A (||A||_inf = 1), so r = 0."""
        eps = F(eps)
        if eps not in self._brackets:
            if eps >= 1:
                assert all(sum(row) == 1 for row in self.Af)
                self._brackets[eps] = (0, 0)
            else:
                p = profile(self.Af, eps, search=False)
                self._brackets[eps] = (p.lower, p.upper)
        return self._brackets[eps]


_CELL_CACHE: dict = {}


def cell_of(z, den: int) -> Cell:
    """One Cell per matrix in this module (the oracle's brackets are shared between tests)."""
    key = (np.asarray(z, dtype=np.int64).tobytes(), np.shape(z), den)
    if key not in _CELL_CACHE:
        _CELL_CACHE[key] = Cell(z, den)
    return _CELL_CACHE[key]


def data_of(cert) -> dict:
    return {k: v for k, v in cert.as_record().items() if k not in ("kind", "lower")}


def check(enc, eps, lower, data) -> "Check":  # noqa: F821
    claim = Claim(enclosure=enc, chi=None, eps=F(eps), strict=False, shape=enc.a_mid.shape,
                  cert=LowerCertificate(kind="subspace", lower=lower, data=data))
    return check_lower_certificate(claim)


def lemma_holds(Af, eps: F, data: dict) -> bool:
    """G2 of proofs/lemma_G_expanding_subspace.md in exact rationals (well-formed data only):
    every uncovered row of W has l1 norm <= 1 and num_k > eps den_k for every covered k."""
    W, cover, u, v = data["W"], data["cover"], data["u"], data["v"]
    n, p = W.shape
    m = len(Af)
    Wq = [[F(x) for x in row] for row in W.tolist()]
    covered = set(cover.tolist())
    for l in range(n):
        if l not in covered and sum(abs(x) for x in Wq[l]) > 1:
            return False
    for idx, k in enumerate(cover.tolist()):
        uk = [F(x) for x in u[idx].tolist()]
        vk = [F(x) for x in v[idx].tolist()]
        r = [sum(uk[i] * Af[i][j] for i in range(m) if uk[i]) - vk[j] for j in range(n)]  # A^T u_k - v_k
        g = [sum(Wq[j][c] * r[j] for j in range(n)) for c in range(p)]
        num = vk[k] - sum(abs(vk[l]) for l in range(n) if l != k) - sum(abs(x) for x in g)
        den = sum(abs(x) for x in uk)
        if not num > F(eps) * den:
            return False
    return True


class Tally:
    """The tampered certificates whose refusal was asserted."""

    def __init__(self):
        self.labels: list[str] = []
        self.outcomes: dict[str, int] = {}
        self.false_claims = 0  # refused with a claim above the oracle's upper end
        self.valid_proved = 0  # tampered, still valid per the exact lemma with a true claim, and proved

    def add(self, label, chk):
        self.labels.append(label)
        key = chk.outcome.value if not chk.reason.startswith("malformed certificate") else "malformed"
        self.outcomes[key] = self.outcomes.get(key, 0) + 1


def judge(cell: Cell, eps, lower, data, label, tally: Tally):
    """A well-formed tampered certificate: refused whenever its claim is false (then the exact
    lemma must fail too) or the exact lemma fails; a mathematically valid one may be proved."""
    chk = check(cell.enc, eps, lower, data)
    _, upper = cell.bracket(F(eps))
    holds = lemma_holds(cell.Af, F(eps), data)
    if lower > upper:
        assert not holds, f"{label}: the exact lemma G would prove r >= {lower} > {upper} (oracle)"
        tally.false_claims += 1
    if lower > upper or not holds:
        assert chk.outcome is not Outcome.PROVED, (label, chk)
        tally.add(label, chk)
    elif chk.outcome is Outcome.PROVED:
        tally.valid_proved += 1
    return chk


def judge_malformed(enc, eps, lower, data, label, tally: Tally):
    chk = check(enc, eps, lower, data)
    assert chk.outcome is Outcome.UNRESOLVED, (label, chk)
    assert chk.reason.startswith("malformed certificate"), (label, chk.reason)
    tally.add(label, chk)
    return chk


def proved_cert(cell: Cell, eps, basis):
    c = subspace_certificate(cell.A, basis, float(eps))
    assert c is not None
    chk = check(cell.enc, eps, c.lower, data_of(c))
    assert chk.outcome is Outcome.PROVED, chk
    return c


# ----------------------------------------------------------------------------------------------
# 1. proved cases


@pytest.mark.parametrize("name", ["blocks-svd", "blocks-coord", "diagonal-svd", "sink-coord", "wide-svd", "tall-svd"])
def test_producer_certificates_on_softmax_operators_are_proved(name):
    rng = np.random.default_rng(0)
    if name.startswith("blocks"):
        h, _, _ = block_logits([3, 3, 2], 9.0)
    elif name == "diagonal-svd":
        h = rng.normal(size=(6, 6)) + 3 * np.eye(6)
    elif name == "sink-coord":
        h = np.zeros((6, 6))
        h[:, 0] = 4
        h += 3.5 * np.eye(6) + 0.3 * np.random.default_rng(2).normal(size=(6, 6))
    elif name == "wide-svd":
        h = 3 * rng.normal(size=(5, 7))
    else:
        h = 3 * rng.normal(size=(7, 5))
    a = rowsoftmax_float(h)
    enc = softmax_enclosure_of(h)
    eps = F(1, 4)
    if name == "blocks-coord":
        cert, want = subspace_certificate(a, np.eye(8)[:, [0, 3, 6]], 0.25), 3  # one column per block
    elif name == "sink-coord":
        cert, want = subspace_certificate(a, np.eye(6)[:, 1:], 0.25), 5  # every column but the sink
    else:
        cert, want = svd_subspace_search(a, 0.25, 0, min(a.shape)), None
    assert cert is not None
    assert want is None or cert.lower == want
    chk = check(enc, eps, cert.lower, data_of(cert))
    assert chk.outcome is Outcome.PROVED and chk.lemma == "proofs/lemma_G_expanding_subspace.md", chk
    assert F(chk.value) > 0
    if name.startswith("blocks"):  # rank A <= 3 exactly (rows of a block are equal): the lower end is exact
        assert cert.lower == 3


def test_the_sink_cell_proves_five_where_decoders_reach_three():
    cell = cell_of(SINK6, 1024)
    eps = F(1, 4)
    cert = proved_cert(cell, eps, np.eye(6)[:, 1:6])
    assert cert.lower == 5
    assert cell.bracket(eps) == (5, 5)  # the oracle: r_{1/4} = 5 exactly
    b = bracket_matrix(cell.A, [0.25])[0.25]
    print(f"sink cell at 1/4: subspace 5, fast path lower {b.lower} (by kind {b.lower_by_kind}), oracle r = 5")
    assert b.lower_by_kind.get("decoder", 0) <= 5


# ----------------------------------------------------------------------------------------------
# 2. tampered certificates

#: cells with the exact r_{1/4} from the oracle and a coordinate subspace of that dimension that
#: expands by more than 1/4 (found by a seeded search; the oracle re-derives r in the test)
TAMPER_CELLS = [
    ("sink6", SINK6, 1024, (1, 2, 3, 4, 5), 5),
    ("c5a", [[33, 21, 0, 2, 8], [0, 33, 0, 22, 9], [0, 0, 38, 1, 25], [0, 31, 0, 33, 0], [0, 1, 0, 30, 33]], 64,
     (0, 1, 2, 3), 4),
    ("c5b", [[38, 0, 0, 26, 0], [27, 37, 0, 0, 0], [0, 1, 42, 0, 21], [10, 1, 16, 37, 0], [4, 1, 22, 0, 37]], 64,
     (0, 1, 2, 4), 4),
    ("c4", [[33, 0, 1, 30], [2, 55, 0, 7], [0, 0, 61, 3], [27, 3, 5, 29]], 64, (0, 1, 2), 3),
    ("c3", [[63, 1, 0], [2, 36, 26], [1, 29, 34]], 64, (0, 1), 2),
    ("c2", [[5, 3], [3, 5]], 8, (0,), 1),
]


@pytest.fixture(scope="module")
def tamper_bases():
    """(name, cell, base certificates valid at eps 1/4: the coordinate one with p = r and the SVD one)."""
    out = []
    eps = F(1, 4)
    for name, z, den, cols, r in TAMPER_CELLS:
        cell = cell_of(z, den)
        assert cell.bracket(eps) == (r, r), name
        certs = [proved_cert(cell, eps, np.eye(cell.n)[:, list(cols)])]
        svd = svd_subspace_search(cell.A, 0.25, 0, cell.n)
        if svd is not None and check(cell.enc, eps, svd.lower, data_of(svd)).proved:
            certs.append(svd)
        out.append((name, cell, certs))
    return out


def _pad(cell: Cell, data: dict, rng, variant: str) -> dict:
    """Claim p + 1: a new pivot j, W' = [W with row j zeroed, a random column with 1 at j and 0
    at the old pivots]; duals per ``variant``."""
    W, piv, cover, u, v = data["W"], data["pivots"], data["cover"], data["u"], data["v"]
    n, p = W.shape
    j = int(rng.choice(np.setdiff1d(np.arange(n), piv)))
    col = rng.uniform(-1, 1, n) * rng.choice([0.0, 0.1, 1.0])
    col[piv] = 0.0
    col[j] = 1.0
    W2 = np.hstack([W, col[:, None]])
    W2[j, :p] = 0.0
    piv2 = np.append(piv, j).astype(np.int64)
    need = needs_cover(W2, piv2)
    cover2 = np.array(sorted(set(cover.tolist()) | set(need.tolist())), dtype=np.int64)
    m = cell.A.shape[0]
    if variant == "lp":  # the best duals (the LP of the producer), which the producer itself would refuse
        rows = [coordinate_bound(cell.A @ W2, W2, k) for k in cover2.tolist()]
        u2 = np.array([r[1] for r in rows])
        v2 = np.array([r[2] for r in rows])
    else:
        old = {k: i for i, k in enumerate(cover.tolist())}
        u2 = np.zeros((cover2.size, m))
        v2 = np.zeros((cover2.size, n))
        for i, k in enumerate(cover2.tolist()):
            if k in old:
                u2[i], v2[i] = u[old[k]], v[old[k]]
            elif variant == "zero":  # u = 0, v = e_k: num_k = 1 - ||W_k||_1 <= 0 = eps den_k
                v2[i, k] = 1.0
            else:  # "copy": the first old row's duals
                u2[i], v2[i] = u[0], v[0]
    return {"W": W2, "pivots": piv2, "cover": cover2, "u": u2, "v": v2}


def _perturbations(data: dict, rng):
    """(label, data) for entry-level tampering that keeps the data well-formed."""
    W, piv, cover, u, v = data["W"], data["pivots"], data["cover"], data["u"], data["v"]
    n, p = W.shape
    diag = (np.arange(cover.size), cover)

    def with_(**kw):
        d = dict(data)
        d.update(kw)
        return d

    def vdiag(f):
        v2 = v.copy()
        v2[diag] = f(v2[diag])
        return v2

    out = [
        ("u*2", with_(u=u * 2)), ("u/2", with_(u=u / 2)), ("u*-1", with_(u=-u)), ("u*(1-2^-30)", with_(u=u * (1 - 2.0 ** -30))),
        ("u*(1+2^-52)", with_(u=u * (1 + 2.0 ** -52))), ("v*-1", with_(v=-v)), ("v*2", with_(v=v * 2)),
        ("u,v*4 (valid stays valid)", with_(u=u * 4, v=v * 4)), ("u,v*2^-3", with_(u=u / 8, v=v / 8)),
        ("v_kk*(1+2^-40)", with_(v=vdiag(lambda x: x * (1 + 2.0 ** -40)))),
        ("v_kk*(1-2^-20)", with_(v=vdiag(lambda x: x * (1 - 2.0 ** -20)))),
        ("v_kk*0.9", with_(v=vdiag(lambda x: x * 0.9))), ("v_kk=0", with_(v=vdiag(lambda x: 0 * x))),
        ("v_kk*-1", with_(v=vdiag(lambda x: -x))),
        ("u=0", with_(u=np.zeros_like(u))), ("v=0", with_(v=np.zeros_like(v))),
        ("u rows reversed", with_(u=u[::-1].copy())), ("v rows reversed", with_(v=v[::-1].copy())),
        ("cover reversed", with_(cover=cover[::-1].copy())),
        ("u random noise 1e-3", with_(u=u + 1e-3 * rng.normal(size=u.shape))),
        ("v random noise 1e-3", with_(v=v + 1e-3 * rng.normal(size=v.shape))),
        ("u rounded to 2^-8", with_(u=np.round(u * 256) / 256)), ("v rounded to 2^-8", with_(v=np.round(v * 256) / 256)),
        ("u, v sign flip of one row", with_(u=np.vstack([-u[:1], u[1:]]), v=np.vstack([-v[:1], v[1:]]))),
    ]
    if cover.size > 1:
        sw = cover.copy()
        sw[[0, 1]] = sw[[1, 0]]
        out.append(("two cover entries swapped", with_(cover=sw)))
        out.append(("u rows swapped", with_(u=u[[1, 0] + list(range(2, u.shape[0]))])))
    free = np.setdiff1d(np.arange(n), piv)
    for l in free.tolist()[:2]:
        for c in range(min(p, 2)):
            for delta in (0.5, -0.5, 2.0 ** -30):
                W2 = W.copy()
                W2[l, c] += delta
                out.append((f"W[{l},{c}] += {delta}", with_(W=W2)))
        W2 = W.copy()
        W2[l] = -W2[l] if np.any(W2[l]) else np.ones(p) / p
        out.append((f"W row {l} flipped/filled", with_(W=W2)))
    if p > 1:
        W2 = W.copy()
        W2[free] *= 3  # a non-pivot part scaled (W[pivots] = I kept)
        out.append(("W non-pivot rows *3", with_(W=W2)))
    return out


def test_tampered_certificates_are_never_accepted(tamper_bases):
    rng = np.random.default_rng(20261201)
    tally = Tally()
    eps = F(1, 4)
    for name, cell, certs in tamper_bases:
        for ci, cert in enumerate(certs):
            base = data_of(cert)
            p = cert.lower
            label = f"{name}/{ci}"
            assert lemma_holds(cell.Af, eps, base), label  # the untampered certificate is valid
            # claim p + 1 with padded data: false whenever p = r
            for t in range(4):
                for variant in ("lp", "zero", "copy"):
                    padded = _pad(cell, base, rng, variant)
                    chk = judge(cell, eps, p + 1, padded, f"{label} pad {variant} #{t}", tally)
                    if variant == "zero" and p + 1 > cell.bracket(eps)[1]:
                        assert chk.outcome is Outcome.REFUTED  # num_k = 0 = eps den_k: strict, certainly fails
                    if variant == "lp":  # the near-optimal false certificates, tampered further
                        for plabel, pdata in _perturbations(padded, rng)[:12]:
                            judge(cell, eps, p + 1, pdata, f"{label} pad lp #{t} {plabel}", tally)
            # entry tampering at the same claim (true: only refused where the exact lemma fails)
            for plabel, pdata in _perturbations(base, rng):
                judge(cell, eps, p, pdata, f"{label} {plabel}", tally)
            # the same certificate at a larger eps
            for e2 in (F(3, 10), F(7, 20), F(1, 2), F(3, 4), F(1), F(5, 4), F(2)):
                judge(cell, e2, p, base, f"{label} at eps {e2}", tally)
    print(f"tampered and refused: {len(tally.labels)} ({tally.false_claims} with a claim above the exact r, the "
          f"others invalid per the exact lemma); outcomes {tally.outcomes}; "
          f"tampered but still valid (true claim) and proved: {tally.valid_proved}")
    assert len(tally.labels) >= 100 and tally.false_claims >= 100


def _malformations(data: dict, n: int, m: int):
    W, piv, cover, u, v = data["W"], data["pivots"], data["cover"], data["u"], data["v"]
    p = W.shape[1]
    i64 = np.int64

    def with_(**kw):
        d = dict(data)
        d.update(kw)
        return d

    def put(x, idx, val):
        x = x.copy()
        x[idx] = val
        return x

    free = np.setdiff1d(np.arange(n), piv)
    out = [
        ("u NaN", p, with_(u=put(u, (0, 0), np.nan))), ("u inf", p, with_(u=put(u, (0, m - 1), np.inf))),
        ("v NaN", p, with_(v=put(v, (0, 0), np.nan))), ("v -inf", p, with_(v=put(v, (-1, n - 1), -np.inf))),
        ("u float32", p, with_(u=u.astype(np.float32))), ("v int64", p, with_(v=v.astype(np.int64))),
        ("u object", p, with_(u=u.astype(object))), ("u complex", p, with_(u=u.astype(np.complex128))),
        ("W float32", p, with_(W=W.astype(np.float32))), ("W object", p, with_(W=W.astype(object))),
        ("W big-endian", p, with_(W=W.astype(">f8"))), ("W list", p, with_(W=W.tolist())),
        ("W 1-d", p, with_(W=W.ravel())), ("u 3-d", p, with_(u=u[None])), ("u bool", p, with_(u=u != 0)),
        ("pivots int32", p, with_(pivots=piv.astype(np.int32))), ("pivots uint64", p, with_(pivots=piv.astype(np.uint64))),
        ("pivots float", p, with_(pivots=piv.astype(np.float64))), ("pivots list", p, with_(pivots=piv.tolist())),
        ("pivots 2-d", p, with_(pivots=piv[None])), ("pivots empty", p, with_(pivots=np.zeros(0, i64))),
        ("cover float", p, with_(cover=cover.astype(np.float64))), ("cover empty", p, with_(cover=np.zeros(0, i64))),
        ("cover 0-d", p, with_(cover=np.int64(cover[0]))),
        ("u transposed", p, with_(u=np.ascontiguousarray(u.T)) if u.shape[0] != u.shape[1] else with_(u=u[:, :-1])),
        ("u extra row", p, with_(u=np.vstack([u, u[:1]]))), ("v missing a column", p, with_(v=v[:, :-1])),
        ("v extra row", p, with_(v=np.vstack([v, v[:1]]))),
        ("missing u", p, {k: x for k, x in data.items() if k != "u"}),
        ("missing W", p, {k: x for k, x in data.items() if k != "W"}),
        ("v None", p, with_(v=None)),
        ("lower p + 1, data of p", p + 1, data), ("lower 0", 0, data), ("lower True", True, data),
        ("lower float", float(p), data), ("lower str", str(p), data), ("lower -1", -1, data),
        ("lower above min(m, N), W with a repeated pivot", n + 1,
         with_(W=np.hstack([np.eye(n), np.eye(n)[:, :1]]), pivots=np.append(np.arange(n), 0).astype(i64),
               cover=np.arange(n, dtype=i64), u=np.zeros((n, m)), v=np.eye(n))),
        ("W extra column", p, with_(W=np.hstack([W, W[:, :1]]))),
        ("W[pivots] = I + 2^-52", p, with_(W=put(W, (piv[0], 0), 1 + 2.0 ** -52))),
        ("W[pivots] has an off-diagonal 2^-1074", p, with_(W=put(W, (piv[0], p - 1 if p > 1 else 0),
                                                              5e-324 if p > 1 else 1 - 2.0 ** -53))),
        ("W pivot entry NaN", p, with_(W=put(W, (piv[0], 0), np.nan))),
        ("pivot -1", p, with_(pivots=put(piv, 0, -1))), ("pivot N", p, with_(pivots=put(piv, 0, n))),
        ("cover index N", p, with_(cover=put(cover, -1, n))), ("cover index -1", p, with_(cover=put(cover, 0, -1))),
        ("cover repeated", p, with_(cover=put(cover, -1, cover[0])) if cover.size > 1 else
         with_(cover=np.array([cover[0], cover[0]]), u=np.vstack([u, u]), v=np.vstack([v, v]))),
    ]
    if free.size:
        j = int(free[0])
        out.append(("W non-pivot inf", p, with_(W=put(W, (j, 0), np.inf))))
        out.append(("pivot moved to a non-identity row", p, with_(pivots=np.sort(put(piv, 0, j)))))
    if p > 1:
        out.append(("pivots repeated", p, with_(pivots=put(piv, 1, piv[0]))))
        out.append(("pivots permuted", p, with_(pivots=piv[::-1].copy())))
    # cover missing a pivot (with that pivot's dual rows dropped)
    keep = cover != piv[0]
    if keep.any():
        out.append(("cover missing a pivot", p, with_(cover=cover[keep], u=u[keep], v=v[keep])))
    return out


def test_malformed_certificates_are_unresolved_with_a_reason_and_never_raise(tamper_bases):
    tally = Tally()
    eps = F(1, 4)
    for name, cell, certs in tamper_bases:
        m, n = cell.A.shape
        for ci, cert in enumerate(certs):
            for label, lower, data in _malformations(data_of(cert), n, m):
                judge_malformed(cell.enc, eps, lower, data, f"{name}/{ci} {label}", tally)
    print(f"malformed certificates refused: {len(tally.labels)}")
    assert len(tally.labels) >= 100


def test_a_false_claim_on_a_softmax_operator_is_never_proved():
    """rowsoftmax of block logits has rank <= 3 exactly (the rows of a block are equal), so every
    claim of 4 is false: padded producer certificates (best LP duals included) are refused."""
    h, _, _ = block_logits([3, 3, 2], 9.0)
    a = rowsoftmax_float(h)
    enc = softmax_enclosure_of(h)
    cert = svd_subspace_search(a, 0.25, 0, 8)
    assert cert is not None and cert.lower == 3 and check(enc, F(1, 4), 3, data_of(cert)).proved

    class _Op:  # _pad needs .A only
        A = a

    rng = np.random.default_rng(3)
    count = 0
    for t in range(6):
        for variant in ("lp", "zero", "copy"):
            padded = _pad(_Op, data_of(cert), rng, variant)
            for eps in (F(1, 4), F(1, 10), F(1, 100)):
                chk = check(enc, eps, 4, padded)
                assert chk.outcome is not Outcome.PROVED, (t, variant, eps, chk)
                count += 1
    assert count == 54


@pytest.mark.parametrize("spread", [[1.0, 2.0 ** -53, 2.0 ** -53], [0.5, 0.25, 0.25 + 2.0 ** -52],
                                    [0.5 + 2.0 ** -53, 0.5 + 2.0 ** -53, 0.0], [-0.5, 0.5, -2.0 ** -52]])
def test_an_uncovered_row_just_above_l1_norm_one_is_refused(spread):
    """The uncovered rows are summed exactly: 1 + 2^-52 is refused even where a float sum gives 1."""
    cell = cell_of(SINK6, 1024)
    eps = F(1, 4)
    cert = proved_cert(cell, eps, np.eye(6)[:, 1:6])
    data = data_of(cert)
    assert 0 not in data["cover"].tolist()
    W = data["W"].copy()
    W[0] = 0.0
    W[0, :len(spread)] = spread
    assert sum(F(x) for x in np.abs(W[0]).tolist()) == 1 + F(2) ** -52
    bad = dict(data, W=W)
    chk = check(cell.enc, eps, 5, bad)
    assert chk.outcome is Outcome.UNRESOLVED and chk.reason.startswith("row 0 of W has ||W_l||_1 > 1"), chk
    assert not lemma_holds(cell.Af, eps, bad)
    # exactly 1 passes this test (the duals then decide)
    W[0] = 0.0
    W[0, :3] = [0.5, -0.25, 0.25]
    ok = check(cell.enc, eps, 5, dict(data, W=W))
    assert "row 0" not in ok.reason


# ----------------------------------------------------------------------------------------------
# 4. strictness: num_k = eps den_k is not enough; subspaces that do not expand are refused


def test_equality_num_equals_eps_den_is_refuted_and_just_above_is_proved():
    """A = [[5, 3], [3, 5]] / 8: with u = I, v = A and W = I, num_k = 5/8 - 3/8 = 1/4 = eps den_k
    exactly; r_{1/4}(A) = 1 (B = 1/2 * ones is at distance 1/4), so the claim 2 is false.  At
    eps = 1/4 - 2^-40 the same data give num_k - eps den_k = 2^-40 > 0 and r = 2."""
    cell = Cell([[5, 3], [3, 5]], 8)
    data = {"W": np.eye(2), "pivots": np.arange(2, dtype=np.int64), "cover": np.arange(2, dtype=np.int64),
            "u": np.eye(2), "v": cell.A.copy()}
    eq = check(cell.enc, F(1, 4), 2, data)
    assert cell.bracket(F(1, 4)) == (1, 1)
    assert eq.outcome is Outcome.REFUTED, eq
    assert not lemma_holds(cell.Af, F(1, 4), data)
    below = F(1, 4) - F(1, 2 ** 40)
    assert cell.bracket(below) == (2, 2)
    just = check(cell.enc, below, 2, data)
    assert just.outcome is Outcome.PROVED and 0 < F(just.value) <= F(1, 2 ** 40), just
    # scaled by powers of two: equality stays equality
    for s in (2.0 ** -10, 4.0, 2.0 ** 30):
        assert check(cell.enc, F(1, 4), 2, dict(data, u=data["u"] * s, v=data["v"] * s)).outcome is Outcome.REFUTED
    # den_k = 0: u = 0, v = e_k gives num_k = 0 = eps * 0
    zero = dict(data, u=np.zeros((2, 2)), v=np.eye(2))
    for e in (F(1, 4), F(1, 10 ** 6)):
        assert check(cell.enc, e, 2, zero).outcome is Outcome.REFUTED
    # the LP duals of the producer for the whole space (the least ratio is exactly 1/4 at y = (1, -1))
    rows = [coordinate_bound(cell.A, np.eye(2), k) for k in (0, 1)]
    assert all(abs(r[0] - 0.25) < 1e-12 for r in rows)
    lp = dict(data, u=np.array([r[1] for r in rows]), v=np.array([r[2] for r in rows]))
    assert check(cell.enc, F(1, 4), 2, lp).outcome is not Outcome.PROVED
    assert subspace_certificate(cell.A, np.eye(2), 0.25) is None  # the producer refuses it too


@pytest.mark.parametrize("name", [t[0] for t in TAMPER_CELLS])
def test_subspaces_that_do_not_expand_are_refuted_or_unresolved(name, tamper_bases):
    """Every coordinate subspace of dimension r + 1 (and the SVD one), with the producer's best
    duals (``coordinate_bound``) for every coordinate that needs one: the LP value is <= eps at
    some coordinate, and the certificate is REFUTED or UNRESOLVED, never PROVED."""
    cell = next(c for n_, c, _ in tamper_bases if n_ == name)
    eps = F(1, 4)
    r = cell.bracket(eps)[1]
    n = cell.n
    if r == n:
        pytest.skip("r = N")
    vt = np.linalg.svd(cell.A)[2]
    bases = [np.eye(n)[:, list(T)] for T in itertools.combinations(range(n), r + 1)] + [vt[:r + 1].T]
    outcomes = {}
    for basis in bases:
        data, least = _duals_for(cell, basis)
        assert least <= 0.25 * (1 + 1e-9)  # G1: no (r + 1)-dim subspace expands
        chk = check(cell.enc, eps, r + 1, data)
        assert chk.outcome in (Outcome.REFUTED, Outcome.UNRESOLVED), chk
        assert not lemma_holds(cell.Af, eps, data)
        outcomes[chk.outcome.value] = outcomes.get(chk.outcome.value, 0) + 1
    print(f"{name}: {len(bases)} non-expanding subspaces of dimension {r + 1}: {outcomes}")


# ----------------------------------------------------------------------------------------------
# 3. cross-check against the exact oracle


def _random_cell(rng, n: int, grid: int):
    x = rng.exponential(size=(n, n)) ** 3
    x += rng.uniform(0, 2) * np.eye(n) * x.sum(axis=1, keepdims=True)
    return _round_rows(x, grid)


def _sink_cell(rng, n: int, grid: int):
    x = rng.uniform(0, 0.05, size=(n, n))
    x[:, 0] += rng.uniform(0.3, 1.0, size=n)
    x += np.diag(rng.uniform(0.2, 0.7, size=n))
    x[0, 1:] *= 0.01
    return _round_rows(x, grid)


def _round_rows(x, grid: int):
    x = x / x.sum(axis=1, keepdims=True)
    z = np.rint(x * grid).astype(np.int64)
    z[np.arange(z.shape[0]), z.argmax(axis=1)] += grid - z.sum(axis=1)
    return z


def _structured_cell(rng, n: int):
    """cut_cell (fastpath/studies/tighten_cells.py: random rows and columns, / 1024) of rowsoftmax of
    structured 12 x 12 logits: blocks, a band, or a sink column, with noise."""
    kind = int(rng.integers(3))
    big = 12
    if kind == 0:
        h = block_logits([4, 4, 2, 2], 3.0, rng)[0]
    elif kind == 1:
        i = np.arange(big)
        h = -0.8 * np.abs(i[:, None] - i[None, :]).astype(float)
    else:
        h = np.zeros((big, big))
        h[:, 0] = 3.0
        h += 2.5 * np.eye(big)
    h = h + 0.5 * rng.normal(size=h.shape)
    return cut_cell(rowsoftmax_float(h), n, rng)


def _cells(count: int, seed: int):
    """(Z, den, eps) triples: the sink cell of the brief, then random / sink-like / structured
    cells of size 5 and 6 with entries multiples of 1/64 or 1/1024, eps cycling over EPS."""
    rng = np.random.default_rng(seed)
    out = [(np.array(SINK6), 1024, F(1, 4))]
    i = 0
    while len(out) < count:
        n = 5 + i % 2
        grid = 64 if (i // 2) % 2 == 0 else 1024
        kind = i % 3
        if kind == 0:
            z, den = _random_cell(rng, n, grid), grid
        elif kind == 1:
            z, den = _sink_cell(rng, n, grid), grid
        else:
            z, den = _structured_cell(rng, n), 1024
        out.append((z, den, EPS[i % 3]))
        i += 1
    return out


def _exact_witness_upper(cell: Cell, witness, eps: F):
    """The rank of the fast path's float witness when ||A - X Y^T||_inf <= eps holds exactly."""
    if witness is None:
        return None
    X = [[F(x) for x in row] for row in witness.X.tolist()]
    Y = [[F(x) for x in row] for row in witness.Y.tolist()]
    k = witness.X.shape[1]
    for i, row in enumerate(cell.Af):
        if sum(abs(a - sum(X[i][t] * Y[j][t] for t in range(k))) for j, a in enumerate(row)) > eps:
            return None
    return k


def cross_check(cells) -> dict:
    stats = {"cells": 0, "certificates": 0, "proved": 0, "contradictions": 0, "beat_decoder": 0, "beat_fast": 0,
             "closed_by_subspace": 0, "oracle_exact": 0}
    for z, den, eps in cells:
        cell = cell_of(z, den)
        lo, hi = cell.bracket(eps)
        b = bracket_matrix(cell.A, [float(eps)])[float(eps)]
        w_hi = _exact_witness_upper(cell, b.witness, eps)
        upper = hi if w_hi is None else min(hi, w_hi)
        stats["cells"] += 1
        stats["oracle_exact"] += lo == upper
        n = cell.n
        vt = np.linalg.svd(cell.A)[2]
        bases = [np.eye(n)[:, list(T)] for q in range(1, n + 1) for T in itertools.combinations(range(n), q)]
        bases += [vt[:q].T for q in range(1, n + 1)]
        certs = [subspace_certificate(cell.A, basis, float(eps)) for basis in bases]
        certs.append(svd_subspace_search(cell.A, float(eps), 0, n, vt=vt))
        best = 0
        for c in certs:
            if c is None:
                continue
            chk = check(cell.enc, eps, c.lower, data_of(c))
            stats["certificates"] += 1
            if chk.outcome is Outcome.PROVED:
                stats["proved"] += 1
                best = max(best, c.lower)
                if c.lower > upper:
                    stats["contradictions"] += 1
                    print(f"CONTRADICTION: subspace proves {c.lower} > exact upper {upper} on {z.tolist()} / {den} "
                          f"at eps {eps}")
        dec = b.lower_by_kind.get("decoder", 0)
        stats["beat_decoder"] += best > dec
        stats["beat_fast"] += best > b.lower
        stats["closed_by_subspace"] += best > b.lower and best == upper
    return stats


def _duals_for(cell: Cell, basis):
    """Certificate data for range(basis) with the producer's best duals at every coordinate that
    needs one (whether or not the subspace expands), and the least LP value."""
    W, piv = pivot_basis(basis)
    cover = needs_cover(W, piv)
    rows = [coordinate_bound(cell.A @ W, W, k) for k in cover.tolist()]
    data = {"W": W, "pivots": piv.astype(np.int64), "cover": cover.astype(np.int64),
            "u": np.array([x[1] for x in rows]), "v": np.array([x[2] for x in rows])}
    return data, min(x[0] for x in rows)


def test_non_expanding_subspaces_of_oracle_cells_are_never_proved():
    """On the default cross-check cells whose r_eps the oracle decides (r < N): every coordinate
    subspace of dimension r + 1, the SVD one and three random ones, with the best duals, are
    REFUTED or UNRESOLVED (G1: none of them can expand by more than eps)."""
    rng = np.random.default_rng(11)
    count, outcomes = 0, {}
    for z, den, eps in _cells(15, seed=1):
        cell = cell_of(z, den)
        lo, hi = cell.bracket(eps)
        n = cell.n
        if lo != hi or hi >= n:
            continue
        r = hi
        vt = np.linalg.svd(cell.A)[2]
        bases = [np.eye(n)[:, list(T)] for T in itertools.combinations(range(n), r + 1)]
        bases += [vt[:r + 1].T] + [rng.normal(size=(n, r + 1)) for _ in range(3)]
        for basis in bases:
            data, least = _duals_for(cell, basis)
            assert least <= float(eps) * (1 + 1e-9)
            chk = check(cell.enc, eps, r + 1, data)
            assert chk.outcome in (Outcome.REFUTED, Outcome.UNRESOLVED), chk
            assert not lemma_holds(cell.Af, eps, data)
            outcomes[chk.outcome.value] = outcomes.get(chk.outcome.value, 0) + 1
            count += 1
    print(f"non-expanding subspaces of dimension r + 1 on oracle cells: {count}, {outcomes}")
    assert count >= 30


def test_proved_subspace_lower_ends_never_exceed_the_exact_rank():
    t0 = time.perf_counter()
    stats = cross_check(_cells(15, seed=1))
    print(f"oracle cross-check (default): {stats}, {time.perf_counter() - t0:.1f} s")
    assert stats["contradictions"] == 0
    assert stats["cells"] == 15 and stats["proved"] >= 15


@pytest.mark.slow
def test_proved_subspace_lower_ends_never_exceed_the_exact_rank_sweep():
    t0 = time.perf_counter()
    stats = cross_check(_cells(180, seed=2))
    print(f"oracle cross-check (sweep): {stats}, {time.perf_counter() - t0:.1f} s")
    assert stats["contradictions"] == 0
    assert stats["cells"] == 180
