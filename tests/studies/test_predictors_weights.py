"""Weight-space norms of W_q,h^T W_k,h: against the explicitly formed matrix (grouped-query heads
included), on tiny BERT and Llama models built from configs (the architectures of the two text
checkpoints), and the names a record or a panel gives the checkpoints."""

from __future__ import annotations

import numpy as np
import pytest

from softrank.studies.predictors.weights import head_norms, model_name, model_weight_norms


def _explicit(wq, wk, h, g, d):
    s = np.linalg.svd(wq[h * d:(h + 1) * d].T @ wk[g * d:(g + 1) * d], compute_uv=False)
    return {"c_wqk_fro": np.sqrt((s * s).sum()), "c_wqk_spec": s[0], "c_wqk_nuc": s.sum()}


@pytest.mark.parametrize("heads,kv", [(4, 4), (6, 2)])
def test_head_norms_match_the_formed_matrix(heads, kv):
    rng = np.random.default_rng(0)
    d, dim = 3, 20
    wq, wk = rng.normal(size=(heads * d, dim)), rng.normal(size=(kv * d, dim))
    got = head_norms(wq, wk, heads, kv)
    assert len(got) == heads
    for h, norms in enumerate(got):
        want = _explicit(wq, wk, h, h // (heads // kv), d)
        for key, value in want.items():
            assert norms[key] == pytest.approx(value, rel=1e-10)
    if kv < heads:  # grouped heads: query heads 3, 4, 5 read key head 1, not key head 0
        assert got[3]["c_wqk_nuc"] == pytest.approx(_explicit(wq, wk, 3, 1, d)["c_wqk_nuc"], rel=1e-10)
        assert got[3]["c_wqk_nuc"] != pytest.approx(_explicit(wq, wk, 3, 0, d)["c_wqk_nuc"], rel=1e-3)


def test_rank_one_head_has_equal_norms():
    wq = np.zeros((2, 5))
    wk = np.zeros((2, 5))
    wq[0, 1], wk[0, 3] = 2.0, 3.0  # M = 6 e_1 e_3^T
    (n,) = head_norms(wq, wk, 1)
    assert n == {"c_wqk_fro": 6.0, "c_wqk_spec": 6.0, "c_wqk_nuc": 6.0}


def test_head_norms_refuse_shapes_that_do_not_split():
    with pytest.raises(ValueError):
        head_norms(np.zeros((6, 4)), np.zeros((6, 4)), 4)
    with pytest.raises(ValueError):
        head_norms(np.zeros((6, 4)), np.zeros((4, 4)), 3, 2)


def test_model_names():
    assert model_name("all-MiniLM-L6-v2") == "minilm" and model_name("SmolLM2-135M") == "smollm2"
    assert model_name("minilm") == "minilm" and model_name("/some/ckpt") == "/some/ckpt"


def test_tiny_bert_and_llama_from_configs():
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    bert = transformers.BertModel(transformers.BertConfig(
        vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=8))
    norms = model_weight_norms(bert, 4)
    assert sorted(norms) == [(layer, h) for layer in range(2) for h in range(4)]
    att = bert.encoder.layer[1].attention.self
    wq, wk = att.query.weight.detach().double().numpy(), att.key.weight.detach().double().numpy()
    assert norms[(1, 2)]["c_wqk_spec"] == pytest.approx(_explicit(wq, wk, 2, 2, 4)["c_wqk_spec"], rel=1e-9)

    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=50, hidden_size=24, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2,
        intermediate_size=8))
    norms = model_weight_norms(llama, 6, 2)
    assert sorted(norms) == [(layer, h) for layer in range(3) for h in range(6)]
    att = llama.model.layers[2].self_attn
    wq, wk = att.q_proj.weight.detach().double().numpy(), att.k_proj.weight.detach().double().numpy()
    assert norms[(2, 5)]["c_wqk_fro"] == pytest.approx(_explicit(wq, wk, 5, 1, 4)["c_wqk_fro"], rel=1e-9)


def test_weight_norms_loads_once_through_the_producers_loader(monkeypatch):
    """``weight_norms`` maps a panel label to the loader's name, reads the grouped heads from the
    config, and loads each checkpoint once (a tiny Llama stands in for SmolLM2-135M)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from softrank.fastpath.capture import models
    from softrank.studies.predictors import weights

    torch.manual_seed(1)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=50, hidden_size=24, num_hidden_layers=2, num_attention_heads=6, num_key_value_heads=3,
        intermediate_size=8))
    calls = []

    def fake_load(name, device=None):
        calls.append((name, device))
        return models.wrap_model(llama, name=name, tokenizer=object())  # no tokenizer is needed here

    monkeypatch.setattr(models, "load_model", fake_load)
    monkeypatch.setattr(weights, "_MEMO", {})
    norms = weights.weight_norms("SmolLM2-135M")
    assert weights.weight_norms("smollm2") is norms and calls == [("smollm2", "cpu")]
    assert norms == model_weight_norms(llama, 6, 3) and len(norms) == 12
