"""The float32 rounding allowance of the capture check (``fastpath/capture/allowance.py``): the
logit bound holds for float32 products, the probability bound for perturbed logits; on a
config-built BERT whose query weights are scaled up (logits near 300, as DINOv2-small's layer 3
head 4) every operator deviates within its allowance and is recorded, some beyond the old fixed
1e-5; planted errors (a wrong scale, a missing bias, transposed keys) are refused."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.fastpath.capture.allowance import gamma, logit_errors, probability_excess
from softrank.fastpath.capture.dispatch import CaptureWarning, capturing
from softrank.fastpath.capture.operators import Operator, Refusal, operators_for, provenance, tolerance

pytestmark = pytest.mark.usefixtures("one_torch_thread")
U = 2.0 ** -24
FLOOR = tolerance("float32")


def _softmax(h):
    e = np.exp(h - h.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_gamma():
    assert gamma(1, U) == pytest.approx(U) and gamma(67, U) > 67 * U
    assert gamma(2 ** 24, U) == float("inf")


@pytest.mark.parametrize("d", [1, 8, 64, 384])
def test_the_logit_bound_holds_for_float32_products(d):
    rng = np.random.default_rng(d)
    q = (rng.standard_normal((40, d)) * 30).astype(np.float32)
    k = (rng.standard_normal((50, d)) * 30).astype(np.float32)
    bias = (rng.standard_normal((40, 50)) * 50).astype(np.float32)
    scale = d ** -0.5
    exact = scale * (q.astype(np.float64) @ k.astype(np.float64).T) + bias
    model = (torch.from_numpy(q) @ torch.from_numpy(k).T * scale + torch.from_numpy(bias)).numpy()
    delta = logit_errors(q.astype(np.float64), k.astype(np.float64), scale, bias.astype(np.float64), U)
    err = np.abs(model.astype(np.float64) - exact)
    assert np.all(err <= delta)
    assert err.max() > 0  # the float32 evaluation did round


def test_the_probability_bound_holds_for_perturbed_logits():
    rng = np.random.default_rng(1)
    h = rng.standard_normal((30, 60)) * 40
    delta = np.abs(rng.standard_normal((30, 60))) * 1e-3
    a = _softmax(h)
    bound = probability_excess(a, delta)
    worst = 0.0
    for trial in range(20):
        sign = rng.choice([-1.0, 1.0], size=h.shape)
        worst = max(worst, float(np.abs(_softmax(h + sign * delta) - a).max()))
    j = a.argmax(axis=1)  # the extremes: the largest entry pushed up, the rest down, and the reverse
    for s in (1.0, -1.0):
        e = -s * delta.copy()
        e[np.arange(30), j] = s * delta[np.arange(30), j]
        worst = max(worst, float(np.abs(_softmax(h + e) - a).max()))
    assert 0 < worst <= bound
    visible = rng.random(h.shape) > 0.3
    assert probability_excess(a, delta, visible) <= bound
    assert probability_excess(a, np.zeros_like(delta)) == 0.0


def _large_logit_bert():
    """One BERT layer, 6 heads of 64, queries scaled by 400: logits near 300."""
    torch.manual_seed(1)
    cfg = transformers.BertConfig(vocab_size=97, hidden_size=384, num_hidden_layers=1, num_attention_heads=6,
                                  intermediate_size=37, max_position_embeddings=256)
    model = transformers.BertModel(cfg).eval()
    with torch.no_grad():
        model.encoder.layer[0].attention.self.query.weight.mul_(400.0)
    return model, torch.randint(0, 97, (2, 200), generator=torch.Generator().manual_seed(9))


def _captures(model, **inputs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)
        with capturing(model) as session:
            with torch.no_grad():
                model(**inputs)
    return session.captures


def _all(cap):
    return [op for b in range(cap.batch_size) for head in range(cap.num_heads)
            for op in operators_for(cap, head, [], b)]


def test_a_large_logit_head_within_float32_rounding_is_recorded():
    model, ids = _large_logit_bert()
    (cap,) = _captures(model, input_ids=ids)
    ops = _all(cap)
    assert all(isinstance(op, Operator) for op in ops), [op.reason for op in ops if isinstance(op, Refusal)]
    assert max(float(np.abs(op.logits()).max()) for op in ops) > 250
    beyond = [op for op in ops if op.deviation > FLOOR]
    assert beyond  # the fixed 1e-5 would have refused these (measured: 9 of 12, up to 2.4e-5)
    for op in ops:
        assert op.deviation <= op.tolerance
        assert op.tolerance == FLOOR if op.deviation <= FLOOR else op.tolerance > FLOOR
    for op in beyond:
        assert FLOOR < op.tolerance < 1e-2
        prov = provenance(op, model="m", family="f", checkpoint_sha256=None, source_id="s", source_sha256=None)
        assert prov["capture_tolerance"] == op.tolerance and prov["capture_max_deviation"] == op.deviation
    plain = next(op for op in ops if op.deviation <= FLOOR)
    prov = provenance(plain, model="m", family="f", checkpoint_sha256=None, source_id="s", source_sha256=None)
    assert prov["capture_tolerance"] == FLOOR  # the bytes of a record the fixed check accepted
    worst = max(ops, key=lambda op: op.deviation)
    print(f"\nlarge-logit BERT: {len(beyond)} of {len(ops)} beyond 1e-5; largest deviation "
          f"{worst.deviation:.3g}, its allowance {worst.tolerance:.3g}")


def _planted(cap, **change):
    return [op for op in _all(dataclasses.replace(cap, **change)) if not isinstance(op, Refusal)]


def test_planted_errors_are_refused_on_large_logits():
    model, ids = _large_logit_bert()
    (cap,) = _captures(model, input_ids=ids)
    # 5% off (measured: 1% off passes 10 of the 12 operators here, 0.1% all 12; the fixed 1e-5
    # refused both: the price of the allowance on saturated heads, docs/extraction.md)
    assert _planted(cap, scale=cap.scale * 1.05) == []
    assert _planted(cap, scale=cap.scale ** 2) == []  # 1/d for 1/sqrt(d)
    assert _planted(cap, keys=cap.queries, queries=cap.keys) == []  # transposed: K Q^T for Q K^T
    refused = [op for op in _all(dataclasses.replace(cap, scale=cap.scale * 1.05)) if isinstance(op, Refusal)]
    assert "plus the rounding of its logits" in refused[0].reason


def test_planted_errors_are_refused_on_small_logits():
    torch.manual_seed(4)
    model = transformers.BertModel(transformers.BertConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64)).eval()
    (cap,) = _captures(model, input_ids=torch.randint(0, 97, (1, 24), generator=torch.Generator().manual_seed(9)))
    assert all(isinstance(op, Operator) and op.tolerance == FLOOR for op in _all(cap))
    assert _planted(cap, scale=cap.scale * 2) == []
    assert _planted(cap, keys=cap.queries, queries=cap.keys) == []


def test_a_missing_bias_is_refused():
    torch.manual_seed(6)
    cfg = transformers.T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=37, num_layers=1, num_decoder_layers=1,
                                num_heads=4, relative_attention_num_buckets=8, decoder_start_token_id=0)
    encoder = transformers.T5EncoderModel(cfg).eval()
    caps = _captures(encoder, input_ids=torch.randint(1, 97, (1, 22), generator=torch.Generator().manual_seed(11)))
    (cap,) = [c for c in caps if c.attention == "encoder-self"]
    assert cap.bias is not None
    assert all(isinstance(op, Operator) and op.bias is not None for op in _all(cap))
    assert _planted(cap, bias=None) == []
    assert _planted(cap, bias=cap.bias.transpose(-1, -2)) == []  # the bias of the other direction
