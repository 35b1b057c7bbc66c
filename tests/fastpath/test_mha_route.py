"""``nn.MultiheadAttention`` on the softmax route (``fastpath/capture/mha_route.py``):
``nn.TransformerEncoder`` (batch_first, with and without a causal mask, with a padded batch) is
captured with its fast path off inside the block (restored after), every layer and head within
1e-5 of the module's own per-head probabilities (``need_weights=True,
average_attn_weights=False`` on the same layer inputs); a direct ``need_weights=True`` call goes
through the softmax; attention dropout in training mode is refused."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import capture_records, record_block

torch = pytest.importorskip("torch")
nn = torch.nn
pytestmark = pytest.mark.usefixtures("one_torch_thread")
EXACT = 1e-5
TOKENS = 40


def _encoder(dropout=0.0):
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(32, 4, 37, dropout=dropout, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()


def _records(model, *args, **kwargs):
    _, recs, warned = capture_records(model, *args, **kwargs)
    return recs, warned


def _layer_probs(model, x, **kwargs):
    """Per layer, the module's own per-head probabilities on that layer's input."""
    inputs = []
    handles = [layer.self_attn.register_forward_pre_hook(lambda m, a, kw: inputs.append(a[0]), with_kwargs=True)
               for layer in model.layers]
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with torch.no_grad():
            model(x, **kwargs)
            out = []
            for layer, h in zip(model.layers, inputs):
                mask = kwargs.get("mask")
                _, w = layer.self_attn(h, h, h, attn_mask=mask, key_padding_mask=kwargs.get("src_key_padding_mask"),
                                       need_weights=True, average_attn_weights=False)
                out.append(w.double().numpy())
    finally:
        torch.backends.mha.set_fastpath_enabled(before)
        for handle in handles:
            handle.remove()
    return out


X = torch.randn(2, TOKENS, 32, generator=torch.Generator().manual_seed(6))


@pytest.mark.parametrize("case", ["full", "causal", "padding"])
def test_transformer_encoder_is_captured_exactly(case):
    model = _encoder()
    kwargs = {}
    if case == "causal":
        kwargs = {"mask": nn.Transformer.generate_square_subsequent_mask(TOKENS), "is_causal": True}
    if case == "padding":
        pad = torch.zeros(2, TOKENS, dtype=torch.bool)
        pad[1, 28:] = True
        kwargs = {"src_key_padding_mask": pad}
    before = torch.backends.mha.get_fastpath_enabled()
    recs, warned = _records(model, X, **kwargs)
    assert torch.backends.mha.get_fastpath_enabled() == before
    assert warned == [] and len(recs) == 2 * 2 * 4 and len({r.record_id for r in recs}) == len(recs)
    ref = _layer_probs(model, X, **{k: v for k, v in kwargs.items() if k != "is_causal"})
    worst = 0.0
    for rec in recs:
        prov = rec.provenance
        assert prov["route"] == "multihead-attention" and prov["module"] == f"layers.{prov['layer']}.self_attn"
        p = record_block(ref[prov["layer"]][prov["batch_item"], prov["head"]], prov,
                         28 if case == "padding" and prov["batch_item"] == 1 else TOKENS)
        assert rec.shape == p.shape
        worst = max(worst, float(np.abs(rec.a_hat - p).max()))
    assert worst < EXACT
    assert {r.provenance["attention"] for r in recs} == ({"decoder-self-block"} if case == "causal" else {"encoder-self"})


def test_need_weights_goes_through_the_softmax():
    torch.manual_seed(7)
    mha = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    recs, warned = _records(mha, X, X, X, need_weights=True, average_attn_weights=False)
    assert warned == [] and len(recs) == 2 * 4
    with torch.no_grad():
        _, w = mha(X, X, X, need_weights=True, average_attn_weights=False)
    for rec in recs:
        assert rec.provenance["route"] == "multihead-attention" and rec.form == "logits"
        p = w[rec.provenance["batch_item"], rec.provenance["head"]].double().numpy()
        assert float(np.abs(rec.a_hat - p).max()) < EXACT


def test_dropout_in_training_mode_is_refused():
    model = _encoder(dropout=0.1).train()
    recs, warned = _records(model, X)
    assert recs == [] and len(warned) == 2 and all("dropout_p=0.1" in w for w in warned)
