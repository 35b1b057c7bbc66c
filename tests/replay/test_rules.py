"""The rule registry: every acceptance is a registered rule that names proof files which exist;
an unknown certificate kind is a rejection; the trivial lower end is a rule like the others."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

from helpers import rowsoftmax_float, softmax_enclosure_of
from softrank.replay.record import LowerCertificate, UpperWitness
from softrank.replay.rules import LOWER_RULES, RULES, TRIVIAL_RULE, UPPER_RULE, Claim, check_lower_certificate
from softrank.validated.outcome import Outcome

ROOT = Path(__file__).resolve().parents[2]


def test_every_rule_names_proof_files_that_exist():
    assert {r.name for r in RULES} == {"upper-witness", "trivial", "frobenius", "projected", "decoder"}
    for rule in RULES:
        assert rule.proofs and rule.side in ("upper", "lower")
        for proof in rule.proofs:
            assert (ROOT / proof).is_file(), (rule.name, proof)
    assert set(LOWER_RULES) == {"frobenius", "projected", "decoder"}


def _claim(n=6, eps=Fraction(1, 4), **kw):
    h = np.random.default_rng(0).normal(size=(n, n))
    enc = softmax_enclosure_of(h)
    return Claim(enclosure=enc, chi=None, eps=eps, strict=False, shape=(n, n), a_hat=rowsoftmax_float(h), **kw)


def test_unknown_kind_is_rejected_with_a_reason():
    chk = check_lower_certificate(_claim(cert=LowerCertificate(kind="nuclear", lower=2)))
    assert chk.outcome is not Outcome.PROVED and "unknown certificate kind" in chk.reason


def test_the_removed_subspace_kind_is_an_unknown_kind():
    """Kind ``subspace`` (Lemma G, removed) is no longer registered: a certificate of that kind,
    with or without its old fields, is rejected as an unknown kind, never accepted."""
    n = 6
    data = {"W": np.eye(n)[:, :1], "pivots": np.array([0]), "cover": np.array([0]),
            "u": np.ones((1, n)), "v": np.eye(n)[:1]}
    for fields in (data, {}):
        chk = check_lower_certificate(_claim(n, cert=LowerCertificate(kind="subspace", lower=1, data=fields)))
        assert chk.outcome is Outcome.UNRESOLVED and not chk.assumptions
        assert chk.reason == "unknown certificate kind 'subspace': rejected"


@pytest.mark.parametrize("eps, proved", [(Fraction(1, 4), True), (Fraction(999, 1000), True),
                                         (Fraction(1), False), (Fraction(0), False), (Fraction(3, 2), False)])
def test_the_trivial_rule_needs_eps_strictly_inside_zero_one(eps, proved):
    assert TRIVIAL_RULE.check(_claim(eps=eps)).proved is proved


def test_the_upper_rule_proves_a_full_rank_witness_and_refuses_rank_zero():
    n = 6
    a = _claim(n).a_hat
    full = UPPER_RULE.check(_claim(n, witness=UpperWitness(rank=n, X=a.copy(), Y=np.eye(n))))
    assert full.proved and full.lemma in UPPER_RULE.proofs
    zero = UPPER_RULE.check(_claim(n, witness=UpperWitness(rank=0, X=np.zeros((n, 0)), Y=np.zeros((n, 0)))))
    assert zero.outcome is Outcome.REFUTED  # ||A - 0||_inf = 1 > 1/4


def test_the_trivial_rule_on_one_row_and_on_no_rows():
    h = np.zeros((1, 3))
    enc = softmax_enclosure_of(h)
    one = Claim(enclosure=enc, chi=None, eps=Fraction(1, 2), strict=False, shape=(1, 3))
    assert TRIVIAL_RULE.check(one).proved
    assert TRIVIAL_RULE.check(Claim(enclosure=enc, chi=None, eps=Fraction(1, 2), strict=False)).proved  # shape from A
    empty = Claim(enclosure=None, chi=None, eps=Fraction(1, 2), strict=False, shape=(0, 3))
    assert TRIVIAL_RULE.check(empty).outcome is Outcome.UNRESOLVED  # no row: ||A||_inf = 0, nothing to prove


def test_certificate_rows_must_be_int64_exactly():
    """rows of another integer type are malformed, not silently converted."""
    h = np.random.default_rng(1).normal(size=(6, 6))
    a = rowsoftmax_float(h)
    for dtype in (np.int32, np.uint64, np.float64):
        rows = np.array([0, 1], dtype=dtype)
        cert = LowerCertificate(kind="decoder", lower=2, data={"rows": rows, "W": np.linalg.pinv(a[[0, 1]])})
        chk = check_lower_certificate(_claim(cert=cert))
        assert chk.outcome is Outcome.UNRESOLVED and "int64" in chk.reason, dtype


def test_certificate_w_must_be_float64_with_the_claimed_columns():
    from helpers import block_decoder, block_logits

    h, rl, cl = block_logits([3, 3, 2], 9.0)
    enc = softmax_enclosure_of(h)
    rows, w = block_decoder(rl, cl, 3)
    base = dict(enclosure=enc, chi=None, eps=Fraction(1, 4), strict=False, shape=h.shape)

    def check(kind, lower, rows_, w_):
        return check_lower_certificate(Claim(**base, cert=LowerCertificate(kind=kind, lower=lower,
                                                                            data={"rows": rows_, "W": w_})))

    assert check("decoder", 3, rows, w).proved
    shifted = rows[1:]  # rows 3 and 6: no row 0
    assert shifted.min() > 0 and check("decoder", 2, shifted, w[:, 1:]).proved
    assert check("decoder", 1, rows[:1], w[:, :1]).proved  # one row, one column
    for bad in (w.astype(np.float32), w.astype(np.int64), w.astype(np.float16)):
        chk = check("decoder", 3, rows, bad)
        assert chk.outcome is Outcome.UNRESOLVED and "float64" in chk.reason
    wide = np.hstack([w, w[:, :1]])
    assert "shape" in check("decoder", 3, rows, wide).reason  # more columns than the claimed rank
    assert "shape" in check("projected", 2, rows, np.zeros((h.shape[1], 0))).reason  # no column
    assert "malformed" not in check("projected", 1, rows, w).reason  # any q >= 1 columns is well-formed


def test_a_claim_cannot_be_changed_after_it_is_made():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        _claim().eps = Fraction(1, 2)


@pytest.mark.parametrize("lower", [True, 2.0, "2", 0])
def test_the_claimed_lower_end_must_be_an_integer_of_at_least_one(lower):
    a = _claim().a_hat
    cert = LowerCertificate(kind="decoder", lower=lower, data={"rows": np.array([0, 1]), "W": np.linalg.pinv(a[[0, 1]])})
    chk = check_lower_certificate(_claim(cert=cert))
    assert chk.outcome is Outcome.UNRESOLVED and "claimed lower must be an integer" in chk.reason


def test_rows_must_be_one_dimensional_and_w_two_dimensional():
    a = _claim().a_hat
    w = np.linalg.pinv(a[[0, 1]])
    scalar = check_lower_certificate(_claim(cert=LowerCertificate(kind="decoder", lower=1, data={
        "rows": np.array(0, dtype=np.int64), "W": w[:, :1]})))
    assert "1-d int64" in scalar.reason
    for bad in (w[:, 0], w[None]):
        chk = check_lower_certificate(_claim(cert=LowerCertificate(kind="decoder", lower=2, data={
            "rows": np.array([0, 1]), "W": bad})))
        assert chk.outcome is Outcome.UNRESOLVED and "2-d float64" in chk.reason, bad.shape


def test_the_w_shape_message_says_what_was_expected():
    n = 6
    a = _claim(n).a_hat
    rows = np.array([0, 1])
    dec = check_lower_certificate(_claim(n, cert=LowerCertificate(kind="decoder", lower=2, data={
        "rows": rows, "W": np.linalg.pinv(a[[0, 1, 2]])})))
    assert f"expected [{n}, 2]" in dec.reason
    proj = check_lower_certificate(_claim(n, cert=LowerCertificate(kind="projected", lower=2, data={
        "rows": rows, "W": np.zeros((n, 0))})))
    assert f"expected [{n}, q >= 1]" in proj.reason


def test_a_decoder_needs_as_many_rows_as_its_claimed_lower_end():
    a = _claim().a_hat
    cert = LowerCertificate(kind="decoder", lower=2, data={"rows": np.array([0, 1, 2]),
                                                          "W": np.linalg.pinv(a[[0, 1]])})
    assert "decoder needs |rows| = lower = 2, got 3 rows" in check_lower_certificate(_claim(cert=cert)).reason


def test_a_decoder_with_hundreds_of_rows_is_compared_by_value():
    """|rows| = lower compared as numbers (not as objects: Python caches small integers only)."""
    n = 300
    h = 40.0 * np.eye(n)  # A = rowsoftmax(H) is almost the identity: every row is decodable
    claim = Claim(enclosure=softmax_enclosure_of(h), chi=None, eps=Fraction(1, 4), strict=False, shape=(n, n))
    rows = np.arange(n, dtype=np.int64)
    cert = LowerCertificate(kind="decoder", lower=n, data={"rows": rows, "W": np.eye(n)})
    assert check_lower_certificate(Claim(**{**claim.__dict__, "cert": cert})).proved


def test_the_trivial_rule_counts_rows_not_columns_and_needs_a_positive_eps():
    from types import SimpleNamespace

    no_rows = SimpleNamespace(a_mid=np.zeros((0, 3)))
    assert TRIVIAL_RULE.check(Claim(enclosure=no_rows, chi=None, eps=Fraction(1, 2), strict=False)).outcome \
        is Outcome.UNRESOLVED
    assert TRIVIAL_RULE.check(_claim(eps=Fraction(-1, 4))).outcome is Outcome.UNRESOLVED


def test_a_complex_w_is_malformed():
    a = _claim().a_hat
    w = np.linalg.pinv(a[[0, 1]]).astype(np.complex128)
    chk = check_lower_certificate(_claim(cert=LowerCertificate(kind="decoder", lower=2, data={
        "rows": np.array([0, 1]), "W": w})))
    assert chk.outcome is Outcome.UNRESOLVED and "2-d float64" in chk.reason


def test_a_registered_rule_cannot_be_changed():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        UPPER_RULE.check = None


def _lower_certificates(claim):
    a = claim.a_hat
    rows = np.array([0, 1], dtype=np.int64)
    return {
        "frobenius": LowerCertificate(kind="frobenius", lower=1),
        "projected": LowerCertificate(kind="projected", lower=1, data={
            "rows": np.arange(a.shape[0], dtype=np.int64), "W": np.eye(a.shape[1])[:, :1]}),
        "decoder": LowerCertificate(kind="decoder", lower=1, data={"rows": rows[:1], "W": np.linalg.pinv(a[:1])}),
    }


def test_every_lower_kind_has_a_certificate_here():
    assert set(_lower_certificates(_claim())) == set(LOWER_RULES)


@pytest.mark.parametrize("kind", sorted(LOWER_RULES))
def test_every_lower_rule_proves_its_honest_certificate_and_refuses_eps_outside_zero_one(kind):
    base = _claim()
    cert = _lower_certificates(base)[kind]
    assert check_lower_certificate(_claim(cert=cert)).proved, kind
    for eps in (Fraction(0), Fraction(-1, 4), Fraction(1), Fraction(3, 2), 0.25):
        chk = check_lower_certificate(_claim(eps=eps, cert=cert))
        assert chk.outcome is Outcome.UNRESOLVED and "eps must be" in chk.reason, (kind, eps)


@pytest.mark.filterwarnings("ignore::PendingDeprecationWarning")
def test_array_subclasses_are_malformed_not_a_crash():
    """np.matrix and masked arrays index and multiply differently from plain arrays; the rules
    accept plain numpy arrays only (a record reader produces nothing else)."""
    tried = set()
    for kind, cert in _lower_certificates(_claim()).items():
        for key, value in cert.data.items():
            for wrap in (np.asmatrix, np.ma.masked_array):
                data = dict(cert.data)
                data[key] = wrap(value.reshape(1, -1) if wrap is np.asmatrix and value.ndim == 1 else value)
                chk = check_lower_certificate(_claim(cert=LowerCertificate(kind=kind, lower=1, data=data)))
                assert chk.outcome is Outcome.UNRESOLVED and "malformed" in chk.reason, (kind, key, wrap)
                tried.add(kind)
    assert tried == {"projected", "decoder"}


def test_an_upper_witness_that_cannot_be_checked_is_unresolved_not_an_exception():
    """Lemma U's rule is guarded like the lower ones: factors whose inner dimensions disagree (numpy
    raises ValueError in the product) give an unresolved check naming the lemma and the error."""
    n = 6
    bad = UpperWitness(rank=2, X=np.ones((n, 2)), Y=np.ones((n, 3)))
    chk = UPPER_RULE.check(_claim(n, witness=bad))
    assert chk.outcome is Outcome.UNRESOLVED
    assert "check could not be completed: ValueError" in chk.reason and "lemma_U" in chk.lemma


def test_a_wrongly_shaped_array_is_called_empty_only_when_it_is():
    """A decoder's ``W`` of the wrong shape is refused with its shape; the message adds "(empty)"
    for an array without entries and only then."""
    n = 6
    for w, empty in ((np.zeros((0, 2)), True), (np.zeros((n, 3)), False)):
        cert = LowerCertificate(kind="decoder", lower=2, data={"rows": np.array([0, 1], dtype=np.int64), "W": w})
        chk = check_lower_certificate(_claim(n, cert=cert))
        assert chk.outcome is not Outcome.PROVED and "'W' has shape" in chk.reason
        assert ("(empty)" in chk.reason) is empty
