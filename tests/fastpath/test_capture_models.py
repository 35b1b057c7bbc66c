"""Generic capture: any transformers model whose attention goes through the attention interface
(plus the Bloom and Falcon adapters), without a per-type allow-list, is captured exactly or
refused with a warning.

For every model type below (small models built from configs with random weights) every record of
``softrank.capture(...).records()`` is compared with the model's own attention probabilities from
a separate eager pass (``attn_implementation="eager"``, ``output_attentions=True``), on the
record's rows and columns (renormalised for decoder blocks): the row softmax of the record's
logits is within 1e-6.  Types whose operator the record format cannot state (attention sinks,
Falcon's sdpa path that exposes no probabilities, attention outside the interface, a sliding
window shorter than a block's reach, attention dropout in training) give a ``CaptureWarning`` and
no record.
"""

from __future__ import annotations

import inspect

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.fastpath.capture.dispatch import CaptureWarning
from softrank.fastpath.float64 import rowsoftmax64

pytestmark = pytest.mark.usefixtures("one_torch_thread")
EXACT = 1e-6
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
DEVIATIONS: dict[str, float] = {}  # model type -> max deviation found (printed at the end with -s)


def _ids(batch=1, tokens=12, seed=0, vocab=97):
    return torch.randint(3, vocab, (batch, tokens), generator=torch.Generator().manual_seed(seed))


def _eager(cls, config):
    """A model built with eager attention (the reference; Bloom and Falcon keep it for capture)."""
    torch.manual_seed(0)
    return cls._from_config(config, attn_implementation="eager").eval()


def _default(cls, config):
    """A model built with its default attention (usually sdpa): capture switches and restores it."""
    torch.manual_seed(0)
    return cls(config).eval()


def _reference(model, inputs) -> dict:
    """The model's own eager attention probabilities: {"attentions" | "encoder" | "decoder" | "cross": tuple}."""
    before = model.config._attn_implementation
    if before != "eager":
        model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(**inputs, output_attentions=True)
    finally:
        if before != "eager":
            model.set_attn_implementation(before)
    return {"attentions": getattr(out, "attentions", None), "encoder": getattr(out, "encoder_attentions", None),
            "decoder": getattr(out, "decoder_attentions", None), "cross": getattr(out, "cross_attentions", None)}


def _valid(mask, b, n):
    return np.arange(n) if mask is None else np.flatnonzero(mask[b].numpy())


def _reference_block(ref, rec, inputs):
    """The model's probabilities on the record's rows and columns, renormalised."""
    prov = rec.provenance
    module, b, h, layer = prov["module"], prov["batch_item"], prov["head"], prov["layer"]
    enc_mask = inputs.get("attention_mask")
    dec_mask = inputs.get("decoder_attention_mask")
    if prov["attention"] == "cross":
        probs = ref["cross"][layer]
        rows, cols = _valid(dec_mask, b, probs.shape[-2]), _valid(enc_mask, b, probs.shape[-1])
    elif module.startswith("decoder.") and ref["decoder"] is not None:
        probs = ref["decoder"][layer]
        rows = cols = _valid(dec_mask, b, probs.shape[-1])
    else:
        probs = ref["encoder"][layer] if module.startswith("encoder.") and ref["encoder"] is not None \
            else ref["attentions"][layer]
        rows = cols = _valid(enc_mask, b, probs.shape[-1])
    if prov["attention"] == "decoder-self-block":
        start, stop = prov["positions"]
        rows, cols = rows[start:stop], cols[:prov["block_width"]]
    block = probs[b, h].double().numpy()[np.ix_(rows, cols)]
    return block / block.sum(axis=1, keepdims=True)


def check_exact(name, model, inputs, *, expect: int, widths=None, family=None, reference_model=None):
    """Capture ``model`` on ``inputs`` (no warning allowed), compare every record with the eager
    reference, return the records."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        with softrank.capture(model, family=family) as cap, torch.no_grad():
            model(**inputs)
        recs = cap.records(widths=widths)
    ref = _reference(reference_model or model, inputs)
    assert len(recs) == expect, (name, len(recs))
    assert len({r.record_id for r in recs}) == len(recs)
    worst = 0.0
    for rec in recs:
        mine = rowsoftmax64(rec.logits) if rec.form == "logits" else rec.a_hat
        assert np.array_equal(mine, rec.a_hat)
        dev = float(np.abs(rec.a_hat - _reference_block(ref, rec, inputs)).max())
        worst = max(worst, dev)
        assert rec.provenance["capture_max_deviation"] <= EXACT
        assert rec.provenance["capture_dtype"] == "float32" and rec.provenance["device"] == "cpu"
    assert worst < EXACT, (name, worst)
    DEVIATIONS[name] = max(worst, DEVIATIONS.get(name, 0.0))
    return recs


# name -> (build, inputs, records expected: layers x heads x operators per head)
DECODERS = {
    "mistral": lambda: _default(transformers.MistralModel, transformers.MistralConfig(
        vocab_size=97, num_key_value_heads=2, max_position_embeddings=64, sliding_window=64, **SMALL)),
    "qwen3": lambda: _default(transformers.Qwen3Model, transformers.Qwen3Config(
        vocab_size=97, num_key_value_heads=2, head_dim=8, max_position_embeddings=64, **SMALL)),
    "phi3": lambda: _default(transformers.Phi3Model, transformers.Phi3Config(
        vocab_size=97, num_key_value_heads=2, max_position_embeddings=64, pad_token_id=0, **SMALL)),
    "gpt_neox": lambda: _default(transformers.GPTNeoXModel, transformers.GPTNeoXConfig(
        vocab_size=97, max_position_embeddings=64, **SMALL)),
    "opt": lambda: _default(transformers.OPTModel, transformers.OPTConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, ffn_dim=37,
        word_embed_proj_dim=32, max_position_embeddings=64)),
    "gemma": lambda: _default(transformers.GemmaModel, transformers.GemmaConfig(
        vocab_size=97, num_key_value_heads=1, head_dim=8, max_position_embeddings=64, **SMALL)),
    "olmo2": lambda: _default(transformers.Olmo2Model, transformers.Olmo2Config(
        vocab_size=97, num_key_value_heads=2, max_position_embeddings=64, **SMALL)),
    "starcoder2": lambda: _default(transformers.Starcoder2Model, transformers.Starcoder2Config(
        vocab_size=97, num_key_value_heads=2, max_position_embeddings=64, sliding_window=64, **SMALL)),
    "bloom": lambda: _eager(transformers.BloomModel, transformers.BloomConfig(
        vocab_size=97, hidden_size=32, n_layer=2, n_head=4)),
    "falcon-rotary": lambda: _eager(transformers.FalconModel, transformers.FalconConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=False,
        new_decoder_architecture=False, multi_query=True, max_position_embeddings=64)),
    "falcon-grouped": lambda: _eager(transformers.FalconModel, transformers.FalconConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_kv_heads=2,
        alibi=False, new_decoder_architecture=True, max_position_embeddings=64)),
    "falcon-alibi": lambda: _eager(transformers.FalconModel, transformers.FalconConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, alibi=True,
        new_decoder_architecture=False, multi_query=False, max_position_embeddings=64)),
}


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decoder_types_are_captured_exactly(name):
    model = DECODERS[name]()
    before = model.config._attn_implementation
    recs = check_exact(name, model, {"input_ids": _ids(tokens=16)}, expect=2 * 4 * 2, widths=[4, 8])
    assert model.config._attn_implementation == before
    assert {r.provenance["attention"] for r in recs} == {"decoder-self-block"}
    assert {r.shape for r in recs} == {(4, 4), (8, 8)}
    if name in ("bloom", "falcon-alibi"):  # ALiBi is the record's bias
        assert all(r.bias is not None and np.ptp(r.bias[0]) > 0 for r in recs)


def test_gemma2_softcap_is_in_the_record():
    config = transformers.Gemma2Config(vocab_size=97, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
                                       attn_logit_softcapping=1.0, final_logit_softcapping=None, sliding_window=64,
                                       query_pre_attn_scalar=8, **SMALL)
    model = _default(transformers.Gemma2Model, config)
    with torch.no_grad():  # large logits, so that the cap matters
        for layer in model.layers:
            layer.self_attn.q_proj.weight.mul_(30.0)
    inputs = {"input_ids": _ids(tokens=16)}
    recs = check_exact("gemma2", model, inputs, expect=16, widths=[4, 8])
    assert {r.form for r in recs} == {"logits"} and {r.provenance["softcap"] for r in recs} == {1.0}
    assert max(float(np.abs(r.logits).max()) for r in recs) <= 1.0
    # a forced family does not drop the soft-cap either
    forced = check_exact("gemma2", model, inputs, expect=16, widths=[4, 8], family="llama")
    assert {r.provenance["family"] for r in forced} == {"llama"} and {r.form for r in forced} == {"logits"}
    assert [np.array_equal(a.logits, b.logits) for a, b in zip(recs, forced)] == [True] * 16
    # without the cap the operator would differ by far more than the check allows
    with softrank.capture(model) as cap, torch.no_grad():
        model(**inputs)
    c = cap.captures[0]
    capped = rowsoftmax64(np.where(c.head_masked(), -np.inf, c.logits(0)))
    c.softcap = None
    plain = rowsoftmax64(np.where(c.head_masked(), -np.inf, c.logits(0)))
    assert float(np.abs(plain - capped).max()) > 1e-2


ENCODERS = {
    "roberta": (lambda: _default(transformers.RobertaModel, transformers.RobertaConfig(
        vocab_size=97, max_position_embeddings=64, **SMALL)), "input_ids"),
    "distilbert": (lambda: _default(transformers.DistilBertModel, transformers.DistilBertConfig(
        vocab_size=97, dim=32, n_layers=2, n_heads=4, hidden_dim=37)), "input_ids"),
    "electra": (lambda: _default(transformers.ElectraModel, transformers.ElectraConfig(
        vocab_size=97, embedding_size=32, max_position_embeddings=64, **SMALL)), "input_ids"),
    "deit": (lambda: _default(transformers.DeiTModel, transformers.DeiTConfig(
        image_size=32, patch_size=8, **SMALL)), "pixel_values"),
    "beit": (lambda: _default(transformers.BeitModel, transformers.BeitConfig(
        image_size=32, patch_size=8, use_relative_position_bias=True, **SMALL)), "pixel_values"),
}


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_encoder_and_vision_types_are_captured_exactly(name):
    make, key = ENCODERS[name]
    model = make()
    if key == "pixel_values":
        inputs = {key: torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))}
        n = 17 + (1 if name == "deit" else 0)  # DeiT adds a distillation token
    else:
        inputs, n = {key: _ids(tokens=14)}, 14
    recs = check_exact(name, model, inputs, expect=2 * 4)
    assert {r.shape for r in recs} == {(n, n)} and {r.provenance["attention"] for r in recs} == {"encoder-self"}


def test_encoder_decoder_bart_with_padding():
    config = transformers.BartConfig(vocab_size=97, d_model=32, encoder_layers=2, decoder_layers=2,
                                     encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=37,
                                     decoder_ffn_dim=37, max_position_embeddings=64)
    model = _default(transformers.BartModel, config)
    ids = _ids(batch=2, tokens=12, seed=3)
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # encoder input right-padded
    dec = _ids(batch=2, tokens=10, seed=4)
    dec_mask = torch.ones_like(dec)
    dec_mask[0, 7:] = 0  # decoder input right-padded
    inputs = {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": dec, "decoder_attention_mask": dec_mask,
              "use_cache": False}
    # per item: 2 layers x 4 heads x (encoder self, decoder block, cross)
    recs = check_exact("bart", model, inputs, expect=2 * 2 * 4 * 3, widths=[3])
    shapes = {(r.provenance["batch_item"], r.provenance["attention"]): r.shape for r in recs}
    assert shapes == {(0, "encoder-self"): (12, 12), (1, "encoder-self"): (9, 9),
                      (0, "decoder-self-block"): (3, 3), (1, "decoder-self-block"): (3, 3),
                      (0, "cross"): (7, 12), (1, "cross"): (10, 9)}
    assert any("-encoder-L01-H03-self" in r.record_id for r in recs)
    assert any("-b1-decoder-L00-H00-cross" in r.record_id for r in recs)


def test_t5_batch_with_padding():
    config = transformers.T5Config(vocab_size=97, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4,
                                   relative_attention_num_buckets=8, decoder_start_token_id=0)
    model = _default(transformers.T5Model, config)
    ids = _ids(batch=2, tokens=10, seed=5)
    mask = torch.ones_like(ids)
    mask[0, :3] = 0  # left padding in the encoder input
    inputs = {"input_ids": ids, "attention_mask": mask, "decoder_input_ids": _ids(batch=2, tokens=8, seed=6),
              "use_cache": False}
    recs = check_exact("t5", model, inputs, expect=2 * 2 * 4 * 3, widths=[4])
    assert all((r.bias is not None) == (r.provenance["attention"] != "cross") for r in recs)  # relative bias


# ----------------------------------------------------------------------------------------------
# refused: warned, nothing recorded


def _refused(model, inputs, match, **records):
    with pytest.warns(CaptureWarning, match=match):
        with softrank.capture(model) as cap, torch.no_grad():
            model(**inputs)
        recs = cap.records(**records)
    assert recs == []
    return cap


def test_attention_sinks_are_refused():
    config = transformers.GptOssConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       num_key_value_heads=2, head_dim=8, intermediate_size=32, num_local_experts=2,
                                       num_experts_per_tok=1, max_position_embeddings=64)
    cap = _refused(_default(transformers.GptOssModel, config), {"input_ids": _ids()}, r"self_attn: attention sinks")
    assert len(cap.refused) == 2 and len(cap) == 0


def test_falcon_sdpa_is_refused_where_falcon_computes_its_own_attention():
    """Falcon computing attention in its own module (its forward takes ``alibi``): the sdpa path
    returns no probabilities, refused.  Releases that route Falcon through the attention interface
    capture its sdpa model exactly, like any other."""
    config = transformers.FalconConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                       alibi=True, new_decoder_architecture=False, max_position_embeddings=64)
    model = _default(transformers.FalconModel, config)
    if "alibi" in inspect.signature(transformers.models.falcon.modeling_falcon.FalconAttention.forward).parameters:
        _refused(model, {"input_ids": _ids()}, "sdpa.*attn_implementation='eager'")
    else:
        recs = check_exact("falcon-sdpa", model, {"input_ids": _ids(tokens=16)}, expect=2 * 4 * 2, widths=[4, 8])
        assert all(r.bias is not None and np.ptp(r.bias[0]) > 0 for r in recs)  # ALiBi, through the mask


def test_a_sliding_window_shorter_than_the_block_is_refused():
    config = transformers.MistralConfig(vocab_size=97, num_key_value_heads=2, max_position_embeddings=64,
                                        sliding_window=5, **SMALL)
    _refused(_default(transformers.MistralModel, config), {"input_ids": _ids(tokens=16)}, "sliding window",
             widths=[4, 8])


def test_training_dropout_is_refused():
    config = transformers.LlamaConfig(vocab_size=97, num_key_value_heads=2, max_position_embeddings=64,
                                      attention_dropout=0.5, **SMALL)
    model = _default(transformers.LlamaModel, config).train()
    _refused(model, {"input_ids": _ids()}, "dropout 0.5 in training mode")
    model.eval()  # in eval mode the same model is captured
    assert len(check_exact("llama", model, {"input_ids": _ids(tokens=16)}, expect=8)) == 8


def test_a_deviation_above_the_tolerance_is_refused(monkeypatch):
    from softrank.fastpath.capture import operators

    monkeypatch.setitem(operators.TOLERANCES, "float32", 0.0)
    monkeypatch.setattr(operators, "allowance", lambda op, floor: floor)  # no float32 widening either
    model = DECODERS["qwen3"]()
    _refused(model, {"input_ids": _ids(tokens=16)}, r"deviates from the model's attention probabilities")


def test_a_query_row_without_keys_is_refused():
    from softrank.fastpath.capture.operators import Refusal, operators_for

    model = DECODERS["qwen3"]()
    with softrank.capture(model) as cap, torch.no_grad():
        model(input_ids=_ids(tokens=16))
    c = cap.captures[0]
    masked = c.masked.clone()
    masked[0, :, 5, :] = True  # query 5 sees no key (its own position is still a key of later queries)
    c.masked = masked
    found = operators_for(c, 0, [4], 0)
    assert len(found) == 1 and isinstance(found[0], Refusal) and "without keys" in found[0].reason


def test_bf16_provenance_holds_dtype_and_deviation():
    config = transformers.LlamaConfig(vocab_size=97, num_key_value_heads=2, max_position_embeddings=64, **SMALL)
    model = _default(transformers.LlamaModel, config).to(torch.bfloat16)
    with softrank.capture(model) as cap, torch.no_grad():
        model(input_ids=_ids(tokens=24))
    recs = cap.records(widths=[8])
    assert len(recs) == 8
    from softrank.fastpath.capture.operators import tolerance

    for rec in recs:
        prov = rec.provenance
        assert prov["capture_dtype"] == "bfloat16" and prov["device"] == "cpu"
        assert 0 < prov["capture_max_deviation"] <= prov["capture_tolerance"] == tolerance("bfloat16")
        # the logits as the model rounded them: what remains is the rounding of its probabilities
        assert rec.form == "logits" and prov["logits_computed_in"] == "bfloat16"
        assert np.all(rec.logits.astype(np.float32).astype(np.float64) == rec.logits)
    DEVIATIONS["llama-bfloat16"] = max(r.provenance["capture_max_deviation"] for r in recs)


@pytest.mark.parametrize("name", ["qwen3", "bloom", "falcon-alibi"])
def test_capture_leaves_the_model_as_it_was(name):
    """Attention setting, hooks and parameters as before; the model's output bit-identical before
    and after a capture (interface models and adapter models alike)."""
    model = DECODERS[name]()
    inputs = {"input_ids": _ids(tokens=16)}

    def hooks():
        return [(n, len(m._forward_hooks), len(m._forward_pre_hooks)) for n, m in model.named_modules()]

    before = (model.config._attn_implementation, hooks(), {k: v.clone() for k, v in model.state_dict().items()})
    with torch.no_grad():
        out_before = model(**inputs).last_hidden_state
    with softrank.capture(model) as cap, torch.no_grad():
        model(**inputs)
    assert len(cap.records()) == 8
    with torch.no_grad():
        out_after = model(**inputs).last_hidden_state
    assert model.config._attn_implementation == before[0] and hooks() == before[1]
    assert all(torch.equal(v, before[2][k]) for k, v in model.state_dict().items())
    assert torch.equal(out_before, out_after)


def test_report_deviations():
    """(Runs last in this file: prints the measured deviations with ``-s``.)"""
    for name, dev in sorted(DEVIATIONS.items()):
        print(f"{name:16s} {dev:.2e}")
    assert all(dev < 1e-1 for dev in DEVIATIONS.values())
