"""``softrank.capture(model)`` behaves like the capture tools people know: on a model left on its
default attention (sdpa) it switches to the capturing attention, matches the model's own attention
probabilities, and restores the model's setting on exit, also on an exception; a model whose
attention cannot be captured gets a warning and records nothing.  ``wrap_model`` no longer
switches a model for good, and a T5 built from a default config (no decoder start token) extracts."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.fastpath.capture.dispatch import CaptureWarning, capturing
from softrank.fastpath.capture.extract import extract_to_store
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.capture.models import wrap_model
from softrank.replay.reader import read_record

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
GEN = torch.Generator().manual_seed(5)
IDS = torch.randint(1, 97, (1, 24), generator=GEN)


def _t5():
    return transformers.T5ForConditionalGeneration(transformers.T5Config(
        vocab_size=97, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, relative_attention_num_buckets=8))


# family -> (model built from a config with its default attention, inputs)
FAMILIES = {
    "bert": (lambda: transformers.BertModel(transformers.BertConfig(vocab_size=97, max_position_embeddings=64,
                                                                    **SMALL)), {"input_ids": IDS}),
    "llama": (lambda: transformers.LlamaModel(transformers.LlamaConfig(
        vocab_size=97, max_position_embeddings=64, num_key_value_heads=2, **SMALL)), {"input_ids": IDS}),
    "gpt2": (lambda: transformers.GPT2Model(transformers.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=4,
                                                                    n_positions=64)), {"input_ids": IDS}),
    "qwen2": (lambda: transformers.Qwen2Model(transformers.Qwen2Config(
        vocab_size=97, max_position_embeddings=64, num_key_value_heads=2, **SMALL)), {"input_ids": IDS}),
    "vit": (lambda: transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=8, **SMALL),
                                          add_pooling_layer=False),
            {"pixel_values": torch.randn(1, 3, 32, 32, generator=GEN)}),
    "t5": (_t5, {"input_ids": IDS, "decoder_input_ids": IDS, "use_cache": False}),
    "blip2": (lambda: transformers.Blip2QFormerModel(transformers.Blip2QFormerConfig(
        encoder_hidden_size=24, cross_attention_frequency=1, **SMALL)),
        {"query_embeds": torch.randn(1, 8, 32, generator=GEN), "encoder_hidden_states": torch.randn(1, 10, 24)}),
}


def _reference_probs(model, inputs) -> list:
    """The model's own attention probabilities under eager attention (then put back)."""
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            out = model(**inputs, output_attentions=True)
    finally:
        model.set_attn_implementation(before)
    return [p for name in ("encoder_attentions", "attentions", "decoder_attentions", "cross_attentions")
            for p in (getattr(out, name, None) or ())]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_capture_switches_matches_and_restores(family):
    torch.manual_seed(0)
    make, inputs = FAMILIES[family]
    model = make().eval()
    before = model.config._attn_implementation
    reference = _reference_probs(model, inputs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CaptureWarning)
        with softrank.capture(model) as cap, torch.no_grad():
            model(**inputs)
    assert model.config._attn_implementation == before
    assert len(cap.captures) >= 2
    worst = 0.0
    for c in cap.captures:
        probs = [p for p in reference if tuple(p.shape[-2:]) == c.shape]
        masked = c.head_masked()
        mine = [rowsoftmax64(np.where(masked, -np.inf, c.logits(h))) for h in range(c.num_heads)]
        errors = [max(float(np.abs(m - p[0, h].double().numpy()).max()) for h, m in enumerate(mine)) for p in probs]
        worst = max(worst, min(errors))  # the reference call with the same shape that matches
    assert worst < 1e-5
    assert all(r.shape[0] >= 1 for r in cap.records(widths=[8] if family in ("llama", "gpt2", "qwen2", "t5") else None))


def test_restored_on_exception_and_nothing_left_active():
    from softrank.fastpath.capture import dispatch as capture_module

    model = FAMILIES["gpt2"][0]().eval()
    assert model.config._attn_implementation == "sdpa"
    with pytest.raises(RuntimeError, match="boom"), softrank.capture(model):
        raise RuntimeError("boom")
    assert model.config._attn_implementation == "sdpa" and capture_module._ACTIVE == []
    with softrank.capture(model, layers=[1]) as cap, torch.no_grad():
        model(input_ids=IDS)
    assert [c.layer for c in cap.captures] == [1] and model.config._attn_implementation == "sdpa"


def test_models_outside_the_interface_and_models_without_attention():
    neo = transformers.GPTNeoModel(transformers.GPTNeoConfig(vocab_size=97, hidden_size=32, num_layers=2, num_heads=4,
                                                             attention_types=[[["global", "local"], 1]],
                                                             max_position_embeddings=64)).eval()
    before = neo.config._attn_implementation
    with softrank.capture(neo) as cap:  # outside the interface: captured at the softmax (softmax_route.py)
        neo(input_ids=IDS)
    assert len(cap) == 2 and {c.route for c in cap.captures} == {"softmax"}
    assert neo.config._attn_implementation == before
    linear = torch.nn.Linear(3, 3)
    with pytest.warns(CaptureWarning, match="no attention call reached the capture"), capturing(linear) as session:
        linear(torch.ones(2, 3))
    assert session.captures == []


def test_a_pass_that_reaches_no_capture_warns():
    model = FAMILIES["llama"][0]().eval()
    # the model has layers 0 and 1: softrank.capture refuses layer 7 (test_capturing.py); the
    # capture underneath warns when no wanted layer ran
    with pytest.warns(CaptureWarning, match="no attention call reached the capture"), \
            capturing(model, layers={7}), torch.no_grad():
        model(input_ids=IDS)


def test_wrap_model_leaves_the_attention_setting(tmp_path):
    model = FAMILIES["gpt2"][0]().eval()
    with pytest.warns(UserWarning, match="byte"):
        lm = wrap_model(model, name="tiny")
    assert model.config._attn_implementation == "sdpa" and lm.extra["tokenizer"] == "byte-fallback"
    ids = extract_to_store(lm, tmp_path, sources=1, tokens=40, widths=[16], max_operators=3)
    assert len(ids) == 3 and model.config._attn_implementation == "sdpa"
    assert read_record(tmp_path / "records" / ids[0]).provenance["tokenizer"] == "byte-fallback"


def test_t5_from_a_default_config_extracts(tmp_path):
    torch.manual_seed(0)
    model = _t5().eval()
    with pytest.raises(AttributeError):
        model.config.decoder_start_token_id  # noqa: B018  (a default config has none)
    with pytest.warns(UserWarning, match="byte"):
        lm = wrap_model(model, name="t5-default")
    ids = extract_to_store(lm, tmp_path, sources=1, tokens=32, widths=[16], max_operators=6)
    recs = [read_record(tmp_path / "records" / r) for r in ids]
    assert {r.provenance["attention"] for r in recs} == {"encoder-self", "cross", "decoder-self-block"}
    assert {r.provenance["decoder_start_token_id"] for r in recs} == {0}
