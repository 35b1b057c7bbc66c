"""Native masked operators of ``fastpath/capture/operators.py`` (``operators="native"|"both"``):
each causal or sliding-window self-attention call as the operator the model applies over the
item's tokens (support causal offset 0, or a window of w keys), checked against the model's own
eager ``output_attentions`` probabilities over the whole matrix, zeros included.  Config-built
tiny models (random weights), 40 tokens: Llama, Qwen2, GPT-2 (causal), Mistral with
sliding_window=16 and Gemma3 with local and global layers (windows on the local ones)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.api.records import Record
from softrank.fastpath.capture.dispatch import CaptureWarning, capturing
from softrank.fastpath.capture.operators import Operator, Refusal, operators_for, provenance, record_id, write_operator
from softrank.fastpath.store.support import causal_mask, window_mask
from softrank.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TOKENS = 40
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
KV = {"num_key_value_heads": 2, "max_position_embeddings": 64, "vocab_size": 97}
MASKED_RECORDS = "mask" in inspect.signature(Record.from_qk).parameters  # the checker's record model has supports


def _build(name):
    torch.manual_seed(0)
    if name == "llama":
        return transformers.LlamaModel(transformers.LlamaConfig(**KV, **SMALL)).eval()
    if name == "qwen2":
        return transformers.Qwen2Model(transformers.Qwen2Config(**KV, **SMALL)).eval()
    if name == "gpt2":
        return transformers.GPT2Model(transformers.GPT2Config(vocab_size=97, n_embd=32, n_layer=2, n_head=4,
                                                              n_positions=64)).eval()
    if name == "mistral":
        return transformers.MistralModel(transformers.MistralConfig(sliding_window=16, **KV, **SMALL)).eval()
    config = transformers.Gemma3TextConfig(head_dim=8, sliding_window=16, **KV, **SMALL,
                                           layer_types=["sliding_attention", "full_attention"])
    return transformers.Gemma3TextModel(config).eval()


# name -> the window of each layer (None: causal)
WINDOWS = {"llama": [None, None], "qwen2": [None, None], "gpt2": [None, None], "mistral": [16, 16],
           "gemma3": [16, None]}
DEVIATIONS: dict[str, tuple[int, float]] = {}


def _config_window(config, layer: int):
    """The window the config gives ``layer`` (``layer_types`` where the config has them), or None."""
    window = getattr(config, "sliding_window", None)
    types = getattr(config, "layer_types", None)
    if types is not None and types[layer] != "sliding_attention":
        return None
    return window if window is not None and window < TOKENS else None


def _ids():
    return torch.randint(3, 97, (1, TOKENS), generator=torch.Generator().manual_seed(0))


def _reference(model, ids):
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            return model(input_ids=ids, output_attentions=True).attentions
    finally:
        model.set_attn_implementation(before)


def _operators(model, ids, kinds, widths=(20,)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)
        with capturing(model) as session:
            model(input_ids=ids)
    return [(cap, op) for cap in session.captures for head in range(cap.num_heads)
            for op in operators_for(cap, head, list(widths), 0, operators=kinds)]


@pytest.mark.parametrize("name", sorted(WINDOWS))
def test_native_operators_are_the_models_masked_attention(name):
    model, ids = _build(name), _ids()
    found = _operators(model, ids, "native")
    ref = _reference(model, ids)
    assert all(isinstance(op, Operator) for _, op in found)  # no layer refused for its window
    assert len(found) == 2 * 4  # one per layer and head
    worst = 0.0
    for cap, op in found:
        window = WINDOWS[name][op.layer]
        assert _config_window(model.config, op.layer) == window  # the mask read from the call agrees with the config
        assert op.shape == (TOKENS, TOKENS) and op.attention == "decoder-self"
        expect = causal_mask(TOKENS, TOKENS, 0) if window is None else window_mask(TOKENS, TOKENS, window, 0)
        assert np.array_equal(op.mask, expect)
        assert op.support == ({"form": "causal", "offset": 0} if window is None else
                              {"form": "window", "size": window, "offset": 0})
        assert op.sliding_window == window  # the module's own window agrees with the mask it applied
        a_hat = op.a_hat()
        assert np.all(a_hat[~op.mask] == 0.0)
        dev = float(np.abs(a_hat - ref[op.layer][0, op.head].double().numpy()).max())  # whole matrix, zeros too
        assert dev < 1e-5 and op.deviation == pytest.approx(dev, abs=1e-12)
        worst = max(worst, dev)
    DEVIATIONS[name] = (len(found), worst)


def test_blocks_are_unchanged_and_both_gives_both():
    model, ids = _build("llama"), _ids()
    default = _operators(model, ids, "blocks")
    both = _operators(model, ids, "both")
    assert [record_id("t", "s", op) for _, op in default] == [record_id("t", "s", op) for _, op in both
                                                             if op.mask is None]
    blocks = [op for _, op in both if op.mask is None]
    for a, (_, b) in zip(blocks, default):
        assert a.mask is None and np.array_equal(a.queries, b.queries) and np.array_equal(a.a_hat(), b.a_hat())
        assert a.attention == "decoder-self-block" and a.shape == (20, 20)
    native = [op for _, op in both if op.mask is not None]
    assert len(native) == len(blocks) == 8
    ids_native = {record_id("t", "s", op) for op in native}
    assert all(r.endswith("-native") for r in ids_native) and not ids_native & {record_id("t", "s", op) for op in blocks}


def test_a_window_refuses_the_block_but_not_the_native_operator():
    model, ids = _build("mistral"), _ids()
    found = [op for _, op in _operators(model, ids, "both")]
    assert sum(isinstance(op, Refusal) and "sliding window" in op.reason for op in found) == 8
    assert sum(isinstance(op, Operator) and op.support["form"] == "window" for op in found) == 8
    with pytest.raises(ValueError, match="operators"):
        operators_for(_operators(model, ids, "native")[0][0], 0, [], 0, operators="all")


def test_native_records_are_written_with_their_support(tmp_path):
    import json

    model, ids = _build("gemma3"), _ids()
    for cap, op in _operators(model, ids, "native"):
        if op.head:
            continue
        prov = provenance(op, model="gemma3", family="gemma3_text", checkpoint_sha256=None, source_id="s",
                          source_sha256=None)
        rid = write_operator(tmp_path, record_id("g", "s", op), op, prov)
        doc = json.loads((tmp_path / "records" / rid / "record.json").read_text())
        assert doc["operator"]["support"] == op.support
        assert doc["provenance"]["support"] == op.support["form"] and doc["provenance"]["attention"] == "decoder-self"
        a_hat = np.load(tmp_path / "records" / rid / "arrays" / "a_hat.npy")
        assert np.all(a_hat[~op.mask] == 0.0) and np.allclose(a_hat.sum(axis=1), 1.0, atol=1e-12)


def test_a_bad_operators_value_is_an_input_error():
    model = _build("llama")
    with softrank.capture(model) as cap:
        model(input_ids=_ids())
    with pytest.raises(InputError, match="operators"):
        cap.records(operators="causal")


@pytest.mark.skipif(not MASKED_RECORDS, reason="the record model has no supports (Record.from_qk(mask=...)) yet")
@pytest.mark.parametrize("name", ["gpt2", "gemma3"])
def test_captured_records_carry_the_mask(name):
    model, ids = _build(name), _ids()
    with softrank.capture(model) as cap:
        model(input_ids=ids)
    ref = _reference(model, ids)
    recs = cap.records(operators="native")
    assert len(recs) == 8 and all(r.record_id.endswith("-native") for r in recs)
    for rec in recs:
        layer, head = rec.provenance["layer"], rec.provenance["head"]
        assert rec.mask is not None and rec.shape == (TOKENS, TOKENS)
        assert rec.support.form == rec.provenance["support"] == ("window" if WINDOWS[name][layer] else "causal")
        assert float(np.abs(rec.a_hat - ref[layer][0, head].double().numpy()).max()) < 1e-5
    blocks = cap.records()
    both = cap.records(operators="both")
    assert len(both) == len(blocks) + len(recs)  # Gemma3: no block of a local layer, its native operators
    assert {r.record_id for r in both} == {r.record_id for r in blocks} | {r.record_id for r in recs}


def test_report_deviations():
    """Per model: operators and largest deviation (``pytest -s`` prints them)."""
    for name, (count, worst) in sorted(DEVIATIONS.items()):
        print(f"native {name}: {count} records, largest deviation {worst:.2e}")
        assert worst < 1e-5
