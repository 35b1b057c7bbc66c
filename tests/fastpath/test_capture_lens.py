"""TransformerLens route of the capture (``fastpath/capture/lens.py``, ``api/lens.py``):
``softrank.capture(hooked_transformer)`` and ``softrank.records_from_cache(cache)`` on models
built from a ``HookedTransformerConfig`` (no download), every layer and head checked against
``hook_pattern`` within 1e-5, zeros included."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
lens = pytest.importorskip("transformer_lens", reason="transformer-lens is not installed (the 'lens' extra)")

import softrank  # noqa: E402
from softrank.api.records import Record  # noqa: E402
from softrank.fastpath.capture.dispatch import CaptureWarning  # noqa: E402
from softrank.fastpath.capture.lens import Refusal, calls_from_cache, is_lens_model, operators_for  # noqa: E402
from softrank.fastpath.store.support import causal_mask  # noqa: E402
from softrank.errors import InputError  # noqa: E402

TOKENS, LAYERS, HEADS = 40, 2, 4
MASKED_RECORDS = "mask" in inspect.signature(Record.from_logits).parameters  # the record model has supports


def _model(**extra):
    cfg = lens.HookedTransformerConfig(n_layers=LAYERS, d_model=64, n_ctx=64, d_head=16, n_heads=HEADS, d_vocab=100,
                                       act_fn="gelu", attn_only=False, seed=0, **extra)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return lens.HookedTransformer(cfg).eval()


@pytest.fixture(scope="module")
def causal():
    model = _model()
    tokens = torch.randint(0, 100, (1, TOKENS), generator=torch.Generator().manual_seed(1))
    with softrank.capture(model) as cap:
        model(tokens)
    _, cache = model.run_with_cache(tokens)
    return model, tokens, cap, cache


@pytest.fixture(scope="module")
def encoder():
    model = _model(attention_dir="bidirectional")
    tokens = torch.randint(0, 100, (1, TOKENS), generator=torch.Generator().manual_seed(2))
    _, cache = model.run_with_cache(tokens)
    return model, tokens, cache


def test_every_layer_and_head_is_the_models_causal_attention(causal):
    model, _, cap, cache = causal
    assert is_lens_model(model) and len(cap) == LAYERS and cap.refused == []
    worst = 0.0
    for live, cached in zip(cap.captures, calls_from_cache(cache), strict=True):
        assert live.module == cached.module == f"blocks.{live.layer}.attn"
        for head in range(HEADS):
            op = operators_for(live, head, 0)
            assert op.support == {"form": "causal", "offset": 0} and op.attention == "decoder-self"
            assert np.array_equal(op.mask, causal_mask(TOKENS, TOKENS, 0)) and op.positions() == [0, TOKENS]
            ref = cache["pattern", live.layer][0, head].numpy()
            a_hat = op.a_hat()
            assert np.all(a_hat[~op.mask] == 0.0) and np.all(ref[~op.mask] == 0.0)
            deviation = float(np.abs(a_hat - ref).max())  # the whole matrix, zeros included
            assert deviation <= 1e-5 and deviation == op.deviation
            assert np.array_equal(op.logits, operators_for(cached, head, 0).logits)  # live hooks == the cache
            worst = max(worst, deviation)
    print(f"transformer-lens causal: {LAYERS * HEADS} operators, largest deviation {worst:.2e}")


@pytest.mark.skipif(not MASKED_RECORDS, reason="the record model has no supports (Record.from_logits(mask=...)) yet")
def test_causal_records_carry_the_mask_and_provenance(causal):
    _, tokens, cap, cache = causal
    live, cached = cap.records(), softrank.records_from_cache(cache, tokens=tokens)
    assert [r.record_id for r in live] == [r.record_id for r in cached] and len(live) == LAYERS * HEADS
    for rec in cached:
        prov = rec.provenance
        assert rec.form == "logits" and rec.shape == (TOKENS, TOKENS) and rec.record_id.endswith("-native")
        assert prov["route"] == "transformer-lens" and prov["positions"] == [0, TOKENS]
        assert prov["support"] == "causal" and prov["capture_max_deviation"] <= 1e-5
        ref = cache["pattern", prov["layer"]][0, prov["head"]].numpy()
        assert np.abs(rec.a_hat - ref).max() <= 1e-5


def test_encoder_records_are_full_operators(encoder):
    _, tokens, cache = encoder
    recs = softrank.records_from_cache(cache, tokens=tokens)
    assert len(recs) == LAYERS * HEADS
    assert {(r.provenance["layer"], r.provenance["head"]) for r in recs} == \
        {(layer, head) for layer in range(LAYERS) for head in range(HEADS)}
    for rec in recs:
        prov = rec.provenance
        assert rec.form == "logits" and rec.shape == (TOKENS, TOKENS) and rec.record_id.endswith("-self")
        assert prov["route"] == "transformer-lens" and prov["attention"] == "encoder-self"
        assert prov["positions"] == [0, TOKENS] and "support" not in prov
        scores = cache["attn_scores", prov["layer"]][0, prov["head"]].numpy()
        assert np.array_equal(rec.logits, scores.astype(np.float64))  # the logits fed to the softmax
        ref = cache["pattern", prov["layer"]][0, prov["head"]].numpy()
        assert np.abs(rec.a_hat - ref).max() <= 1e-5 and prov["capture_max_deviation"] <= 1e-5
    default = softrank.records_from_cache(cache)
    assert default[0].record_id.startswith("custom-cache-L00-H00") and default[0].provenance["source_sha256"] is None


def test_left_padding_is_dropped():
    model = _model()
    tokens = torch.randint(0, 100, (2, TOKENS), generator=torch.Generator().manual_seed(3))
    mask = torch.ones(2, TOKENS, dtype=torch.long)
    mask[1, :10] = 0  # item 1: ten pad positions on the left
    with softrank.capture(model) as cap:
        model(tokens, attention_mask=mask)
    for call in cap.captures:
        for head in range(HEADS):
            full, padded = operators_for(call, head, 0), operators_for(call, head, 1)
            assert full.positions() == [0, TOKENS] and padded.positions() == [10, TOKENS]
            assert padded.support == {"form": "causal", "offset": 0} and padded.logits.shape == (30, 30)
            assert full.deviation <= 1e-5 and padded.deviation <= 1e-5


def test_a_pattern_that_disagrees_is_refused(encoder):
    _, _, cache = encoder
    names = dict(cache.cache_dict)
    bad = names["blocks.1.attn.hook_pattern"].clone()
    bad[0, 2] = bad[0, 2].roll(1, dims=-1)  # head 2 of layer 1 no longer the softmax of its scores
    names["blocks.1.attn.hook_pattern"] = bad
    with pytest.warns(CaptureWarning, match=r"blocks.1.attn \(layer 1, head 2.*deviates from hook_pattern"):
        recs = softrank.records_from_cache(names)
    assert len(recs) == LAYERS * HEADS - 1
    assert (1, 2) not in {(r.provenance["layer"], r.provenance["head"]) for r in recs}
    assert isinstance(operators_for(calls_from_cache(names)[1], 2, 0), Refusal)


def test_sinks_are_refused_and_hooks_removed():
    model = _model(use_attention_sinks=True)
    points = [p for n, p in model.hook_dict.items() if n.endswith(("hook_attn_scores", "hook_pattern"))]
    with pytest.warns(CaptureWarning, match="attention sinks"):
        with softrank.capture(model) as cap:
            model(torch.zeros(1, 5, dtype=torch.long))
    assert len(cap) == 0
    plain = _model()
    with pytest.raises(RuntimeError, match="inside"):
        with softrank.capture(plain):
            raise RuntimeError("inside")
    points = [p for n, p in plain.hook_dict.items() if n.endswith(("hook_attn_scores", "hook_pattern"))]
    assert points and all(not p._forward_hooks for p in points) and not plain._forward_pre_hooks


def test_bad_caches_are_input_errors(encoder):
    model, tokens, _ = encoder
    with pytest.raises(InputError, match="ActivationCache"):
        softrank.records_from_cache([1, 2])
    _, only_scores = model.run_with_cache(tokens, names_filter=lambda name: name.endswith("hook_attn_scores"))
    with pytest.raises(InputError, match="not blocks.0.attn.hook_pattern"):
        softrank.records_from_cache(only_scores)
    _, nothing = model.run_with_cache(tokens, names_filter=lambda name: name.endswith("hook_z"))
    with pytest.raises(InputError, match="no hook_attn_scores"):
        softrank.records_from_cache(nothing)


def test_without_torch_records_from_cache_names_the_extra():
    import subprocess
    import sys

    code = ("import sys\nsys.modules['torch'] = None\nimport softrank\ntry:\n    softrank.records_from_cache({})\n"
            "except ImportError as err:\n    print(err)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and "needs torch" in proc.stdout and "softrank[producer]" in proc.stdout


def test_a_hooked_encoder_with_right_padding():
    cfg = lens.HookedTransformerConfig(n_layers=LAYERS, d_model=64, n_ctx=64, d_head=16, n_heads=HEADS, d_vocab=100,
                                       act_fn="gelu", seed=0, attention_dir="bidirectional")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        encoder = lens.HookedEncoder(cfg).eval()
    torch.manual_seed(0)
    for p in encoder.parameters():  # a config-built HookedEncoder leaves its weights uninitialised
        torch.nn.init.normal_(p, std=0.1)
    tokens = torch.randint(0, 100, (2, 20), generator=torch.Generator().manual_seed(4))
    mask = torch.ones(2, 20, dtype=torch.long)
    mask[1, 12:] = 0  # item 1: 12 tokens, then padding (an additive -inf on the keys)
    with softrank.capture(encoder) as cap:
        encoder(tokens, one_zero_attention_mask=mask)
    recs = cap.records()
    assert len(recs) == LAYERS * HEADS * 2
    for rec in recs:
        item = rec.provenance["batch_item"]
        assert rec.shape == ((20, 20) if item == 0 else (12, 12)) and "support" not in rec.provenance
        assert rec.provenance["positions"] == [0, rec.shape[0]] and rec.provenance["capture_max_deviation"] <= 1e-5


def test_a_key_value_cache_prefix_is_the_support_offset():
    from transformer_lens.cache.key_value_cache import TransformerLensKeyValueCache

    model = _model()
    tokens = torch.randint(0, 100, (1, TOKENS), generator=torch.Generator().manual_seed(5))
    kv = TransformerLensKeyValueCache.init_cache(model.cfg, model.cfg.device, 1)
    model(tokens[:, :30], past_kv_cache=kv, attention_mask=torch.ones(1, 30, dtype=torch.long))
    with softrank.capture(model) as cap:  # 10 new queries over 40 keys
        model(tokens[:, 30:], past_kv_cache=kv, attention_mask=torch.ones(1, 10, dtype=torch.long))
    for call in cap.captures:
        for head in range(HEADS):
            op = operators_for(call, head, 0)
            assert op.logits.shape == (10, TOKENS) and op.support == {"form": "causal", "offset": 30}
            assert op.positions() == [30, TOKENS] and op.deviation <= 1e-5
