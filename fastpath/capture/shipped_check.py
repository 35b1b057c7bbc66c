"""Saving a shipped ONNX checkpoint in transformers' form, and its check against onnxruntime.

``save_*`` writes the converted checkpoint (config, float32 safetensors, tokenizer or image
settings) into a folder; ``check_*`` loads that folder as extraction does (float32, eager
attention) and returns the largest absolute deviation of its attention probabilities from the
shipped graphs' ``Softmax`` outputs on a fixed input, per regime (``shipped.py`` refuses a
conversion past its bound).

DINOv2's position embedding is stored for 224 x 224 inputs (16 x 16 patches, 257 tokens): the
shipped 37 x 37 table resampled once by the model's own ``interpolate_pos_encoding`` (bicubic),
which is what the model (and the shipped graph) computes on a 224 x 224 image; the saved config's
``image_size`` is 224, so extraction feeds 224 x 224 images.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from softrank.fastpath.capture.onnx_convert import attention_probabilities, dinov2_state_dict, t5_state_dict

DINOV2 = {"hidden_size": 384, "num_hidden_layers": 12, "num_attention_heads": 6, "mlp_ratio": 4, "patch_size": 14,
          "layer_norm_eps": 1e-6, "layerscale_value": 1.0}
DINOV2_SIZE = 224
T5 = {"vocab_size": 32128, "d_model": 512, "d_kv": 64, "d_ff": 1024, "num_layers": 8, "num_decoder_layers": 8,
      "num_heads": 6, "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
      "feed_forward_proj": "gated-gelu", "layer_norm_epsilon": 1e-6, "tie_word_embeddings": False,
      "decoder_start_token_id": 0, "pad_token_id": 0, "eos_token_id": 1}
# the fixed input of the T5 check (any text; this one is about 40 tokens)
CHECK_TEXT = ("Return a new sorted list from the items in iterable. A custom key function can be supplied to "
              "customize the sort order, and the reverse flag can be set to request the result in descending order.")
_DINOV2_RENAMES = {"attention.attention.query.": "attention.q_proj.", "attention.attention.key.": "attention.k_proj.",
                   "attention.attention.value.": "attention.v_proj.", "attention.output.dense.": "attention.o_proj."}


def _max_abs(pairs) -> float:
    return max(float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) for a, b in pairs)


def _renamed(sd: dict, wanted) -> dict:
    """Weight names as this transformers version's ``Dinov2Model`` has them (5.25 calls the
    projections ``q_proj`` ... ``o_proj``; older versions ``attention.attention.query`` ...)."""
    wanted = set(wanted)
    out = {}
    for key, value in sd.items():
        if key not in wanted:
            for old, new in _DINOV2_RENAMES.items():
                key = key.replace(old, new)
        out[key] = value
    return out


def save_dinov2(onnx_path: Path, out: Path, settings: dict) -> None:
    import torch
    import transformers

    sd = dinov2_state_dict(onnx_path)
    big = transformers.Dinov2Model(transformers.Dinov2Config(image_size=518, **DINOV2))
    tensors = {k: torch.from_numpy(v) for k, v in _renamed(sd, big.state_dict()).items()}
    tensors["embeddings.mask_token"] = torch.zeros_like(big.embeddings.mask_token)  # unused without a mask
    big.load_state_dict(tensors, strict=True)
    tokens = (DINOV2_SIZE // DINOV2["patch_size"]) ** 2 + 1
    with torch.no_grad():
        tensors["embeddings.position_embeddings"] = big.embeddings.interpolate_pos_encoding(
            torch.zeros(1, tokens, DINOV2["hidden_size"]), DINOV2_SIZE, DINOV2_SIZE).clone()
    config = transformers.Dinov2Config(image_size=DINOV2_SIZE, architectures=["Dinov2Model"], **DINOV2)
    model = transformers.Dinov2Model(config)
    model.load_state_dict(tensors, strict=True)
    model.save_pretrained(str(out))
    (out / "preprocessor_config.json").write_text(json.dumps({**settings, "size": DINOV2_SIZE}, indent=1))


def check_dinov2(onnx_path: Path, folder: Path, settings: dict) -> dict[str, float]:
    """Attention probabilities of every layer and head on one sample crop (224 x 224)."""
    import torch
    import transformers
    from softrank.fastpath.capture.images import CROPS, crop_image

    pixels = crop_image(CROPS[0], DINOV2_SIZE, 3, settings).pixels[None]
    _, softmax = attention_probabilities(onnx_path, {"input_image": pixels})
    model = transformers.Dinov2Model.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    with torch.no_grad():
        ours = model(pixel_values=torch.from_numpy(pixels), output_attentions=True).attentions
    if len(ours) != len(softmax):
        raise ValueError(f"{len(ours)} attention layers, the graph has {len(softmax)} Softmax nodes")
    return {"attention_probabilities": _max_abs((a.numpy(), p) for a, (_, p) in zip(ours, softmax))}


def save_t5(encoder: Path, decoder: Path, tokenizer_json: Path, out: Path) -> None:
    import torch
    import transformers

    config = transformers.T5Config(architectures=["T5ForConditionalGeneration"], **T5)
    model = transformers.T5ForConditionalGeneration(config)
    # transformers 5.25 always ties T5's output layer to the embedding (T5Config forces
    # tie_word_embeddings): the shipped output layer is dropped (no attention operator reads it)
    tensors = {k: torch.from_numpy(v) for k, v in t5_state_dict(encoder, decoder).items() if k != "lm_head.weight"}
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise ValueError(f"T5 weights: missing {missing[:3]}, unexpected {unexpected[:3]}")
    model.save_pretrained(str(out))
    tok = transformers.PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_json), eos_token="</s>",
                                               pad_token="<pad>", unk_token="<unk>")
    tok.save_pretrained(str(out))


def check_t5(encoder: Path, decoder: Path, folder: Path, decoder_tokens: int = 24) -> dict[str, float]:
    """Encoder self-attention, decoder self-attention and cross-attention probabilities, every
    layer and head, on ``CHECK_TEXT`` (decoder input: the text shifted right, ``decoder_tokens``
    long), against the shipped graphs with their activations unquantized (``float_graph``: the
    function the converted weights define).  Reported beside, not bounded (``reported_*``): the
    same against the shipped int8 run itself, whose per-call activation quantization compounds
    over the layers, and its first encoder layer alone (the same input on both sides)."""
    import torch
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    ids = np.asarray([tok(CHECK_TEXT)["input_ids"]], dtype=np.int64)
    dec = np.concatenate([[[T5["decoder_start_token_id"]]], ids[:, :-1]], axis=1)[:, :decoder_tokens]
    mask = np.ones_like(ids)
    model = transformers.T5ForConditionalGeneration.from_pretrained(str(folder), dtype=torch.float32,
                                                                    attn_implementation="eager").eval()
    with torch.no_grad():
        got = model(input_ids=torch.from_numpy(ids), attention_mask=torch.from_numpy(mask),
                    decoder_input_ids=torch.from_numpy(dec), output_attentions=True, use_cache=False)
    out = {}
    for label, dequantize in (("", True), ("reported_int8_", False)):
        (hidden,), enc_soft = attention_probabilities(encoder, {"input_ids": ids, "attention_mask": mask}, dequantize)
        _, dec_soft = attention_probabilities(decoder, {"input_ids": dec, "encoder_hidden_states": hidden,
                                                        "encoder_attention_mask": mask}, dequantize)
        regimes = {"encoder_self": (got.encoder_attentions, [p for _, p in enc_soft]),
                   "decoder_self": (got.decoder_attentions, [p for n, p in dec_soft if "SelfAttention" in n]),
                   "cross": (got.cross_attentions, [p for n, p in dec_soft if "EncDecAttention" in n])}
        for regime, (ours, theirs) in regimes.items():
            if len(ours) != len(theirs):
                raise ValueError(f"{regime}: {len(ours)} attention layers, the graph has {len(theirs)} Softmax nodes")
            out[label + regime] = _max_abs((a.numpy(), p) for a, p in zip(ours, theirs))
        h = got.encoder_last_hidden_state.numpy().astype(np.float64)
        out[(label or "reported_") + "encoder_output_relative"] = float(np.linalg.norm(h - hidden) / np.linalg.norm(hidden))
    out["reported_int8_encoder_self_layer0"] = _max_abs([(got.encoder_attentions[0].numpy(), _first(encoder, ids, mask))])
    return out


def _first(encoder: Path, ids, mask):
    return attention_probabilities(encoder, {"input_ids": ids, "attention_mask": mask})[1][0][1]
