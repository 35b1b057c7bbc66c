"""Extraction from local checkpoints of every family, and bad input: unknown model path, a model
without attention capture support, a pass too short for the requested block width, empty text ->
one line on stderr, exit code 2.

The checkpoints are small models built from configs and saved to a temporary folder (no
tokenizer: the byte-level stand-in of ``LoadedModel.encode_text`` supplies token ids)."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.cli import main
from softrank.fastpath.capture.extract import extract_to_store, spread_pairs
from softrank.replay.reader import read_record
from softrank.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _save(root, name, model):
    path = root / name
    model.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("ckpt")
    torch.manual_seed(0)
    small = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}
    out = {
        "bert": transformers.BertModel(transformers.BertConfig(vocab_size=99, max_position_embeddings=128, **small)),
        "llama": transformers.LlamaForCausalLM(transformers.LlamaConfig(
            vocab_size=99, max_position_embeddings=128, num_key_value_heads=2, **small)),
        "qwen2": transformers.Qwen2Model(transformers.Qwen2Config(
            vocab_size=99, max_position_embeddings=128, num_key_value_heads=1, **small)),
        "gpt2": transformers.GPT2Model(transformers.GPT2Config(vocab_size=99, n_embd=32, n_layer=2, n_head=4,
                                                               n_positions=128)),
        "vit": transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=8, **small)),
        "t5": transformers.T5ForConditionalGeneration(transformers.T5Config(
            vocab_size=99, d_model=32, d_kv=8, d_ff=37, num_layers=2, num_heads=4, decoder_start_token_id=0)),
        "blip2": transformers.Blip2Model(transformers.Blip2Config(
            vision_config={"image_size": 32, "patch_size": 8, **small},
            qformer_config={"encoder_hidden_size": 32, "cross_attention_frequency": 1, **small},
            text_config={"model_type": "opt", "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 1,
                         "ffn_dim": 37, "num_attention_heads": 4, "word_embed_proj_dim": 32},
            num_query_tokens=8)),
        "unsupported": transformers.GPTNeoModel(transformers.GPTNeoConfig(  # outside the interface: the softmax route
            vocab_size=99, hidden_size=32, num_layers=2, num_heads=4, attention_types=[[["global", "local"], 1]],
            max_position_embeddings=128)),
    }
    return {name: _save(root, name, model) for name, model in out.items()}


# family -> (options, expected shapes, expected attention kinds)
CASES = {
    "bert": ({"tokens": 40}, {(40, 40)}, {"encoder-self"}),
    "llama": ({"tokens": 40, "widths": [8, 16]}, {(8, 8), (16, 16)}, {"decoder-self-block"}),
    "qwen2": ({"tokens": 128}, {(64, 64)}, {"decoder-self-block"}),  # default widths: 64 fits, 128 does not
    "gpt2": ({"tokens": 40, "widths": [20]}, {(20, 20)}, {"decoder-self-block"}),
    "vit": ({}, {(17, 17)}, {"encoder-self"}),
    "t5": ({"tokens": 32, "widths": [16]}, {(32, 32), (16, 16)}, {"encoder-self", "decoder-self-block", "cross"}),
    # decoder_tokens: the decoder reads its first 12 tokens (cross 12 x 32, blocks 6 x 6)
    "t5-short-decoder": ({"tokens": 32, "decoder_tokens": 12, "widths": [6]}, {(32, 32), (12, 32), (6, 6)},
                         {"encoder-self", "decoder-self-block", "cross"}),
    "blip2": ({}, {(8, 17)}, {"cross"}),
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_extract_local_checkpoint(checkpoints, family, tmp_path):
    options, shapes, kinds = CASES[family]
    family = family.split("-")[0]
    ids = extract_to_store(str(checkpoints[family]), tmp_path, sources=2, seed=4, max_operators=12, **options)
    assert len(ids) == 12 and len(set(ids)) == 12
    recs = [read_record(tmp_path / "records" / r) for r in ids]
    assert {r.shape for r in recs} == shapes
    assert {r.provenance["attention"] for r in recs} == kinds
    fam = "blip2" if family == "blip2" else family
    assert {r.provenance["family"] for r in recs} == {fam}
    assert len({r.provenance["source_id"] for r in recs}) == 2
    for r in recs:
        assert len(r.provenance["checkpoint_sha256"]) == 64 and len(r.provenance["source_sha256"]) == 64
        assert np.allclose(r.a_hat.sum(axis=1), 1.0, atol=1e-12)
        if r.provenance["attention"] == "decoder-self-block":
            n = r.provenance["block_width"]
            p = r.provenance["pass_tokens"]
            assert p >= 2 * n - 1 and r.provenance["positions"] == [p - n, p]
    if family == "t5":  # the relative position bias is stored with self-attention operators
        assert all((r.bias is not None) == (r.provenance["attention"] != "cross") for r in recs)


def test_extract_is_deterministic(checkpoints, tmp_path):
    threads = torch.get_num_threads()
    a = extract_to_store(str(checkpoints["bert"]), tmp_path / "a", sources=2, seed=9, tokens=24, max_operators=5)
    assert torch.get_num_threads() == threads  # the extraction's thread setting is restored
    b = extract_to_store(str(checkpoints["bert"]), tmp_path / "b", sources=2, seed=9, tokens=24, max_operators=5,
                         threads=2)
    assert torch.get_num_threads() == threads
    c = extract_to_store(str(checkpoints["bert"]), tmp_path / "c", sources=2, seed=10, tokens=24, max_operators=5)
    assert a == b and a != c
    for rid in a:
        ra, rb = (read_record(tmp_path / s / "records" / rid) for s in "ab")
        assert np.array_equal(ra.queries, rb.queries) and ra.provenance == rb.provenance


def test_spread_pairs_covers_layers():
    import random

    pairs = spread_pairs(list(range(6)), list(range(12)), 8, random.Random(0))
    assert len(set(pairs)) == 8 and {layer for layer, _ in pairs} == set(range(6))
    assert len(spread_pairs([0, 1], [0, 1, 2], None, random.Random(0))) == 6


# ----------------------------------------------------------------------------------------------
# bad input: one line, exit code 2


def _cli_error(capsys, argv) -> str:
    """The one error line (warnings, e.g. the byte-level tokenizer stand-in, are lines of their own)."""
    assert main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in lines if not line.startswith("softrank extract: warning:")]
    assert len(errors) == 1 and errors[0].startswith("softrank extract: error:"), lines
    return errors[0]


def test_unknown_model_path(capsys, tmp_path):
    err = _cli_error(capsys, ["extract", "--model", str(tmp_path / "no-such-model"), "--out", str(tmp_path / "s")])
    assert "no such model" in err
    (tmp_path / "empty").mkdir()
    err = _cli_error(capsys, ["extract", "--model", str(tmp_path / "empty"), "--out", str(tmp_path / "s")])
    assert "not a checkpoint folder" in err


def test_model_outside_the_interface_goes_by_the_softmax_route(checkpoints, tmp_path):
    with pytest.warns(UserWarning, match="byte"):
        ids = extract_to_store(str(checkpoints["unsupported"]), tmp_path, sources=1, tokens=40, widths=[16],
                               max_operators=4)
    recs = [read_record(tmp_path / "records" / r) for r in ids]
    assert len(recs) == 4 and {r.provenance["route"] for r in recs} == {"softmax"}
    assert {r.provenance["family"] for r in recs} == {"gpt_neo"} and {r.form for r in recs} == {"logits"}
    assert all(r.provenance["capture_max_deviation"] < 1e-5 for r in recs)


def test_pass_too_short_for_block_width(capsys, checkpoints, tmp_path):
    llama = str(checkpoints["llama"])
    err = _cli_error(capsys, ["extract", "--model", llama, "--out", str(tmp_path / "s"), "--tokens", "100",
                              "--widths", "64", "--no-progress"])
    assert "too short for block width 64" in err and "127" in err
    short = tmp_path / "short.txt"
    short.write_text("twenty bytes of text")  # 20 tokens (byte stand-in) < 2 * 16 - 1
    err = _cli_error(capsys, ["extract", "--model", llama, "--out", str(tmp_path / "s"), "--tokens", "64",
                              "--widths", "16", "--text-file", str(short), "--no-progress"])
    assert "pass of 20 tokens is too short for block width 16" in err
    with pytest.raises(InputError, match="exceed the model's 128 positions"):
        extract_to_store(llama, tmp_path / "s", tokens=300, widths=[128])


def test_empty_text(capsys, checkpoints, tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n")
    err = _cli_error(capsys, ["extract", "--model", str(checkpoints["bert"]), "--out", str(tmp_path / "s"),
                              "--text-file", str(empty), "--no-progress"])
    assert "empty text" in err
    with pytest.raises(InputError, match="empty text"):
        extract_to_store(str(checkpoints["bert"]), tmp_path / "s", texts=[""])


def test_bad_layers_heads(capsys, checkpoints, tmp_path):
    err = _cli_error(capsys, ["extract", "--model", str(checkpoints["bert"]), "--out", str(tmp_path / "s"),
                              "--layers", "0,7", "--no-progress"])
    assert "layers" in err and "out of range 0..1" in err
    err = _cli_error(capsys, ["extract", "--model", str(checkpoints["bert"]), "--out", str(tmp_path / "s"),
                              "--heads", "x", "--no-progress"])
    assert "not an integer list" in err


def test_cli_extract_writes_store(capsys, checkpoints, tmp_path):
    store = tmp_path / "s"
    assert main(["extract", "--model", str(checkpoints["gpt2"]), "--out", str(store), "--tokens", "48",
                 "--widths", "16,24", "--layers", "1", "--heads", "0-1", "--sources", "1", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "4 operators" in out
    rows = (store / "index.csv").read_text().splitlines()
    assert len(rows) == 5 and all(",1," in row for row in rows[1:])  # layer 1 only


def test_text_sources_keep_distinct_ids(checkpoints, tmp_path):
    texts = [("text:notes.txt", "first file " * 8), ("text:notes.txt", "second file " * 8)]
    ids = extract_to_store(str(checkpoints["bert"]), tmp_path, texts=texts, tokens=16, layers=[0], heads=[1])
    recs = [read_record(tmp_path / "records" / r) for r in ids]
    assert len(ids) == 2 and len({r.provenance["source_sha256"] for r in recs}) == 2
    assert {r.provenance["source_id"] for r in recs} == {"text:notes.txt", "text:notes.txt#1"}


def test_corrupt_checkpoint(capsys, checkpoints, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(checkpoints["bert"], broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    err = _cli_error(capsys, ["extract", "--model", str(broken), "--out", str(tmp_path / "s"), "--no-progress"])
    assert "cannot load the checkpoint" in err
    (broken / "config.json").write_text("{not json")
    err = _cli_error(capsys, ["extract", "--model", str(broken), "--out", str(tmp_path / "s"), "--no-progress"])
    assert "cannot read the model configuration" in err


def test_cli_extract_native_operators(capsys, checkpoints, tmp_path):
    import json

    store = tmp_path / "s"
    assert main(["extract", "--model", str(checkpoints["gpt2"]), "--out", str(store), "--tokens", "40",
                 "--operators", "native", "--layers", "1", "--heads", "0-1", "--sources", "1", "--no-progress"]) == 0
    assert "2 operators" in capsys.readouterr().out
    folders = sorted((store / "records").iterdir())
    assert [f.name.endswith("-L01-H00-native") or f.name.endswith("-L01-H01-native") for f in folders] == [True] * 2
    for folder in folders:
        doc = json.loads((folder / "record.json").read_text())
        assert doc["operator"]["support"] == {"form": "causal", "offset": 0}
        assert doc["provenance"]["support"] == "causal" and doc["provenance"]["attention"] == "decoder-self"
        assert doc["provenance"]["capture_max_deviation"] <= 1e-5 and doc["a_hat"]["shape"] == [40, 40]
        a_hat = np.load(folder / "arrays" / "a_hat.npy")
        assert np.all(np.triu(a_hat, 1) == 0.0) and np.allclose(a_hat.sum(axis=1), 1.0, atol=1e-12)
    both = extract_to_store(str(checkpoints["gpt2"]), tmp_path / "b", sources=1, tokens=40, widths=[20], layers=[0],
                            heads=[2], operators="both")
    assert len(both) == 2 and both[0].endswith("-blk20") and both[1].endswith("-native")
    with pytest.raises(InputError, match="operators"):
        extract_to_store(str(checkpoints["gpt2"]), tmp_path / "c", tokens=40, operators="all")
    with pytest.raises(InputError, match="widths"):
        extract_to_store(str(checkpoints["gpt2"]), tmp_path / "c", tokens=40, widths=[8], operators="native")


def test_a_panels_block_widths_do_not_apply_to_native_operators():
    from softrank.fastpath.capture.extract import _options

    assert _options("smollm2", {"operators": "native"})["widths"] is None
    assert _options("smollm2", {"operators": "both"})["widths"] == [128]
    assert _options("smollm2", {"operators": "native", "widths": [8]})["widths"] == [8]  # refused later, by name


def test_decoder_tokens_needs_a_seq2seq_model_and_fits_the_widths(checkpoints, tmp_path):
    with pytest.raises(InputError, match="decoder-tokens"):
        extract_to_store(str(checkpoints["bert"]), tmp_path, tokens=24, decoder_tokens=8)
    with pytest.raises(InputError, match="decoder-tokens"):
        extract_to_store(str(checkpoints["t5"]), tmp_path, tokens=32, widths=[8], decoder_tokens=14)  # 2 * 8 - 1 > 14
