"""Attacks on validated lower ends (untrusted, float64): for a proved ``r_eps(A) >= L``, search
hard for a matrix of rank ``L - 1`` within eps, with every upper construction and many restarts
of the alternating l1 factorization from perturbed starts.  A witness the validated checker then
PROVES (``||A - X Y^T||_inf <= eps`` at rank L - 1) would contradict the proved lower end: a
soundness failure.  A float64-only success (the checker does not confirm it) is reported as a
near miss; the closest float64 error is reported either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from softrank.fastpath.upper.constructions import (build_altl1, build_cpqr, build_reprows, build_rpqr, build_rwsvd,
                                             build_tsvd)
from softrank.fastpath.float64 import max_row_l1
from softrank.fastpath.operator_cache import OperatorCache
from softrank.replay.record import Record, UpperWitness
from softrank.replay.rules import UPPER_RULE, Claim
from softrank.validated.softmax_enclosure import chi_upper, logits_balls, rowsoftmax_enclosure

CONSTRUCTIONS = {"tsvd": build_tsvd, "rwsvd": build_rwsvd, "cpqr": build_cpqr, "rpqr": build_rpqr,
                 "reprows": build_reprows, "altl1": build_altl1}


@dataclass
class AttackResult:
    record_id: str
    eps: str
    lower: int  # the validated lower end attacked: the attack looks for rank lower - 1
    attempts: int
    best_error: float  # least float64 ||A - X Y^T||_inf found at rank lower - 1
    best_construction: str
    float64_beaten: bool  # best_error <= eps in float64
    validated_beaten: bool  # the checker PROVED the rank lower - 1 witness: a soundness failure


def _candidates(op: OperatorCache, k: int, target: float, restarts: int, rng: np.random.Generator):
    """(name, X, Y) candidates of rank k."""
    for name, build in CONSTRUCTIONS.items():
        try:
            X, Y = build(op, k, target)
        except (np.linalg.LinAlgError, ValueError):
            continue
        yield name, X, Y
    U, s, Vt = op.svd
    for r in range(restarts):  # alternating l1 from perturbed right singular bases
        Y0 = Vt[:k].T + rng.normal(scale=0.3 / (1 + r), size=(op.N, k)) / np.sqrt(op.N)
        try:
            X, Y = build_altl1(op, k, target, rounds=4, Y0=Y0)
        except (np.linalg.LinAlgError, ValueError):
            continue
        yield f"altl1-restart{r}", X, Y


def attack_tolerance(op: OperatorCache, claim: Claim, lower: int, restarts: int, seed: int) -> tuple:
    """(attempts, best error, best construction, float64 beaten, validated beaten) at rank lower - 1."""
    k = lower - 1
    eps = float(claim.eps)
    rng = np.random.default_rng(seed)
    attempts, best = 0, (np.inf, "", None, None)
    if k == 0:  # the only rank-0 matrix is 0, whose error is ||A||_inf = 1 > eps
        return 1, float(max_row_l1(op.A, np.zeros((op.m, 0)), np.zeros((op.N, 0)))), "zero", False, False
    for name, X, Y in _candidates(op, k, eps, restarts, rng):
        attempts += 1
        err = max_row_l1(op.A, X, Y)
        if err < best[0]:
            best = (err, name, X, Y)
    err, name, X, Y = best
    validated = False
    if X is not None and err <= eps:  # ask the checker: would this contradict the proved lower end?
        check = UPPER_RULE.check(Claim(**{**claim.__dict__, "witness": UpperWitness(rank=k, X=X, Y=Y)}))
        validated = check.proved
    return attempts, float(err), name, bool(err <= eps), validated


def attack_record(record: Record, lowers: dict[Fraction, int], restarts: int = 8, seed: int = 0) -> list[AttackResult]:
    """Attack every validated lower end ``lowers[eps] >= 2`` of one record."""
    enc = rowsoftmax_enclosure(logits_balls(logits=record.logits, queries=record.queries, keys=record.keys,
                                            scale=record.scale, bias=record.bias), mask=record.mask)
    chi = chi_upper(enc, record.a_hat)
    op = OperatorCache(record.a_hat)
    out = []
    for tol in record.tolerances:
        lower = lowers.get(tol.eps)
        if lower is None or lower < 2:
            continue
        claim = Claim(enclosure=enc, chi=chi, eps=tol.eps, strict=False, shape=record.shape, a_hat=record.a_hat,
                      operator_assumption=record.operator_assumption)
        attempts, err, name, f64, val = attack_tolerance(op, claim, lower, restarts, seed)
        out.append(AttackResult(record.record_id, tol.eps_text, lower, attempts, err, name, f64, val))
    return out
