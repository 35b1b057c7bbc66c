"""The Python API (docs/python.md): every example of the page runs (the torch-free ones also with
torch made unimportable, in a subprocess); ``import softrank`` stays light; in-memory records are
checked like stored ones; a store written from Python round-trips and replays the same."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import warnings
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import softrank
from softrank.replay import record as core
from softrank.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "python.md"
TORCH_MARK = "# needs torch"
NO_TORCH = "import sys\nfor _m in ('torch', 'transformers'):\n    sys.modules[_m] = None\n"


def doc_blocks() -> list[tuple[bool, str]]:
    """(needs torch, code) of every ```python block of docs/python.md, in order."""
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(encoding="utf-8"), re.DOTALL | re.MULTILINE)
    return [(b.lstrip().startswith(TORCH_MARK), b) for b in blocks]


def test_the_page_has_examples_of_every_name():
    blocks = doc_blocks()
    code = "\n".join(b for _, b in blocks)
    assert len(blocks) >= 7 and any(t for t, _ in blocks) and sum(not t for t, _ in blocks) >= 5
    for name in ("Record.from_logits", "Record.from_qk", "with_upper", "softrank.bracket", "softrank.validate",
                 "softrank.Store", "softrank.capture", "softrank.decide", "softrank.profile"):
        assert name in code, name


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="the producer (torch) is not installed")
def test_every_example_runs(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    namespace: dict = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _, code in doc_blocks():
                exec(compile(code, str(DOC), "exec"), namespace)  # noqa: S102  (the page's own examples)
    finally:
        torch.set_num_threads(threads)
    assert any("byte" in str(w.message) for w in caught)  # the page's wrap_model example warns about it
    assert namespace["model"].config._attn_implementation == "sdpa"
    assert not any(p.name != "my-store" and p.name != "extracted" for p in tmp_path.iterdir())


def test_checker_examples_run_without_torch(tmp_path):
    script = NO_TORCH + "\n".join(code for torch_needed, code in doc_blocks() if not torch_needed)
    script += "\nassert 'torch' not in sys.modules or sys.modules['torch'] is None\nprint('CHECKER-OK')\n"
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=600,
                          check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "CHECKER-OK" in proc.stdout and "feasible True" in proc.stdout


def test_import_softrank_is_light():
    code = ("import sys, softrank\nheavy = [m for m in ('numpy', 'torch', 'transformers', 'flint') if m in sys.modules]\n"
            "print(heavy)\nsoftrank.Record\nprint('torch' in sys.modules, 'transformers' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:2] == ["[]", "False False"]


def test_lazy_exports():
    from softrank.oracle import search as oracle
    from softrank.api import Store, bracket, capture, validate

    assert softrank.decide is oracle.decide and softrank.profile is oracle.profile
    assert (softrank.Store, softrank.bracket, softrank.validate, softrank.capture) == (Store, bracket, validate, capture)
    assert {"Record", "bracket", "validate", "Store", "capture", "decide", "profile"} <= set(dir(softrank))
    with pytest.raises(AttributeError):
        softrank.no_such_name  # noqa: B018


# ----------------------------------------------------------------------------------------------
# in-memory records


def _logits(n=20, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 2)) @ rng.normal(size=(2, n))


def test_from_qk_defines_the_logits_operator():
    rng = np.random.default_rng(1)
    q, k, bias = rng.normal(size=(6, 4)), rng.normal(size=(9, 4)), rng.normal(size=(6, 9))
    rec = softrank.Record.from_qk(q, k, 0.5, bias=bias, record_id="qk")
    same = softrank.Record.from_logits(0.5 * q @ k.T + bias, record_id="h")
    assert rec.shape == (6, 9) and rec.form == "qk" and rec.path is None
    assert np.allclose(rec.a_hat, same.a_hat, atol=1e-15, rtol=0)
    assert "bias" in rec.operator_assumption
    result = softrank.validate(rec.with_upper(eps="1/2", X=rec.a_hat, Y=np.eye(9)))
    assert result["1/2"].upper_outcome == "proved" and result["1/2"].validated_upper == 9


@pytest.mark.parametrize("build, field", [
    (lambda: softrank.Record.from_logits([[1.0, float("nan")]]), "logits"),
    (lambda: softrank.Record.from_logits(np.zeros(4)), "logits"),
    (lambda: softrank.Record.from_logits(np.zeros((0, 3))), "logits"),
    (lambda: softrank.Record.from_logits(np.zeros((2, 2)), record_id="bad id"), "record_id"),
    (lambda: softrank.Record.from_qk(np.zeros((2, 3)), np.zeros((2, 4)), 1.0), "keys"),
    (lambda: softrank.Record.from_qk(np.zeros((2, 3)), np.zeros((2, 3)), float("inf")), "scale"),
    (lambda: softrank.Record.from_qk(np.zeros((2, 3)), np.zeros((4, 3)), 1.0, bias=np.zeros((4, 2))), "bias"),
    (lambda: softrank.Record.from_logits(np.zeros((2, 2))).with_upper(eps=1.5, X=np.zeros((2, 1)),
                                                                      Y=np.zeros((2, 1))), "eps"),
    (lambda: softrank.Record.from_logits(np.zeros((2, 2))).with_upper(eps=0.1, X=np.zeros((3, 1)),
                                                                      Y=np.zeros((2, 1))), "X"),
])
def test_bad_input_names_the_field(build, field):
    with pytest.raises(InputError) as err:
        build()
    assert err.value.field == field


def test_with_upper_replaces_the_witness_at_the_same_eps():
    rec = softrank.Record.from_logits(_logits(), record_id="w")
    one = rec.with_upper(eps=0.25, X=np.zeros((20, 0)), Y=np.zeros((20, 0)))
    two = one.with_upper(eps=Fraction(1, 4), X=one.a_hat, Y=np.eye(20), construction="identity")
    assert rec.tolerances == [] and len(one.tolerances) == 1 and len(two.tolerances) == 1
    assert two.tolerances[0].upper.construction == "identity" and two.tolerances[0].upper.rank == 20
    result = softrank.validate(two)
    assert result.tolerances[0].validated_upper == 20 and result.tolerances[0].lemmas


def test_validate_rechecks_a_record_changed_in_memory():
    rec = softrank.Record.from_logits(_logits(), record_id="changed")
    rec.a_hat[0, 0] = -0.5
    with pytest.raises(InputError, match="row-stochastic"):
        softrank.validate(rec)


def test_bracket_then_validate_agree():
    rec = softrank.bracket(softrank.Record.from_logits(_logits(), record_id="b"), eps=0.25)
    tol = rec.tolerances[0]
    assert tol.eps == Fraction(1, 4) and tol.upper is not None and tol.float64_verdicts
    t = softrank.validate(rec)[0.25]
    assert (t.validated_lower, t.validated_upper) == (tol.float64_lower, tol.float64_upper)
    assert t.upper_outcome == "proved" and t.assumptions and t.verdict(32) == "feasible"
    with pytest.raises(InputError):
        softrank.bracket(rec, eps=[])


def test_store_round_trip_and_exact_eps(tmp_path):
    rec = softrank.bracket(softrank.Record.from_logits(_logits(), record_id="s1"), eps=["1/10", 0.25])
    store = softrank.Store(tmp_path / "store")
    assert len(store) == 0 and "s1" not in store
    store.write(rec)
    back = store["s1"]
    assert isinstance(back, softrank.Record) and back.path is not None and len(store) == 1
    assert [t.eps for t in back.tolerances] == [Fraction(1, 10), Fraction(1, 4)]
    assert np.array_equal(back.logits, rec.logits) and np.array_equal(back.a_hat, rec.a_hat)
    ours, theirs = softrank.validate(rec), softrank.validate(back)
    assert [(t.validated_lower, t.validated_upper) for t in ours.tolerances] == \
           [(t.validated_lower, t.validated_upper) for t in theirs.tolerances]
    doc = json.loads((tmp_path / "store" / "records" / "s1" / "record.json").read_text())
    assert [t["eps"] for t in doc["tolerances"]] == ["1/10", 0.25]
    assert (tmp_path / "store" / "index.csv").is_file()
    with pytest.raises(KeyError):
        store["absent"]


def test_from_qk_refuses_logits_that_overflow_at_once():
    """scale * Q K^T beyond binary64 made an A_hat of NaN (validate then refused it, Store.write
    raised a bare ValueError): from_qk now refuses at once, one line naming the field."""
    q, k = np.array([[1e200, 0.0], [0.0, 1.0]]), np.array([[1e200, 0.0], [1.0, 1.0]])
    for bias in (None, np.zeros((2, 2))):
        with pytest.raises(InputError) as err:
            softrank.Record.from_qk(q, k, 1.0, bias=bias, record_id="big")
        assert err.value.field == "scale" and "overflow" in err.value.message
        assert err.value.where == "big" and "\n" not in err.value.one_line()
    with pytest.raises(InputError) as err:  # finite Q and K, a bias that overflows the sum
        softrank.Record.from_qk(np.ones((2, 1)), np.ones((2, 1)), 1e308, bias=np.full((2, 2), 1e308))
    assert err.value.field == "scale"


@pytest.mark.parametrize("scale, ok", [(2**53, True), (np.int64(-7), True), (2**53 + 1, False),
                                       (np.int64(2**62 + 1), False), (10**400, False), (np.longdouble(1) / 3, False)])
def test_from_qk_takes_a_scale_only_when_binary64_holds_it_exactly(scale, ok):
    q, k = np.zeros((2, 1)), np.zeros((3, 1))
    if ok:
        rec = softrank.Record.from_qk(q, k, scale)
        assert type(rec.scale) is float and rec.scale == int(scale)
    else:
        with pytest.raises(InputError) as err:
            softrank.Record.from_qk(q, k, scale)
        assert err.value.field == "scale"


def test_store_write_refuses_a_malformed_record_with_an_input_error(tmp_path):
    """Any record the store reader would refuse is an InputError naming the field (never a bare
    ValueError), and nothing is written."""
    import dataclasses

    from softrank.replay.tolerance import Tolerance

    good = softrank.Record.from_logits(_logits(), record_id="w1")
    store = softrank.Store(tmp_path / "store")
    nan = good.a_hat.copy()
    nan[0, 0] = np.nan
    tol = softrank.Record.from_logits(_logits()).with_upper(eps=0.25, X=good.a_hat, Y=np.eye(20)).tolerances[0]
    cert = dataclasses.replace(tol, lower=[core.LowerCertificate("decoder", 1, {"rows": np.array([0]),
                                                                                "W": np.full((20, 1), np.inf)})])
    cases = [
        (dataclasses.replace(good, a_hat=nan), "a_hat"),
        (dataclasses.replace(good, a_hat=2 * good.a_hat), "a_hat"),
        (dataclasses.replace(good, record_id="bad id"), "record_id"),
        (dataclasses.replace(good, tolerances=[dataclasses.replace(tol, tolerance=Tolerance(Fraction(3, 2), "3/2",
                                                                                            1.5))]),
         "tolerances[0].eps"),
        (dataclasses.replace(good, tolerances=[dataclasses.replace(tol, upper=dataclasses.replace(
            tol.upper, X=tol.upper.X[:5]))]), "tolerances[0].upper.X"),
        (dataclasses.replace(good, tolerances=[cert]), "tolerances[0].lower[0].W"),
        (dataclasses.replace(good, form="other"), "operator.form"),
    ]
    for rec, field in cases:
        with pytest.raises(InputError) as err:
            store.write(rec)
        assert err.value.field == field, err.value.one_line()
        assert not (tmp_path / "store" / "records").exists() or not any((tmp_path / "store" / "records").iterdir())
    store.write(good)
    assert store.ids() == ["w1"]


def test_masked_records_from_logits_and_qk_validate_and_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    m, n = 12, 16
    H = rng.normal(size=(m, n)) * 2
    causal = np.arange(n)[None, :] <= np.arange(m)[:, None] + (n - m)
    rec = softrank.Record.from_logits(H, record_id="causal", mask=causal)
    assert (rec.support.form, rec.support.offset) == ("causal", n - m)
    assert np.array_equal(rec.mask, causal) and np.all(rec.a_hat[~causal] == 0)
    assert np.allclose(rec.a_hat.sum(axis=1), 1)
    q, k = rng.normal(size=(m, 4)), rng.normal(size=(n, 4))
    ahead = np.arange(m)[:, None] + 2 - np.arange(n)[None, :]
    window = (ahead >= 0) & (ahead < 3)
    qk = softrank.Record.from_qk(q, k, 0.5, record_id="window", mask=window)
    assert (qk.support.form, qk.support.size, qk.support.offset) == ("window", 3, 2)
    assert softrank.Record.from_logits(H, mask=np.ones((m, n), bool)).mask is None
    assert softrank.Record.from_logits(H).mask is None
    for r in (rec, qk):
        u, s, vt = np.linalg.svd(r.a_hat)
        witnessed = r.with_upper(eps="0.25", X=u[:, :m] * s[:m], Y=vt[:m].T.copy())
        v = softrank.validate(witnessed)
        assert v.tolerances[0].validated_upper == m and "support" in " ".join(v.tolerances[0].assumptions)
        store = softrank.Store(tmp_path)
        store.write(witnessed)
        back = store[r.record_id]
        assert np.array_equal(back.mask, r.mask) and back.support.form == r.support.form
        assert softrank.validate(back).tolerances[0].validated_upper == m


@pytest.mark.parametrize("mask,message", [
    (np.zeros((3, 4), bool), "row 0 has no visible key"),
    (np.ones((4, 3), bool), "expected an m x N"),
    (np.full((3, 4), 0.5), "expected an m x N"),
])
def test_a_bad_mask_is_an_input_error(mask, message):
    with pytest.raises(InputError) as err:
        softrank.Record.from_logits(np.zeros((3, 4)), mask=mask)
    assert message in err.value.one_line()


def test_from_qk_masked_overflow_only_where_hidden():
    q, k = np.array([[1e200], [1.0]]), np.array([[1e200], [1.0]])
    mask = np.array([[False, True], [True, True]])  # the overflowing logit (0, 0) is hidden
    rec = softrank.Record.from_qk(q, k, 1.0, mask=mask)
    assert np.all(np.isfinite(rec.a_hat)) and rec.a_hat[0, 0] == 0
    with pytest.raises(InputError):
        softrank.Record.from_qk(q, k, 1.0)
