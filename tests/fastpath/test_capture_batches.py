"""Batches and padding: every batch item gives its own records over its valid tokens only (right
or left padding; an encoder and a decoder), each compared with the model's eager attention; record
ids are unique per model, input, batch item, layer, head and block; ``records(batch=...)`` out of
range is a clear error; two captures written to one store lose nothing, and ``Store.write`` never
replaces a different record unless asked (``overwrite=True``)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import softrank
from softrank.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
LENGTHS = (14, 30, 22)
TOKENS = 30


def _bert():
    torch.manual_seed(0)
    return transformers.BertModel(transformers.BertConfig(vocab_size=97, max_position_embeddings=64, **SMALL)).eval()


def _llama():
    torch.manual_seed(1)
    return transformers.LlamaModel(transformers.LlamaConfig(vocab_size=97, num_key_value_heads=2,
                                                            max_position_embeddings=64, **SMALL)).eval()


def _batch(side: str, seed: int = 0):
    ids = torch.randint(3, 97, (len(LENGTHS), TOKENS), generator=torch.Generator().manual_seed(seed))
    mask = torch.zeros_like(ids)
    for i, n in enumerate(LENGTHS):
        if side == "right":
            mask[i, :n] = 1
        else:
            mask[i, TOKENS - n:] = 1
    return ids, mask


def _eager_probs(model, ids, mask):
    before = model.config._attn_implementation
    model.set_attn_implementation("eager")
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_attentions=True)
    model.set_attn_implementation(before)
    return out.attentions


@pytest.mark.parametrize("side", ["right", "left"])
@pytest.mark.parametrize("make, kind", [(_bert, "encoder"), (_llama, "decoder")])
def test_padded_batch_gives_records_of_valid_tokens_per_item(make, kind, side):
    model = make()
    ids, mask = _batch(side)
    with softrank.capture(model) as cap, torch.no_grad():
        model(input_ids=ids, attention_mask=mask)
    recs = cap.records()
    ref = _eager_probs(model, ids, mask)
    per_item = 2 * 4  # layers x heads, one operator each (the widest block for the decoder)
    assert len(recs) == len(LENGTHS) * per_item and len({r.record_id for r in recs}) == len(recs)
    for rec in recs:
        prov = rec.provenance
        b, n = prov["batch_item"], LENGTHS[prov["batch_item"]]
        assert f"-b{b}-" in rec.record_id and prov["pass_tokens"] == n
        valid = np.flatnonzero(mask[b].numpy())
        probs = ref[prov["layer"]][b, prov["head"]].double().numpy()
        if kind == "encoder":
            assert rec.shape == (n, n) and prov["attention"] == "encoder-self"
            rows = cols = valid
        else:
            width = (n + 1) // 2
            assert rec.shape == (width, width) and prov["positions"] == [n - width, n]
            rows, cols = valid[n - width:], valid[:width]
        block = probs[np.ix_(rows, cols)]
        assert np.abs(rec.a_hat - block / block.sum(axis=1, keepdims=True)).max() < 1e-6
    # one item at a time gives the same records; an item out of range is a clear error
    assert [r.record_id for r in cap.records(batch=2)] == [r.record_id for r in recs if r.provenance["batch_item"] == 2]
    with pytest.raises(InputError, match="batch item 5 out of range: the capture holds 3 batch items"):
        cap.records(batch=5)


def test_two_captures_in_one_store_lose_nothing(tmp_path):
    model = _bert()
    store = softrank.Store(tmp_path / "store")
    written = []
    for side in ("right", "left"):
        ids, mask = _batch(side)
        with softrank.capture(model) as cap, torch.no_grad():
            model(input_ids=ids, attention_mask=mask)
        recs = cap.records()
        written += store.write_all(recs)
        assert store.write_all(recs) == [r.record_id for r in recs]  # the same records again: nothing changes
    assert len(written) == 48 and len(set(written)) == 48 and len(store) == 48
    # a single-item batch has no item part in its ids
    with softrank.capture(model) as cap, torch.no_grad():
        model(input_ids=_batch("right")[0][:1])
    single = cap.records(heads=[0])
    assert all("-b0-" not in r.record_id for r in single) and single[0].record_id.endswith("-L00-H00-self")


def test_store_write_does_not_replace_a_different_record(tmp_path):
    store = softrank.Store(tmp_path / "store")
    rng = np.random.default_rng(0)
    first = softrank.Record.from_logits(rng.normal(size=(6, 6)), record_id="same-id")
    other = softrank.Record.from_logits(rng.normal(size=(6, 6)), record_id="same-id")
    store.write(first)
    store.write(first)  # the same record: nothing changes, no error
    with pytest.raises(InputError) as err:
        store.write(other)
    assert "different record with this id" in err.value.one_line() and "overwrite=True" in err.value.one_line()
    assert "\n" not in err.value.one_line()
    assert np.array_equal(store["same-id"].logits, first.logits)
    assert not [p for p in (tmp_path / "store" / "records").iterdir() if p.name.startswith(".")]  # no temporaries
    store.write(other, overwrite=True)
    assert np.array_equal(store["same-id"].logits, other.logits) and len(store) == 1
