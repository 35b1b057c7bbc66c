"""``softrank run --model DIR`` as a new user meets it (``cli/run.py``, ``cli/extract.py``): widths and
tokens follow the model (a 64-position decoder runs; ``--widths`` and ``--tokens``), an input that
does not fit the model's modality is a one-line error, images come from ``--images``, a failed run
leaves no folder it created, a wrong path fails before torch is imported, ``--plan --model`` names
the field ``model``, and ``--json`` writes eps as the tolerance's text."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
import struct

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.cli import main
from softrank.replay.reader import list_records, read_record

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def llama64(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.LlamaConfig(vocab_size=99, hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    folder = tmp_path_factory.mktemp("m") / "llama64"
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def vit(tmp_path_factory):
    torch.manual_seed(0)
    config = transformers.ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=1,
                                    num_attention_heads=2, intermediate_size=37)
    folder = tmp_path_factory.mktemp("m") / "tiny-vit"
    transformers.ViTModel(config).save_pretrained(folder)
    return folder


def _run(tmp_path, *extra):
    return main(["run", *extra, "--eps", "0.25", "--jobs", "1", "--no-progress"])


def test_a_64_position_decoder_runs_on_its_defaults(llama64, tmp_path, capsys):
    out = tmp_path / "out"
    code = _run(tmp_path, "--model", str(llama64), "--layers", "1", "--heads", "0", "--out", str(out), "--json")
    captured = capsys.readouterr()
    assert code == 0, captured.err
    records = [read_record(p) for p in list_records(out / "store")]
    assert records and {r.shape for r in records} == {(32, 32)}  # 64 tokens: the widest block, N = 32
    doc = json.loads(captured.out)
    assert [row["eps"] for row in doc["table"]] == ["0.25"]  # the tolerance's text, as bracket prints it
    assert json.loads((out / "summary.json").read_text())["table"][0]["eps"] == "0.25"
    # a randomly initialised model: near-uniform attention, every validated bracket [1, 1], said so
    assert len(doc["notes"]) == 1 and doc["notes"][0].startswith("llama64: every operator's validated bracket is [1, 1]")
    assert "randomly initialised" in captured.err
    assert "near-uniform" in (out / "report.html").read_text()


def test_widths_and_tokens(llama64, tmp_path, capsys):
    out = tmp_path / "out"
    code = _run(tmp_path, "--model", str(llama64), "--layers", "0", "--heads", "1", "--tokens", "20",
                "--widths", "4,8", "--out", str(out))
    assert code == 0, capsys.readouterr().err
    shapes = sorted(read_record(p).shape for p in list_records(out / "store"))
    assert shapes == [(4, 4), (4, 4), (8, 8), (8, 8)]  # 2 sources x 2 widths


def test_texts_to_a_vision_model_are_an_error(vit, tmp_path, capsys):
    texts = tmp_path / "t.txt"
    texts.write_text("some text")
    out = tmp_path / "out"
    assert _run(tmp_path, "--model", str(vit), "--texts", str(texts), "--out", str(out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'texts'" in err[0] and "vision model" in err[0] and "--images" in err[0]
    assert not out.exists()  # the failed run leaves no folder it created


def _png(path, width=8, height=6):
    rows = b"".join(b"\x00" + bytes((x * 30 + y * 7) % 256 for x in range(width) for _ in range(3))
                    for y in range(height))
    chunk = lambda kind, data: (struct.pack(">I", len(data)) + kind + data
                                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def test_images_from_a_folder(vit, tmp_path, capsys):
    folder = tmp_path / "imgs"
    folder.mkdir()
    _png(folder / "a.png")
    _png(folder / "b.png", 5, 9)
    (folder / "notes.txt").write_text("not an image")
    out = tmp_path / "out"
    code = _run(tmp_path, "--model", str(vit), "--images", str(folder), "--heads", "0", "--out", str(out))
    assert code == 0, capsys.readouterr().err
    sources = {read_record(p).provenance["source_id"] for p in list_records(out / "store")}
    assert sources == {"file:a.png", "file:b.png"}


def test_images_to_a_text_model_are_an_error(llama64, tmp_path, capsys):
    _png(tmp_path / "a.png")
    assert _run(tmp_path, "--model", str(llama64), "--images", str(tmp_path / "a.png"),
                "--out", str(tmp_path / "out")) == 2
    assert "image" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_plan_with_model_names_the_model_field(llama64, tmp_path, capsys):
    assert _run(tmp_path, "--model", str(llama64), "--plan", "--out", str(tmp_path / "o")) == 2
    err = capsys.readouterr().err
    assert "field 'model'" in err and "--plan" in err


def test_a_wrong_path_fails_before_torch_is_imported(tmp_path):
    code = ("import sys\nfrom softrank.cli import main\n"
            f"rc = main(['run', '--model', {str(tmp_path / 'missing')!r}, '--out', {str(tmp_path / 'o')!r}])\n"
            "print(rc, 'torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.stdout.split() == ["2", "False"], proc.stderr
    assert "no such model" in proc.stderr and not (tmp_path / "o").exists()
