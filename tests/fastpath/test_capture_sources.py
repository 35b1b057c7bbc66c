"""Inputs and models the way users have them: a Hugging Face id resolved from the local cache
offline (and a one-line error when it is absent), image files for vision models (PNG and PPM read
without Pillow, resized and normalised like the checkpoint's processor), and the tokenizer in
provenance (the byte-level fallback warned about)."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from softrank.cli import main
from softrank.fastpath.capture.extract import extract_to_store
from softrank.fastpath.capture.sources import decode_image, image_file
from softrank.replay.reader import read_record
from softrank.errors import InputError

pytestmark = pytest.mark.usefixtures("one_torch_thread")
SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 37}


def _hub_cache(root, repo_id: str, model) -> None:
    """A Hugging Face cache layout: models--org--name/{refs/main, snapshots/<commit>/...}."""
    base = root / ("models--" + repo_id.replace("/", "--"))
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    model.save_pretrained(base / "snapshots" / commit)
    (base / "refs").mkdir(parents=True)
    (base / "refs" / "main").write_text(commit)


def test_hub_id_from_the_local_cache(tmp_path, monkeypatch):
    torch.manual_seed(0)
    _hub_cache(tmp_path / "hub", "tiny-org/tiny-bert", transformers.BertModel(transformers.BertConfig(
        vocab_size=99, max_position_embeddings=64, **SMALL)))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.warns(UserWarning, match="byte"):
        ids = extract_to_store("tiny-org/tiny-bert", tmp_path / "store", sources=1, tokens=24, max_operators=2)
    rec = read_record(tmp_path / "store" / "records" / ids[0])
    assert ids[0].startswith("tiny-bert-") and rec.provenance["model"] == "tiny-org/tiny-bert"
    assert main(["extract", "--model", "tiny-org/absent", "--out", str(tmp_path / "s2"), "--no-progress"]) == 2


def test_absent_hub_id_is_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))
    assert main(["extract", "--model", "someone/not-cached", "--out", str(tmp_path / "s"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no such model" in err and "Hugging Face id in the local cache" in err


def _png(pixels: np.ndarray) -> bytes:
    """An 8-bit RGB PNG whose rows use each filter type in turn (0 none ... 4 Paeth)."""
    h, w, c = pixels.shape
    raw, prev = b"", np.zeros(w * c, dtype=np.int64)
    for y in range(h):
        line, kind = pixels[y].reshape(-1).astype(np.int64), y % 5
        left = np.concatenate([np.zeros(c, np.int64), line[:-c]])
        upleft = np.concatenate([np.zeros(c, np.int64), prev[:-c]])
        p = left + prev - upleft
        paeth = np.where((np.abs(p - left) <= np.abs(p - prev)) & (np.abs(p - left) <= np.abs(p - upleft)), left,
                         np.where(np.abs(p - prev) <= np.abs(p - upleft), prev, upleft))
        pred = [0, left, prev, (left + prev) // 2, paeth][kind]
        raw += bytes([kind]) + ((line - pred) % 256).astype(np.uint8).tobytes()
        prev = line

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def test_png_and_ppm_decode_exactly():
    pixels = np.random.default_rng(0).integers(0, 256, size=(11, 7, 3)).astype(np.uint8)
    from softrank.fastpath.capture import sources

    if getattr(sources, "Image", None) is None:
        assert np.array_equal(sources._png(_png(pixels), "x.png"), pixels)
    assert np.array_equal(decode_image(_png(pixels), "x.png")[:, :, :3], pixels)
    ppm = b"P6\n# a comment\n7 11\n255\n" + pixels.tobytes()
    assert np.array_equal(decode_image(ppm, "x.ppm"), pixels)
    with pytest.raises(InputError, match="image-file"):
        decode_image(b"GIF89a....", "x.gif")


def test_image_file_resized_and_normalised(tmp_path):
    flat = np.full((40, 50, 3), 255, dtype=np.uint8)
    flat[:, :, 1] = 0
    (tmp_path / "flat.png").write_bytes(_png(flat))
    src = image_file(tmp_path / "flat.png", 16, 3)
    assert src.pixels.shape == (3, 16, 16) and src.pixels.dtype == np.float32
    assert np.allclose(src.pixels[0], 1.0) and np.allclose(src.pixels[1], -1.0)  # ViT: (x/255 - 0.5) / 0.5
    assert src.source_id == "file:flat.png"
    assert src.sha256 == hashlib.sha256((tmp_path / "flat.png").read_bytes()).hexdigest()
    grey = image_file(tmp_path / "flat.png", 16, 3, {"image_mean": [0.0] * 3, "image_std": [1.0] * 3})
    assert np.allclose(grey.pixels[0], 1.0) and np.allclose(grey.pixels[1], 0.0)


def test_vision_extraction_from_image_files(tmp_path, capsys):
    torch.manual_seed(0)
    folder = tmp_path / "vit"
    transformers.ViTModel(transformers.ViTConfig(image_size=32, patch_size=8, **SMALL)).save_pretrained(folder)
    (folder / "preprocessor_config.json").write_text(json.dumps({"image_mean": [0.5] * 3, "image_std": [0.25] * 3}))
    pixels = np.random.default_rng(1).integers(0, 256, size=(48, 40, 3)).astype(np.uint8)
    (tmp_path / "a.png").write_bytes(_png(pixels))
    (tmp_path / "b.ppm").write_bytes(b"P6 40 48 255\n" + pixels.tobytes())
    store = tmp_path / "store"
    assert main(["extract", "--model", str(folder), "--out", str(store), "--image-file", str(tmp_path / "a.png"),
                 "--image-file", str(tmp_path / "b.ppm"), "--max-operators", "4", "--no-progress"]) == 0
    recs = [read_record(p) for p in sorted((store / "records").iterdir())]
    assert {r.provenance["source_id"] for r in recs} == {"file:a.png", "file:b.ppm"}
    assert all(r.shape == (17, 17) and "tokenizer" not in r.provenance for r in recs)
    by_source = {r.provenance["source_id"]: r for r in recs if r.provenance["layer"] == recs[0].provenance["layer"]
                 and r.provenance["head"] == recs[0].provenance["head"]}
    if len(by_source) == 2:  # the same pixels through PNG and PPM: the same operator
        a, b = by_source.values()
        assert np.array_equal(a.queries, b.queries)
    text = tmp_path / "t.txt"
    text.write_text("some words")
    assert main(["extract", "--model", str(folder), "--out", str(tmp_path / "s3"), "--image-file",
                 str(tmp_path / "missing.png"), "--no-progress"]) == 2
    assert "missing.png" in capsys.readouterr().err


def test_image_files_need_a_vision_model(tmp_path, capsys):
    torch.manual_seed(0)
    folder = tmp_path / "bert"
    transformers.BertModel(transformers.BertConfig(vocab_size=99, max_position_embeddings=64, **SMALL)).save_pretrained(
        folder)
    (tmp_path / "a.ppm").write_bytes(b"P6 2 2 255\n" + bytes(12))
    assert main(["extract", "--model", str(folder), "--out", str(tmp_path / "s"), "--image-file",
                 str(tmp_path / "a.ppm"), "--tokens", "32", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "image files need a vision model" in err and "warning: " in err and "byte" in err
