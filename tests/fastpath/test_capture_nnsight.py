"""A transformers model wrapped by nnsight (``nnsight.LanguageModel``) is captured through its
underlying module (``fastpath/capture/lens.py``: ``unwrap``): a small Llama built from a config
and an in-memory word-level tokenizer (no download), run by ``lm.trace``; its records are those
of the same model run without nnsight."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
nnsight = pytest.importorskip("nnsight", reason="nnsight is not installed (the 'lens' extra)")
tokenizers = pytest.importorskip("tokenizers")

import softrank  # noqa: E402
from softrank.fastpath.capture.lens import unwrap  # noqa: E402

WORDS = 100
TEXT = " ".join(f"w{(7 * i) % WORDS}" for i in range(40))


@pytest.fixture(scope="module")
def wrapped():
    vocab = {f"w{i}": i for i in range(WORDS)} | {"[UNK]": WORDS}
    raw = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    raw.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="[UNK]", pad_token="[UNK]")
    cfg = transformers.LlamaConfig(vocab_size=WORDS + 1, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(cfg).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nnsight's deprecation notice for LanguageModel
        lm = nnsight.LanguageModel(model, tokenizer=tok)
    return lm, model, tok


def _by_operator(records):
    return {(r.provenance["layer"], r.provenance["head"]): r for r in records}


@pytest.mark.parametrize("target", ["wrapper", "module"])
def test_an_nnsight_model_is_captured_through_its_module(wrapped, target):
    lm, model, tok = wrapped
    assert unwrap(lm) is model and unwrap(model) is model
    with softrank.capture(lm if target == "wrapper" else lm._module) as cap:
        with lm.trace(TEXT):
            lm.output.save()
    got = _by_operator(cap.records())
    with softrank.capture(model) as plain:
        model(**tok(TEXT, return_tensors="pt"))
    want = _by_operator(plain.records())
    assert len(got) == 2 * 4 and got.keys() == want.keys()
    for key, rec in got.items():
        assert rec.provenance["capture_max_deviation"] <= 1e-5 and rec.provenance["block_width"] == 20
        assert np.array_equal(rec.a_hat, want[key].a_hat) and np.array_equal(rec.queries, want[key].queries)
    assert model.config._attn_implementation != "softrank_capture"  # the model's own setting is back

