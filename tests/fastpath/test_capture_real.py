"""Capture is exact on both real checkpoints: all-MiniLM-L6-v2 (BERT)
and SmolLM2-135M-Instruct (Llama, GGUF, grouped heads), on a short text; and extracted records
reproduce the model's (renormalised) attention.  Each model is loaded once per session."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from softrank.fastpath.capture.dispatch import CAPTURE_IMPLEMENTATION, capturing  # noqa: E402
from softrank.fastpath.capture.extract import extract_to_store  # noqa: E402
from softrank.fastpath.float64 import rowsoftmax64  # noqa: E402
from softrank.fastpath.capture.models import load_model  # noqa: E402
from softrank.fastpath.capture.sources import stdlib_passages  # noqa: E402
from softrank.replay.reader import list_records, read_record  # noqa: E402

TOL = 1e-5


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def minilm():
    return load_model("minilm", device="cpu")


@pytest.fixture(scope="session")
def smollm2():
    return load_model("smollm2", device="cpu")


@pytest.fixture(scope="module")
def passage():
    return stdlib_passages(1, seed=3)[0]


def _both(lm, ids):
    """(reference attentions under eager, captures) for one pass of token ids."""
    x = torch.tensor([ids])
    body = lm.model.base_model
    lm.model.set_attn_implementation("eager")
    try:
        with torch.no_grad():
            ref = body(input_ids=x, output_attentions=True, use_cache=False).attentions
    finally:
        lm.model.set_attn_implementation(CAPTURE_IMPLEMENTATION)
    with capturing(lm.model, lm.family) as session:
        body(input_ids=x, use_cache=False)
    return ref, session.captures


def _check_all_heads(ref, caps):
    worst = 0.0
    assert len(caps) == len(ref)
    for cap, probs in zip(caps, ref):
        masked = cap.head_masked()
        for h in range(cap.num_heads):
            mine = rowsoftmax64(np.where(masked, -np.inf, cap.logits(h)))
            worst = max(worst, float(np.abs(mine - probs[0, h].double().numpy()).max()))
    return worst


def test_minilm_capture_exact(minilm, passage):
    ids = minilm.encode_text(passage.text, 48)
    assert len(ids) == 48
    ref, caps = _both(minilm, ids)
    assert len(caps) == 6 and all(c.num_heads == 12 and c.attention == "encoder-self" for c in caps)
    assert _check_all_heads(ref, caps) < TOL


def test_smollm2_capture_exact(smollm2, passage):
    ids = smollm2.encode_text(passage.text, 48)
    assert len(ids) == 48
    ref, caps = _both(smollm2, ids)
    assert len(caps) == 30
    assert all(c.num_heads == 9 and c.n_rep == 3 and c.attention == "decoder-self" for c in caps)
    assert all(c.head_masked().sum() == 48 * 47 // 2 for c in caps)  # causal mask captured
    assert _check_all_heads(ref, caps) < TOL


def test_extracted_records_reproduce_model(minilm, smollm2, passage, tmp_path):
    """Records written by extract_to_store: provenance, shapes, and a_hat equal to the model's
    attention (full for MiniLM, renormalised N = 16 block for SmolLM2)."""
    text = [("text:short", passage.text)]
    for lm, opts in ((minilm, {"tokens": 40}), (smollm2, {"tokens": 40, "widths": [16]})):
        store = tmp_path / lm.tag
        ids = extract_to_store(lm, store, texts=text, layers=[1, 4], max_operators=4, seed=1, **opts)
        assert len(ids) == 4 and sorted(ids) == [p.name for p in list_records(store)]
        assert (store / "index.csv").read_text().count("\n") == 5
        tokens = lm.encode_text(passage.text, 40)
        ref, _ = _both(lm, tokens)
        for rid in ids:
            rec = read_record(store / "records" / rid)
            prov = rec.provenance
            assert prov["model"] == lm.name and len(prov["checkpoint_sha256"]) == 64
            assert prov["source_id"] == "text:short" and prov["layer"] in (1, 4)
            assert rec.form == "qk" and rec.tolerances == [] and rec.bias is None
            probs = ref[prov["layer"]][0, prov["head"]].double().numpy()
            if lm is minilm:
                assert rec.shape == (40, 40) and prov["attention"] == "encoder-self" and prov["block_width"] is None
                target = probs
            else:
                assert rec.shape == (16, 16) and prov["attention"] == "decoder-self-block"
                assert prov["block_width"] == 16 and prov["positions"] == [24, 40]
                block = probs[24:, :16]
                target = block / block.sum(axis=1, keepdims=True)
            assert np.abs(rec.a_hat - target).max() < TOL
            # a_hat is the float64 rowsoftmax of the float64 logits of the stored numbers
            logits = rec.scale * (rec.queries @ rec.keys.T)
            assert np.abs(rec.a_hat - rowsoftmax64(logits)).max() < 1e-14


@pytest.mark.slow
def test_default_panels(minilm, smollm2, tmp_path):
    """The panel softrank run needs: >= 64 MiniLM 256 x 256 and >= 54 SmolLM2 N = 128 blocks."""
    ids = extract_to_store(minilm, tmp_path / "m")
    shapes = {read_record(tmp_path / "m" / "records" / r).shape for r in ids}
    assert len(ids) >= 64 and shapes == {(256, 256)}
    ids = extract_to_store(smollm2, tmp_path / "s")
    recs = [read_record(tmp_path / "s" / "records" / r) for r in ids]
    assert len(ids) >= 54 and {r.shape for r in recs} == {(128, 128)}
    assert all(r.provenance["pass_tokens"] >= 255 for r in recs)
    assert len({r.provenance["layer"] for r in recs}) >= 20 and len({r.provenance["head"] for r in recs}) == 9


@pytest.mark.slow
def test_gguf_cache_gives_identical_model(tmp_path, monkeypatch):
    """The de-quantized GGUF cache loads the same weights and tokenizer as the GGUF file."""
    monkeypatch.setenv("SOFTRANK_CACHE", str(tmp_path))
    first = load_model("smollm2", device="cpu")  # from the GGUF file; writes the cache
    second = load_model("smollm2", device="cpu")  # from the cache
    assert "checkpoint_cache" not in first.extra and "checkpoint_cache" in second.extra
    assert first.checkpoint_sha256 == second.checkpoint_sha256
    a, b = first.model.state_dict(), second.model.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    text = stdlib_passages(1, seed=5)[0].text
    assert first.encode_text(text, 300) == second.encode_text(text, 300)
