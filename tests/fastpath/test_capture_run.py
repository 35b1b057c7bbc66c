"""The user's model in the main job: ``softrank run --model DIR`` on a checkpoint saved with
``save_pretrained`` (a tiny config-built model, offline, byte-level token ids) completes, and its
tables and report are labelled by the model's name (the checkpoint folder's); the built-in
panel's labels are the checkpoints' names."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.cli import main
from softrank.fastpath.capture.labels import model_label, record_label
from softrank.replay.reader import list_records, read_record

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_run_on_a_saved_checkpoint_is_labelled_by_its_name(tmp_path, capsys):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
    folder = tmp_path / "tiny-llama"
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    texts = tmp_path / "texts.txt"
    texts.write_text("The first paragraph is about attention operators and their rank.\n\n"
                     "A second paragraph, a little longer, about low-rank certificates for softmax attention.\n")
    out = tmp_path / "out"
    code = main(["run", "--model", str(folder), "--texts", str(texts), "--layers", "1", "--heads", "0,3",
                 "--eps", "0.25", "--jobs", "1", "--out", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    records = [read_record(p) for p in list_records(out / "store")]
    assert len(records) == 4  # 2 texts x 2 heads, one block each
    assert {r.provenance["family"] for r in records} == {"llama"} and {r.provenance["layer"] for r in records} == {1}
    assert {r.provenance["model"] for r in records} == {str(folder)}
    assert all(r.provenance["capture_max_deviation"] < 1e-5 for r in records)
    summary = json.loads((out / "summary.json").read_text())
    assert [row["family"] for row in summary["table"]] == ["tiny-llama"]
    report = (out / "report.html").read_text()
    assert "tiny-llama" in report and 'data-family="llama"' not in report
    assert "tiny-llama" in captured.out


def test_model_options_need_model(tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text("text")
    assert main(["run", "--texts", str(texts), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--texts applies to --model only" in err[0]


def test_labels():
    assert model_label("minilm") == "all-MiniLM-L6-v2" and model_label("smollm2") == "SmolLM2-135M"
    assert model_label("/ckpt/tiny-llama/") == "tiny-llama" and model_label("org/name") == "name"
    assert model_label("/m/SmolLM2-135M-Instruct.Q4_1.gguf") == "SmolLM2-135M-Instruct.Q4_1"
    extracted = {"model": "minilm", "family": "bert", "producer": "softrank.fastpath.extract 0.1.0"}
    assert record_label(extracted) == "all-MiniLM-L6-v2"
    assert record_label({"model": "gpt2", "family": "gpt2", "producer": "softrank.capture"}) == "gpt2"
    assert record_label({"model": "synthetic", "family": "gauge", "producer": "softrank demo"}) == "gauge"
    assert record_label({"family": "bert"}) == "bert"
