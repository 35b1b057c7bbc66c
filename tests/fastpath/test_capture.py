"""Capture is exact to the model on small models built from configs.

For every family, the rowsoftmax of the captured logits (float64, mask applied) matches the
model's own attention probabilities (``output_attentions`` under ``attn_implementation="eager"``,
a separate forward pass) within 1e-5; operators built from the captures (full, common-prefix
blocks, cross) match the corresponding (renormalised) blocks of the model's probabilities.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.fastpath.capture.dispatch import (
    CAPTURE_IMPLEMENTATION,
    capturing,
    register_capture,
    repeat_kv,
)
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.capture.operators import block_operator, full_operator, operators_for

TOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _reference(model, **inputs):
    model.set_attn_implementation("eager")
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    return out


def _capture(model, family, **inputs):
    register_capture()
    model.set_attn_implementation(CAPTURE_IMPLEMENTATION)
    with capturing(model, family) as session:
        out = model(**inputs)
    return session.captures, out


def _max_error(cap, probs: torch.Tensor) -> float:
    """max |rowsoftmax(captured logits, masked) - model probabilities| over valid rows."""
    worst = 0.0
    for b in range(probs.shape[0]):
        masked = cap.head_masked(b)
        valid = ~masked.all(axis=1)  # left-padded query rows have every key masked
        for h in range(cap.num_heads):
            logits = np.where(masked, -np.inf, cap.logits(h, b))
            mine = rowsoftmax64(logits[valid])
            ref = probs[b, h].double().numpy()[valid]
            worst = max(worst, float(np.abs(mine - ref).max()))
    return worst


def _seeded(seed=0):
    torch.manual_seed(seed)


# ----------------------------------------------------------------------------------------------
# decoders: Llama (grouped heads), Qwen2 (grouped heads), GPT-2


def _llama():
    _seeded(1)
    cfg = transformers.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    return transformers.LlamaModel(cfg).eval()


def _qwen2():
    _seeded(2)
    cfg = transformers.Qwen2Config(vocab_size=97, hidden_size=48, intermediate_size=48, num_hidden_layers=2,
                                   num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=128)
    return transformers.Qwen2Model(cfg).eval()


def _gpt2():
    _seeded(3)
    cfg = transformers.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=4, n_positions=128)
    return transformers.GPT2Model(cfg).eval()


@pytest.mark.parametrize("make,family,n_rep", [(_llama, "llama", 2), (_qwen2, "qwen2", 3), (_gpt2, "gpt2", 1)])
def test_decoder_capture_matches_model(make, family, n_rep):
    model = make()
    ids = torch.randint(0, 97, (1, 40), generator=torch.Generator().manual_seed(5))
    ref = _reference(model, input_ids=ids).attentions
    caps, _ = _capture(model, family, input_ids=ids)
    assert len(caps) == len(ref) == 2
    for cap, probs in zip(caps, ref):
        assert cap.attention == "decoder-self"
        assert cap.n_rep == n_rep  # keys arrive with the key-value head count
        assert cap.head_masked().sum() == 40 * 39 // 2  # the causal mask reached the capture
        assert _max_error(cap, probs) < TOL
        # the renormalised common-prefix blocks (N = 8, 16, 20; P = 40 >= 2N - 1)
        for width in (8, 16, 20):
            for h in range(cap.num_heads):
                op = block_operator(cap, h, width)
                assert op.shape == (width, width) and op.positions == (40 - width, 40)
                block = probs[0, h, 40 - width:, :width].double().numpy()
                assert np.abs(op.a_hat() - block / block.sum(axis=1, keepdims=True)).max() < TOL
        with pytest.raises(ValueError, match="too short"):
            block_operator(cap, 0, 21)  # 2 * 21 - 1 = 41 > 40


def test_grouped_keys_expand_as_repeat_kv():
    model = _qwen2()
    ids = torch.randint(0, 97, (1, 12), generator=torch.Generator().manual_seed(6))
    caps, _ = _capture(model, "qwen2", input_ids=ids)
    cap = caps[0]
    from transformers.models.qwen2.modeling_qwen2 import repeat_kv as library_repeat_kv

    assert torch.equal(repeat_kv(cap.keys, cap.n_rep), library_repeat_kv(cap.keys, cap.n_rep))
    for h in range(cap.num_heads):
        assert np.array_equal(cap.head_keys(h), cap.expanded_keys()[0, h].numpy())


def test_left_padding_rows_dropped():
    model = _llama()
    ids = torch.randint(0, 97, (2, 30), generator=torch.Generator().manual_seed(7))
    mask = torch.ones_like(ids)
    mask[1, :6] = 0  # second sequence left-padded by 6
    ref = _reference(model, input_ids=ids, attention_mask=mask).attentions
    caps, _ = _capture(model, "llama", input_ids=ids, attention_mask=mask)
    for cap, probs in zip(caps, ref):
        assert cap.head_masked(1)[:6].all()  # padded query rows: every key masked
        assert _max_error(cap, probs) < TOL
        op = block_operator(cap, 1, 12, batch=1)  # P = 24 valid positions
        assert op.pass_tokens == 24 and op.positions == (12, 24)
        block = probs[1, 1, 30 - 12:, 6:18].double().numpy()
        assert np.abs(op.a_hat() - block / block.sum(axis=1, keepdims=True)).max() < TOL
        with pytest.raises(ValueError, match="too short"):
            block_operator(cap, 1, 13, batch=1)


def test_capture_leaves_model_output_unchanged():
    model = _llama()
    ids = torch.randint(0, 97, (1, 20), generator=torch.Generator().manual_seed(8))
    ref = _reference(model, input_ids=ids).last_hidden_state
    _, out = _capture(model, "llama", input_ids=ids)
    assert torch.allclose(out.last_hidden_state, ref, atol=1e-6)


# ----------------------------------------------------------------------------------------------
# encoders: BERT, ViT


def test_bert_capture_matches_model():
    _seeded(4)
    cfg = transformers.BertConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=37, max_position_embeddings=64)
    model = transformers.BertModel(cfg).eval()
    ids = torch.randint(0, 97, (2, 24), generator=torch.Generator().manual_seed(9))
    mask = torch.ones_like(ids)
    mask[1, 18:] = 0  # right padding in the second sequence
    ref = _reference(model, input_ids=ids, attention_mask=mask).attentions
    caps, _ = _capture(model, "bert", input_ids=ids, attention_mask=mask)
    assert len(caps) == 2
    for cap, probs in zip(caps, ref):
        assert cap.attention == "encoder-self" and cap.scale == 8 ** -0.5
        assert _max_error(cap, probs) < TOL
        op = full_operator(cap, 2, batch=0)
        assert op.shape == (24, 24)
        assert np.abs(op.a_hat() - probs[0, 2].double().numpy()).max() < TOL
        op = full_operator(cap, 3, batch=1)  # padded positions dropped: keys and queries
        assert op.shape == (18, 18)
        assert np.abs(op.a_hat() - probs[1, 3, :18, :18].double().numpy()).max() < TOL


def test_vit_capture_matches_model():
    _seeded(5)
    cfg = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=37)
    model = transformers.ViTModel(cfg, add_pooling_layer=False).eval()
    pixels = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(10))
    ref = _reference(model, pixel_values=pixels).attentions
    caps, _ = _capture(model, "vit", pixel_values=pixels)
    assert len(caps) == 2
    for cap, probs in zip(caps, ref):
        assert cap.shape == (17, 17) and cap.masked is None
        assert _max_error(cap, probs) < TOL


# ----------------------------------------------------------------------------------------------
# T5: encoder self (relative position bias), decoder self (bias + causal), cross


def test_t5_capture_matches_model():
    _seeded(6)
    cfg = transformers.T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_decoder_layers=2,
                                num_heads=4, relative_attention_num_buckets=8, decoder_start_token_id=0)
    model = transformers.T5ForConditionalGeneration(cfg).eval()
    ids = torch.randint(1, 97, (1, 22), generator=torch.Generator().manual_seed(11))
    dec = model._shift_right(ids)
    inputs = {"input_ids": ids, "decoder_input_ids": dec, "use_cache": False}
    out = _reference(model, **inputs)
    caps, _ = _capture(model, "t5", **inputs)
    by_kind = {k: [c for c in caps if c.attention == k] for k in ("encoder-self", "decoder-self", "cross")}
    assert [len(v) for v in by_kind.values()] == [2, 2, 2]
    refs = {"encoder-self": out.encoder_attentions, "decoder-self": out.decoder_attentions,
            "cross": out.cross_attentions}
    for kind, caps_k in by_kind.items():
        for cap, probs in zip(caps_k, refs[kind]):
            assert cap.scale == 1.0
            assert _max_error(cap, probs) < TOL
    # the relative position bias is part of the self-attention logits (not of cross-attention)
    enc = by_kind["encoder-self"][1]
    assert enc.bias is not None and np.abs(enc.head_bias(0)).max() > 0
    op = full_operator(enc, 1)
    assert op.bias is not None and np.abs(op.a_hat() - refs["encoder-self"][1][0, 1].double().numpy()).max() < TOL
    cross = full_operator(by_kind["cross"][0], 2)
    assert cross.bias is None and cross.shape == (22, 22) and cross.attention == "cross"
    ops = operators_for(by_kind["decoder-self"][0], 3, [8, 11])
    assert [o.shape for o in ops] == [(8, 8), (11, 11)] and all(o.bias is not None for o in ops)
    probs = refs["decoder-self"][0][0, 3].double().numpy()
    block = probs[22 - 11:, :11]
    assert np.abs(ops[1].a_hat() - block / block.sum(axis=1, keepdims=True)).max() < TOL


# ----------------------------------------------------------------------------------------------
# BLIP-2 Q-Former: query-to-image cross-attention, identified by module name


def test_blip2_qformer_cross_capture_matches_model():
    _seeded(7)
    cfg = transformers.Blip2QFormerConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=37, encoder_hidden_size=24, cross_attention_frequency=1)
    model = transformers.Blip2QFormerModel(cfg).eval()
    gen = torch.Generator().manual_seed(12)
    inputs = {"query_embeds": torch.randn(1, 8, 32, generator=gen),
              "encoder_hidden_states": torch.randn(1, 10, 24, generator=gen)}
    out = _reference(model, **inputs)
    caps, _ = _capture(model, "blip2", **inputs)
    cross = [c for c in caps if c.attention == "cross"]
    assert [c.module for c in cross] == ["encoder.layer.0.crossattention.attention",
                                        "encoder.layer.1.crossattention.attention"]
    selfs = [c for c in caps if c.attention != "cross"]  # no allow-list: the queries' self-attention too
    assert [c.module for c in selfs] == ["encoder.layer.0.attention.attention", "encoder.layer.1.attention.attention"]
    for cap, probs in zip(selfs, [p for p in out.attentions if p.shape[-1] == 8]):
        assert cap.shape == (8, 8) and _max_error(cap, probs) < TOL
    assert len(out.cross_attentions) == 2
    for cap, probs in zip(cross, out.cross_attentions):
        assert cap.attention == "cross" and cap.shape == (8, 10)
        assert _max_error(cap, probs) < TOL
        op = full_operator(cap, 1)
        assert op.shape == (8, 10)


def test_stop_early_captures_wanted_layers_only():
    model = _llama()
    ids = torch.randint(0, 97, (1, 16), generator=torch.Generator().manual_seed(13))
    full, _ = _capture(model, "llama", input_ids=ids)
    with capturing(model, "llama", layers={0}, stop_early=True) as session:
        model(input_ids=ids)
        assert False, "the pass should stop after layer 0"  # pragma: no cover
    assert [c.layer for c in session.captures] == [0]
    assert torch.equal(session.captures[0].queries, full[0].queries)
    assert torch.equal(session.captures[0].keys, full[0].keys)
