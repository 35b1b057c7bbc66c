"""``decide`` and ``profile``: exact verdicts on small cells, each with a re-checked certificate
(untrusted search; the re-check is the trusted ``softrank.oracle.recheck``).

A cell is (A rational m x N, eps > 0 rational, rank budget k >= 0, class).  ``decide`` answers
``feasible`` (a rational B of rank <= k in the class with ||A - B||_inf <= eps exists: the
certificate is B = X Y^T), ``impossible`` (a dual certificate excludes every such B) or
``outside-scope`` (no reduction applies and no witness was found: nothing is claimed).
Every certificate is re-checked by ``softrank.oracle.checks`` before it is returned; a failing
re-check raises ``CertificateRejected`` (that would be a bug, never a verdict).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from softrank.exact.rational import ZERO, as_matrix, fmt, fmt_mat, parse_rational, rank_factor
from softrank.oracle.checks import check_witness, recheck
from softrank.oracle.search import branch, nerve, routes, submatrix
from softrank.oracle.search import reductions as red
from softrank.oracle.search import witness as wit
from softrank.oracle.search.cell import CellCache, CertificateRejected
from softrank.oracle.threshold_checks import check_threshold
from softrank.errors import InputError

CLASSES = ("unrestricted", "stochastic")

PROOF = {
    "k>=rank": "proofs/oracle_k_ge_rank.md",
    "k=0": "proofs/oracle_k0.md",
    "k=1 unrestricted": "proofs/oracle_k1_unrestricted.md",
    "k=N-1": "proofs/oracle_kN_minus_1.md",
    "k=m-1": "proofs/oracle_km_minus_1.md",
    "k=1 stochastic": "proofs/oracle_k1_stochastic.md",
    "k=m-1 stochastic": "proofs/oracle_radon_stochastic.md",
    "submatrix": "proofs/oracle_submatrix.md",
    "nerve-cycle": "proofs/oracle_nerve_cycle.md",
    "decoder": "proofs/lemma_D_contractive_decoder.md",
    "branch-and-bound": "proofs/oracle_branch_bound.md",
    "stochastic rows": "proofs/oracle_stochastic_rows.md",
    "witness": "proofs/oracle_witness.md",
    "none": "",
}


@dataclass
class Verdict:
    verdict: str  # "feasible" | "impossible" | "outside-scope"
    certificate: dict | None
    k: int
    klass: str
    eps: Fraction
    reduction: str
    A: list = field(repr=False, default_factory=list)
    rechecked: bool = False
    note: str = ""

    @property
    def proof(self) -> str:
        return PROOF.get(self.reduction, "")

    def recheck(self) -> bool:
        """Re-check the certificate exactly against the cell (independent of how it was found)."""
        return recheck(self.A, self.eps, self.k, self.klass, self.verdict, self.certificate)

    def to_json(self) -> dict:
        out = {
            "verdict": self.verdict,
            "k": self.k,
            "class": self.klass,
            "eps": fmt(self.eps),
            "m": len(self.A),
            "N": len(self.A[0]) if self.A else 0,
            "reduction": self.reduction,
            "proof": self.proof,
            "certificate": self.certificate,
            "recheck": self.rechecked,
        }
        if self.note:
            out["note"] = self.note
        return out


def _cell(A, eps, k, klass):
    A = as_matrix(A)
    eps = parse_rational(eps, "input", "eps")
    if not eps > 0:
        raise InputError("input", "eps", f"eps must be > 0, got {fmt(eps)}")
    if isinstance(k, bool) or not isinstance(k, int):
        raise InputError("input", "k", f"rank k must be an integer, got {k!r}")
    if k < 0:
        raise InputError("input", "k", f"rank k must be >= 0, got {k}")
    if klass not in CLASSES:
        raise InputError("input", "class", f"class must be one of {', '.join(CLASSES)}, got {klass!r}")
    return A, eps, k, klass


def _finish(A, eps, k, klass, verdict, cert, reduction, note="") -> Verdict:
    v = Verdict(verdict, cert, k, klass, eps, reduction, A=A, note=note)
    if not v.recheck():
        raise CertificateRejected(f"{reduction} ({PROOF.get(reduction, '')}): the {verdict} certificate does not "
                                  f"re-check (k={k}, {klass})")
    v.rechecked = verdict != "outside-scope"
    return v


def _witness_arg(witness, A):
    """A user witness: a matrix B, or a pair (X, Y) with B = X Y^T."""
    if isinstance(witness, tuple) and len(witness) == 2:
        X, Y = witness
        return red.witness_certificate(as_matrix(X, "witness", "X") if X and X[0] else X,
                                       as_matrix(Y, "witness", "Y") if Y and Y[0] else Y,
                                       construction="given")
    return red.witness_from_matrix(as_matrix(witness, "witness", "B"), construction="given")


def decide(A, eps, k, klass="unrestricted", *, witness=None, search=True, method="auto", prune=True,
           cache: CellCache | None = None, subcells=True, search_budget=None, nerves=True,
           decoders=True) -> Verdict:
    """Exact verdict for the cell (A, eps, k, klass), with a re-checked certificate.

    ``A``: list of rows of Fraction / int / "p/q" strings, or an ``fmpq_mat``.  ``eps`` > 0.
    ``witness``: optional explicit B (matrix) or (X, Y); if it re-checks, the cell is feasible.
    ``search``: try the witness search of ``softrank.oracle.search.witness`` when no reduction applies.
    ``method``: LP route, "auto" | "highs" | "simplex" (see ``softrank.oracle.search.lp.solve``).
    ``prune``: depth-first pruning of sign patterns at k = 1 (unrestricted).
    ``subcells``: try the lower bounds of sub-cells (``softrank.oracle.search.submatrix``) before
    answering outside-scope.  ``decoders``: a contractive decoder of more than k rows
    (``softrank.oracle.search.decoder``, Lemma D), tried right after the direct reductions.  ``nerves``: then a mod-2 cycle of signed row simplices
    (``softrank.oracle.search.nerve``; at most 12 rows).  ``search_budget``: seconds for the branch and
    bound over factor boxes (``softrank.oracle.search.branch``), tried last; None or 0: not tried.
    """
    A, eps, k, klass = _cell(A, eps, k, klass)
    cell = cache if cache is not None and cache.A == A else CellCache(A, method, prune)

    if witness is not None:
        cert = _witness_arg(witness, A)
        if check_witness(A, eps, k, klass, cert):
            return _finish(A, eps, k, klass, "feasible", cert, "witness")
    out = routes.direct(A, eps, k, klass, cell)
    if out is not None:
        return _finish(A, eps, k, klass, *out)
    if decoders and k < cell.m:
        cert = cell.decoder(eps)
        if cert is not None and len(cert["rows"]) > k:
            return _finish(A, eps, k, klass, "impossible", cert, "decoder")
    if search:
        found = wit.search(A, eps, k, klass, cell.method)
        if found is not None:
            X, Y = found
            cert = red.witness_certificate(X, Y, construction="fixed row space (witness search)")
            return _finish(A, eps, k, klass, "feasible", cert, "witness")
    if search:
        found = wit.search_polished(A, eps, k, klass, cell.method)
        if found is not None:
            cert = red.witness_certificate(*found, construction="alternating fits (witness search)")
            return _finish(A, eps, k, klass, "feasible", cert, "witness")
    if subcells:
        cert = submatrix.lower_bound(A, eps, k, klass, cell, decoders)
        if cert is not None:
            return _finish(A, eps, k, klass, "impossible", cert, cert["kind"])
    if nerves:
        cert = nerve.lower_bound(A, eps, k, klass, cell)
        if cert is not None:
            return _finish(A, eps, k, klass, "impossible", cert, "nerve-cycle")
    if search_budget:
        out = branch.decide(A, eps, k, klass, cell, search_budget)
        if out is not None:
            return _finish(A, eps, k, klass, *out)
    return _finish(A, eps, k, klass, "outside-scope", None, "none",
                   note="no exact reduction covers this (k, class), no sub-cell bound and no witness was found"
                        + (" (branch and bound ran out of budget)" if search_budget else ""))


@dataclass
class Profile:
    """Exact bracket lower <= r_eps(A) <= upper; ``rank`` = r_eps(A) when they meet, else None.

    ``thresholds``: k -> eps*_k (exact Fraction) for each k whose threshold an LP (or a closed
    form) gives.  Iterating yields (lower, upper, rank, thresholds)."""

    lower: int | None
    upper: int | None
    rank: int | None
    thresholds: dict
    klass: str = "unrestricted"
    eps: Fraction = ZERO
    decisions: list = field(default_factory=list)
    threshold_certificates: dict = field(default_factory=dict)
    note: str = ""

    def __iter__(self):
        return iter((self.lower, self.upper, self.rank, self.thresholds))

    def to_json(self, certificates: bool = True) -> dict:
        out = {
            "lower": self.lower,
            "upper": self.upper,
            "rank": self.rank,
            "class": self.klass,
            "eps": fmt(self.eps),
            "thresholds": {str(k): fmt(v) for k, v in sorted(self.thresholds.items())},
            "decisions": [
                {"k": d.k, "verdict": d.verdict, "reduction": d.reduction, "proof": d.proof,
                 "recheck": d.rechecked, **({"certificate": d.certificate} if certificates else {})}
                for d in self.decisions
            ],
        }
        if certificates:
            out["threshold_certificates"] = {str(k): c for k, c in sorted(self.threshold_certificates.items())}
        if self.note:
            out["note"] = self.note
        return out


EAGER_ORTHANT_ROWS = 7  # profile: k = m - 1 by its 2^(m-1) orthant LPs up front only up to 7 rows (64 LPs)


def thresholds(A, klass="unrestricted", method="auto", cache: CellCache | None = None, lazy_orthants=False):
    """Exact thresholds eps*_k (least eps at which rank k is feasible) where the oracle has them.

    Unrestricted: k = 0 (||A||_inf), k = N - 1 (kernel LPs), k = m - 1 (cokernel LPs), and
    0 for k >= rank A.  Stochastic: k = 1 (one LP) and, for k >= min(m, N), the largest row
    distance to the simplex.  Returns (dict k -> Fraction, dict k -> certificate).
    ``lazy_orthants``: the cokernel threshold of more than ``EAGER_ORTHANT_ROWS`` rows only if
    ``cache`` already holds it (a profile that never reaches k = m - 1 does not pay 2^(m-1) LPs)."""
    A = as_matrix(A)
    cell = cache if cache is not None and cache.A == A else CellCache(A, method)
    m, N, r = cell.m, cell.N, cell.rank
    vals, certs = {}, {}

    def put(k, cert):
        cert = dict(cert, k=k)
        if not check_threshold(A, cert):
            raise CertificateRejected(f"threshold certificate {cert['kind']} does not re-check at k={k}")
        vals[k] = Fraction(cert["value"])
        certs[k] = cert

    top = min(m, N)
    if klass == "unrestricted":
        put(0, cell.threshold("norm"))
        zero = None
        for k in range(1, top + 1):
            if k >= r:
                if zero is None:
                    X, Y = rank_factor(A)
                    zero = {"kind": "zero", "value": "0", "X": fmt_mat(X), "Y": fmt_mat(Y)}
                put(k, zero)
            else:
                route = cell.corank_route(k)
                if route == "cokernel" and lazy_orthants and m > EAGER_ORTHANT_ROWS and route not in cell.thresholds:
                    continue
                if route:
                    put(k, cell.threshold(route))
    else:
        put(1, cell.threshold("rank1-stochastic"))
        if top >= 2:  # every stochastic B has rank <= min(m, N)
            put(top, cell.threshold("simplex-rows"))
    return vals, certs


def profile(A, eps, klass="unrestricted", *, method="auto", prune=True, search=True, subcells=True,
            search_budget=None, nerves=True, decoders=True, on_decision=None) -> Profile:
    """The exact bracket on r_eps(A) in the class, with the decisions that prove it (every route
    of ``decide``; ``search_budget`` seconds of branch and bound for each k nothing else decides).
    ``on_decision(decision)`` is called after each rank is decided (progress; optional).

    Decides k = 0, 1, 2, ... in turn and stops at the first feasible k; ``lower`` is one more than
    the largest k proved impossible below it.  Stochastic cells with a row farther than eps from
    the simplex have no competitor at all: lower = upper = rank = None and a note says so."""
    A, eps, _, klass = _cell(A, eps, 0, klass)
    cell = CellCache(A, method, prune)
    decisions = []
    top = cell.rank if klass == "unrestricted" else min(cell.m, cell.N)
    upper = None
    for k in range(top + 1):
        d = decide(A, eps, k, klass, search=search, method=method, prune=prune, cache=cell, subcells=subcells,
                   search_budget=search_budget, nerves=nerves, decoders=decoders)
        decisions.append(d)
        if on_decision is not None:
            on_decision(d)
        if d.verdict == "feasible":
            upper = k
            break
        if d.verdict == "impossible" and d.certificate.get("kind") == "row-simplex-distance":
            vals, certs = thresholds(A, klass, method, cell, lazy_orthants=True)
            return Profile(None, None, None, vals, klass, eps, decisions, certs,
                           note="no stochastic matrix lies within eps of A (some row is too far from the simplex)")
    if upper is None:  # pragma: no cover - k = rank (unrestricted) / min(m, N) (stochastic) decides
        raise CertificateRejected("no feasible rank found up to the top rank")
    vals, certs = thresholds(A, klass, method, cell, lazy_orthants=True)
    impossible = [d.k for d in decisions if d.verdict == "impossible"]
    lower = max(impossible) + 1 if impossible else 0
    # consistency with the thresholds (both exact): eps*_k <= eps iff feasible at k
    for d in decisions:
        if d.k in vals and d.verdict != "outside-scope" and (vals[d.k] <= eps) != (d.verdict == "feasible"):
            raise CertificateRejected(f"threshold eps*_{d.k} = {fmt(vals[d.k])} disagrees with the decision")
    return Profile(lower, upper, lower if lower == upper else None, vals, klass, eps, decisions, certs)
