"""The softmax route (``fastpath/capture/softmax_route.py``): models whose attention does not go
through transformers' attention interface are captured at the softmax, every record within 1e-5
of the model's own probabilities, or refused with a reason; never a wrong record.

Transformers models (tiny, built from configs, 40 tokens): XGLM and MPT (causal, one record per
layer, head and block), DeBERTa-v2 (disentangled position terms in the logits; with a padded
batch).  The red team: a softmax over the wrong axis, a temperature after the softmax, an
in-place change of the probabilities, dropout in training mode, the probabilities multiplied on
the wrong side, a float16 and a bfloat16 softmax, an ambiguous 3-d softmax, a fused kernel.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from helpers import capture_records

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.fastpath.capture.dispatch import CaptureWarning
from softrank.fastpath.float64 import rowsoftmax64

nn, F = torch.nn, torch.nn.functional
pytestmark = pytest.mark.usefixtures("one_torch_thread")
EXACT = 1e-5
TOKENS = 40


def _ids(batch=1, tokens=TOKENS):
    return torch.randint(3, 97, (batch, tokens), generator=torch.Generator().manual_seed(0))


def _build(cls, config):
    torch.manual_seed(0)
    return cls(config).eval()


MODELS = {
    "xglm": lambda: _build(transformers.XGLMModel, transformers.XGLMConfig(
        vocab_size=97, d_model=32, num_layers=2, attention_heads=4, ffn_dim=37, max_position_embeddings=64)),
    "mpt": lambda: _build(transformers.MptModel, transformers.MptConfig(
        vocab_size=97, d_model=32, n_layers=2, n_heads=4, max_seq_len=64)),
    "deberta-v2": lambda: _build(transformers.DebertaV2Model, transformers.DebertaV2Config(
        vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64, relative_attention=True, pos_att_type=["c2p", "p2c"], position_buckets=8,
        max_relative_positions=16)),
}


def _capture(model, *args, **kwargs):
    """Capture one pass; (records, warnings)."""
    _, recs, warned = capture_records(model, *args, **kwargs)
    return recs, warned


def _block(probs, rec, valid=None):
    """The model's probabilities on the record's rows and columns (renormalised for a block)."""
    p = probs[rec.provenance["batch_item"], rec.provenance["head"]].double().numpy()
    idx = np.arange(p.shape[-1]) if valid is None else valid
    p = p[np.ix_(idx, idx)]
    if rec.provenance["attention"] == "decoder-self-block":
        start, stop = rec.provenance["positions"]
        p = p[start:stop, :rec.provenance["block_width"]]
    return p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_outside_the_interface_are_captured_at_the_softmax(name):
    model = MODELS[name]()
    recs, warned = _capture(model, input_ids=_ids())
    assert warned == []
    with torch.no_grad():
        ref = model(input_ids=_ids(), output_attentions=True).attentions
    assert len(recs) == 2 * 4 and len({r.record_id for r in recs}) == len(recs)
    assert {(r.provenance["layer"], r.provenance["head"]) for r in recs} == {(l, h) for l in range(2) for h in range(4)}
    worst = 0.0
    for rec in recs:
        assert rec.provenance["route"] == "softmax" and rec.form == "logits"
        assert np.array_equal(rowsoftmax64(rec.logits), rec.a_hat)
        worst = max(worst, float(np.abs(rec.a_hat - _block(ref[rec.provenance["layer"]], rec)).max()))
        assert rec.provenance["capture_max_deviation"] <= EXACT
        assert rec.provenance["capture_softmax_deviation"] <= EXACT
    assert worst < EXACT, (name, worst)
    kinds = {r.provenance["attention"] for r in recs}
    assert kinds == ({"encoder-self"} if name == "deberta-v2" else {"decoder-self-block"})


def test_a_padded_batch_drops_the_padding():
    model = MODELS["deberta-v2"]()
    ids = _ids(batch=2)
    mask = torch.ones_like(ids)
    mask[1, 30:] = 0
    recs, warned = _capture(model, input_ids=ids, attention_mask=mask)
    assert warned == []
    with torch.no_grad():
        ref = model(input_ids=ids, attention_mask=mask, output_attentions=True).attentions
    assert len(recs) == 2 * 2 * 4
    for rec in recs:
        b = rec.provenance["batch_item"]
        valid = np.arange(TOKENS if b == 0 else 30)
        assert rec.shape == (len(valid), len(valid))
        assert float(np.abs(rec.a_hat - _block(ref[rec.provenance["layer"]], rec, valid)).max()) < EXACT


# float16 / bfloat16: captured where the softmax evaluates in float32 from the half logits, else refused
LOW_PRECISION = {("xglm", "float16"): 8, ("xglm", "bfloat16"): 0, ("mpt", "float16"): 8, ("mpt", "bfloat16"): 8,
                 ("deberta-v2", "float16"): 0, ("deberta-v2", "bfloat16"): 0}


@pytest.mark.parametrize("name,dtype", sorted(LOW_PRECISION))
def test_low_precision_models_are_captured_or_refused(name, dtype):
    model = MODELS[name]().to(getattr(torch, dtype))
    recs, warned = _capture(model, input_ids=_ids())
    assert len(recs) == LOW_PRECISION[(name, dtype)]
    if not recs:
        assert len(warned) == 2 and all(f"softmax evaluated in {dtype}" in w for w in warned)
        return
    assert warned == [] and {r.provenance["capture_dtype"] for r in recs} == {dtype}
    with torch.no_grad():
        ref = model(input_ids=_ids(), output_attentions=True).attentions
    for rec in recs:  # the model's probabilities are rounded to its dtype: within its tolerance
        dev = float(np.abs(rec.a_hat - _block(ref[rec.provenance["layer"]].float(), rec)).max())
        assert dev <= rec.provenance["capture_tolerance"] and dev < 2e-3


def test_the_interface_route_is_still_first():
    model = _build(transformers.LlamaModel, transformers.LlamaConfig(
        vocab_size=97, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37,
        max_position_embeddings=64))
    recs, warned = _capture(model, input_ids=_ids())
    assert warned == [] and len(recs) == 4
    assert {r.provenance.get("route") for r in recs} == {None} and {r.form for r in recs} == {"qk"}  # the interface route


class Probe(nn.Module):
    """A user's attention module computing its softmax by hand, with one fault chosen by ``mode``."""

    def __init__(self, mode="ok"):
        super().__init__()
        torch.manual_seed(1)
        self.qkv = nn.Linear(32, 96)
        self.drop = nn.Dropout(0.5)
        self.mode = mode
        self.num_heads = 4

    def forward(self, x):
        x = x[None] if x.dim() == 2 else x
        q, k, v = self.qkv(x).view(x.shape[0], -1, 3, 4, 8).permute(2, 0, 3, 1, 4)
        h = q @ k.transpose(-1, -2) / math.sqrt(8)
        mode = self.mode
        a = {"axis": lambda: h.softmax(-2), "float16": lambda: h.half().softmax(-1).float(),
             "bfloat16": lambda: F.softmax(h.bfloat16(), dim=-1).float(),
             "bfloat16-upcast": lambda: torch.softmax(h.bfloat16(), -1, dtype=torch.float32),
             "3d": lambda: F.softmax(h.reshape(-1, h.shape[-2], h.shape[-1]), dim=-1)}.get(mode, lambda: F.softmax(h, -1))()
        if mode == "input-changed":  # the logits change after the softmax read them: the record is what it read
            h.add_(torch.randn_like(h))
        if mode == "temperature":
            a = a / 0.7
        if mode == "in-place":
            a.mul_(1.5)
        if mode == "masked-after":
            a = a.masked_fill(torch.ones_like(a, dtype=torch.bool).triu(1), 0.0)
        if mode == "dropout":
            a = self.drop(a)
        if mode == "wrong-side":
            return v.transpose(-1, -2) @ a
        if mode == "3d":
            return torch.bmm(a, v.reshape(-1, v.shape[-2], v.shape[-1]))
        if mode == "einsum":
            return torch.einsum("bhqk,bhkd->bhqd", a, v)
        return a @ v


def _probe_reference(model, x):
    q, k, _ = model.qkv(x).view(x.shape[0], -1, 3, 4, 8).permute(2, 0, 3, 1, 4)
    return torch.softmax(q.double() @ k.double().transpose(-1, -2) / math.sqrt(8), dim=-1).numpy()


@pytest.mark.parametrize("mode", ["ok", "einsum", "bfloat16-upcast", "3d", "input-changed"])
def test_a_users_softmax_is_captured(mode):
    model, x = Probe(mode).eval(), torch.randn(1, TOKENS, 32, generator=torch.Generator().manual_seed(2))
    recs, warned = _capture(model, x)
    assert warned == [] and len(recs) == 4
    if mode == "bfloat16-upcast":  # the record holds the bfloat16 logits exactly
        assert {r.provenance["capture_dtype"] for r in recs} == {"bfloat16"}
        with torch.no_grad():
            q, k, _ = model.qkv(x).view(1, -1, 3, 4, 8).permute(2, 0, 3, 1, 4)
            ref = torch.softmax((q @ k.transpose(-1, -2) / math.sqrt(8)).bfloat16().double(), dim=-1).numpy()
    else:
        with torch.no_grad():
            ref = _probe_reference(model, x)
    for rec in recs:
        assert float(np.abs(rec.a_hat - ref[0, rec.provenance["head"]]).max()) < EXACT


RED_TEAM = {
    "axis": "not the key axis",
    "temperature": "changed (div)",
    "in-place": "changed in place",
    "masked-after": "changed (masked_fill)",
    "dropout": "dropout 0.5 in training mode",
    "wrong-side": "wrong side",
    "float16": "softmax evaluated in float16",
    "bfloat16": "softmax evaluated in bfloat16",
}


@pytest.mark.parametrize("mode", sorted(RED_TEAM))
def test_red_team_gives_no_record(mode):
    model = Probe(mode)
    model.train(mode == "dropout")
    recs, warned = _capture(model, torch.randn(1, TOKENS, 32))
    assert recs == []
    assert len(warned) == 1 and RED_TEAM[mode] in warned[0] and "Probe" in warned[0], warned


def test_an_ambiguous_3d_softmax_is_refused():
    model = Probe("3d").eval()
    del model.num_heads
    recs, warned = _capture(model, torch.randn(2, TOKENS, 32))  # 8 rows: the input's batch of 2 tells them apart
    assert warned == [] and len(recs) == 2 * 4
    recs, warned = _capture(model, torch.randn(TOKENS, 32))  # unbatched input: 4 rows, batch and heads unknown
    assert recs == [] and len(warned) == 1 and "cannot be told apart" in warned[0]


class Fused(nn.Module):
    """An attention module whose kernel forms no logits."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(x[:, None], x[:, None], x[:, None])[0]


class FusedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Fused()

    def forward(self, x):
        return self.inner(x)


def test_a_fused_kernel_and_a_router_give_nothing():
    recs, warned = _capture(FusedAttention().eval(), torch.randn(1, TOKENS, 32))
    assert recs == [] and len(warned) == 1 and "fused kernel with no logits" in warned[0]

    class Router(nn.Module):  # a softmax that is not attention: ignored, with the no-attention warning
        def forward(self, x):
            return x * F.softmax(x, dim=-1)

    recs, warned = _capture(Router(), torch.randn(1, TOKENS, 32))
    assert recs == [] and len(warned) == 1 and "no attention call reached the capture" in warned[0]


def test_the_mode_and_hooks_are_gone_after_the_block():
    model = Probe().eval()
    x = torch.randn(1, TOKENS, 32)
    with pytest.raises(RuntimeError, match="boom"), softrank.capture(model), torch.no_grad():
        model(x)
        raise RuntimeError("boom")
    assert not torch.overrides._is_torch_function_mode_enabled()
    assert not model._forward_hooks and not model._forward_pre_hooks and not model.qkv._forward_hooks
    with softrank.capture(model) as cap, torch.no_grad():
        model(x)
    assert len(cap.captures) == 1 and not torch.overrides._is_torch_function_mode_enabled()


def test_softrank_run_on_saved_xglm_and_deberta(tmp_path, capsys):
    from softrank.cli import main
    from softrank.replay.reader import list_records, read_record

    texts = tmp_path / "texts.txt"
    texts.write_text("The first paragraph is about attention operators and their rank.\n\n"
                     "A second paragraph, a little longer, about low-rank certificates for softmax attention.\n")
    torch.manual_seed(0)
    saved = {"xglm": transformers.XGLMForCausalLM(transformers.XGLMConfig(
        vocab_size=99, d_model=32, num_layers=2, attention_heads=4, ffn_dim=37, max_position_embeddings=128)),
        "deberta-v2": transformers.DebertaV2ForMaskedLM(transformers.DebertaV2Config(
            vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=128, relative_attention=True, pos_att_type=["c2p", "p2c"], position_buckets=8,
            max_relative_positions=16))}
    for name, model in saved.items():
        folder = tmp_path / f"tiny-{name}"
        model.save_pretrained(folder)
        out = tmp_path / f"out-{name}"
        code = main(["run", "--model", str(folder), "--texts", str(texts), "--layers", "1", "--heads", "0,3",
                     "--eps", "0.25", "--jobs", "1", "--out", str(out), "--no-progress"])
        assert code == 0, capsys.readouterr().err
        records = [read_record(p) for p in list_records(out / "store")]
        assert len(records) == 4 and {r.provenance["route"] for r in records} == {"softmax"}
        assert all(r.provenance["capture_max_deviation"] < EXACT for r in records)
        assert (out / "report.html").is_file()


@pytest.mark.parametrize("name", ["xglm", "mpt"])
def test_native_operators_through_extraction(name, tmp_path):
    from softrank.fastpath.capture.extract import extract_to_store
    from softrank.fastpath.capture.models import wrap_model
    from softrank.replay.reader import read_record

    model = MODELS[name]()
    with pytest.warns(UserWarning, match="byte"):
        lm = wrap_model(model, name=name)
    ids = extract_to_store(lm, tmp_path, sources=1, tokens=TOKENS, operators="native")
    recs = [read_record(tmp_path / "records" / rid) for rid in ids]
    assert len(recs) == 2 * 4 and {r.provenance["support"] for r in recs} == {"causal"}
    passage = _first_passage()
    assert {r.provenance["source_id"] for r in recs} == {passage.source_id}
    text_ids = torch.tensor([lm.encode_text(passage.text, TOKENS)])
    with torch.no_grad():
        ref = model(input_ids=text_ids, output_attentions=True).attentions
    for rec in recs:  # the whole matrix, zeros included
        p = ref[rec.provenance["layer"]][0, rec.provenance["head"]].double().numpy()
        assert rec.shape == (TOKENS, TOKENS) and float(np.abs(rec.a_hat - p).max()) < EXACT


def _first_passage():
    from softrank.fastpath.capture.sources import stdlib_passages

    return stdlib_passages(1, 0)[0]


def test_a_call_the_route_cannot_read_is_refused_and_the_pass_goes_on(monkeypatch):
    from softrank.fastpath.capture import softmax_route

    def boom(_):
        raise TypeError("unreadable")

    model, x = Probe().eval(), torch.randn(1, TOKENS, 32)
    with torch.no_grad():
        expected = model(x)
    monkeypatch.setattr(softmax_route, "hidden_entries", boom)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with softrank.capture(model) as cap, torch.no_grad():
            out = model(x)
    assert torch.equal(out, expected) and cap.records() == []
    warned = [str(w.message) for w in caught if issubclass(w.category, CaptureWarning)]
    assert len(warned) == 1 and "cannot read a softmax call (TypeError: unreadable)" in warned[0]


def test_a_transformers_model_in_training_mode_with_attention_dropout_is_refused():
    torch.manual_seed(0)
    model = transformers.XGLMModel(transformers.XGLMConfig(
        vocab_size=97, d_model=32, num_layers=2, attention_heads=4, ffn_dim=37, max_position_embeddings=64,
        attention_dropout=0.1)).train()
    recs, warned = _capture(model, input_ids=_ids())
    assert recs == [] and len(warned) == 2 and all("dropout 0.1 in training mode" in w for w in warned)
