"""Capture of what defines each attention operator, through transformers' attention dispatch.

Every attention module of a supported family calls
``interface(module, query, key, value, attention_mask, scaling=..., **kw)`` with tensors
``(batch, heads, tokens, d)``.  ``register_capture()`` registers :func:`capture_attention` under
the name ``CAPTURE_IMPLEMENTATION`` in ``AttentionInterface`` **and** registers the same name with
``AttentionMaskInterface`` (with the library's ``eager_mask``): without the second registration
the mask is silently ``None`` and a causal model attends to the future.

:func:`capturing` selects that implementation on a model for the duration of a ``with`` block and
restores the model's own setting on exit (as TransformerLens' ``run_with_cache`` or nnsight's
``trace`` clean up); a model whose attention cannot be captured gets a :class:`CaptureWarning`.
Inside a :class:`CaptureSession` each call records, for the module's layer: the queries and keys
(after any rotary embedding; keys with the key-value head count, expanded on demand exactly as
``repeat_kv`` does), the scaling, any additive bias (T5's ``position_bias``) and the mask, kept
apart from the logits (masks are the dtype's minimum, not -inf).  The model's output is then
computed by the module's own eager attention function, so the forward pass is the model's.

Only q and k are kept (not logits): memory is layers x heads x tokens x d.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

import numpy as np
import torch

CAPTURE_IMPLEMENTATION = "softrank_capture"

_ACTIVE: list[CaptureSession] = []
_REGISTERED = False
_LAYER_RE = re.compile(r"(?:^|\.)(?:layers?|h|block)\.(\d+)(?:\.|$)")


@dataclass
class Capture:
    """One attention call: the operator's defining numbers for every head of one layer."""

    module: str  # qualified module name, e.g. "layers.3.self_attn"
    layer: int
    attention: str  # "encoder-self", "decoder-self" or "cross"
    queries: torch.Tensor  # (B, Hq, m, d) float32, on the CPU
    keys: torch.Tensor  # (B, Hkv, N, d) float32, key-value head count
    scale: float
    bias: torch.Tensor | None  # additive, broadcastable to (B, Hq, m, N), float32; None: no bias
    masked: torch.Tensor | None  # bool, broadcastable to (B, 1, m, N): True where the mask removes the key

    @property
    def num_heads(self) -> int:
        return int(self.queries.shape[1])

    @property
    def n_rep(self) -> int:
        return self.num_heads // int(self.keys.shape[1])

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.queries.shape[2]), int(self.keys.shape[2])

    def head_queries(self, head: int, batch: int = 0) -> np.ndarray:
        return self.queries[batch, head].numpy()

    def head_keys(self, head: int, batch: int = 0) -> np.ndarray:
        """Keys of query head ``head``: key-value head ``head // n_rep`` (as ``repeat_kv``)."""
        return self.keys[batch, head // self.n_rep].numpy()

    def expanded_keys(self) -> torch.Tensor:
        return repeat_kv(self.keys, self.n_rep)

    def head_bias(self, head: int, batch: int = 0) -> np.ndarray | None:
        if self.bias is None:
            return None
        b = self.bias
        m, n = self.shape
        return torch.broadcast_to(b[min(batch, b.shape[0] - 1), min(head, b.shape[1] - 1)], (m, n)).numpy()

    def head_masked(self, batch: int = 0) -> np.ndarray:
        m, n = self.shape
        if self.masked is None:
            return np.zeros((m, n), dtype=bool)
        mk = self.masked
        return torch.broadcast_to(mk[min(batch, mk.shape[0] - 1), 0], (m, n)).numpy()

    def logits(self, head: int, batch: int = 0) -> np.ndarray:
        """float64 logits ``scale * Q K^T + bias`` (mask not applied) of one head."""
        q = self.head_queries(head, batch).astype(np.float64)
        k = self.head_keys(head, batch).astype(np.float64)
        h = self.scale * (q @ k.T)
        bias = self.head_bias(head, batch)
        if bias is not None:
            h = h + bias.astype(np.float64)
        return h


def repeat_kv(keys: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, Hkv, N, d) -> (B, Hkv * n_rep, N, d), query head h using key-value head h // n_rep."""
    if n_rep == 1:
        return keys
    b, hkv, n, d = keys.shape
    return keys[:, :, None, :, :].expand(b, hkv, n_rep, n, d).reshape(b, hkv * n_rep, n, d)


def classify(family: str, module_name: str) -> str | None:
    """Kind of attention a module computes, or None when the family's operators skip it."""
    if family == "blip2":
        # Q-Former query-to-image cross-attention only (not the vision encoder, not Q-Former self)
        return "cross" if ("crossattention" in module_name and not module_name.startswith("vision_model")) else None
    if family == "t5":
        if "EncDecAttention" in module_name:
            return "cross"
        return "encoder-self" if module_name.startswith("encoder.") or ".encoder." in module_name else "decoder-self"
    if "crossattention" in module_name:
        return "cross"
    if family in ("bert", "vit"):
        return "encoder-self"
    return "decoder-self"


def layer_of(module_name: str) -> int:
    match = _LAYER_RE.search(module_name)
    return int(match.group(1)) if match else 0


class CaptureSession:
    """Records the attention calls of one model while active (``with CaptureSession(...)``).

    ``family`` selects which modules are captured (see :func:`classify`); ``layers`` (a set, or
    None for all) restricts the layers kept."""

    def __init__(self, model: torch.nn.Module, family: str, layers: set[int] | None = None,
                 stop_early: bool = False):
        self.family = family
        self.layers = layers
        self.stop_early = stop_early and layers is not None
        self.names = {id(mod): name for name, mod in model.named_modules()}
        self.captures: list[Capture] = []
        self._bias_cache: dict[int, torch.Tensor] = {}

    def __enter__(self):
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)

    def record(self, module, query, key, attention_mask, scaling, position_bias) -> None:
        name = self.names.get(id(module), type(module).__name__)
        kind = classify(self.family, name)
        layer = layer_of(name)
        if kind is None or (self.layers is not None and layer not in self.layers):
            return
        if scaling is None:
            scaling = query.size(-1) ** -0.5
        bias = None
        if position_bias is not None:
            key_id = id(position_bias)
            if key_id not in self._bias_cache:  # T5 reuses layer 0's bias tensor in later layers
                self._bias_cache[key_id] = position_bias.detach().to("cpu", torch.float32)
            bias = self._bias_cache[key_id]
        masked = None
        if attention_mask is not None:
            mask = attention_mask.detach()
            if mask.dtype == torch.bool:  # boolean masks: True means "attend"
                masked = (~mask).cpu()
            else:
                threshold = torch.finfo(mask.dtype).min / 2
                masked_dev = mask <= threshold
                masked = masked_dev.cpu()
                rest = torch.where(masked_dev, torch.zeros((), dtype=mask.dtype, device=mask.device), mask)
                if bool(torch.any(rest != 0)):  # a finite additive part: part of the logits
                    rest = rest.to("cpu", torch.float32)
                    bias = rest if bias is None else bias + rest
        self.captures.append(Capture(
            module=name, layer=layer, attention=kind,
            queries=query.detach().to("cpu", torch.float32).contiguous(),
            keys=key.detach().to("cpu", torch.float32).contiguous(),
            scale=float(scaling), bias=bias, masked=masked))
        if self.stop_early and self.layers <= {c.layer for c in self.captures}:
            raise CaptureComplete  # every wanted layer is captured: skip the rest of the pass


def _eager_for(module) -> Callable:
    """The module's own eager attention function (its modeling file's ``eager_attention_forward``)."""
    fn = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    return fn if fn is not None else _generic_eager


def _generic_eager(module, query, key, value, attention_mask, scaling=None, dropout=0.0, position_bias=None, **_):
    n_rep = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, n_rep), repeat_kv(value, n_rep)
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    weights = torch.matmul(query, key.transpose(2, 3)) * scaling
    if position_bias is not None:
        weights = weights + position_bias
    if attention_mask is not None:
        weights = weights + attention_mask
    weights = torch.nn.functional.softmax(weights, dim=-1, dtype=torch.float32).to(query.dtype)
    out = torch.matmul(weights, value).transpose(1, 2).contiguous()
    return out, weights


def capture_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention function registered as ``CAPTURE_IMPLEMENTATION``: records, then runs eager."""
    if _ACTIVE:
        _ACTIVE[-1].record(module, query, key, attention_mask, scaling, kwargs.get("position_bias"))
    return _eager_for(module)(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)


def register_capture() -> None:
    """Register the capture function and its mask function (both registries, same name)."""
    global _REGISTERED
    if _REGISTERED:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(CAPTURE_IMPLEMENTATION, capture_attention)
    AttentionMaskInterface.register(CAPTURE_IMPLEMENTATION, eager_mask)
    _REGISTERED = True


class CaptureComplete(Exception):
    """Raised inside the forward pass once every wanted layer is captured (``stop_early``)."""


class CaptureWarning(UserWarning):
    """A capture that records nothing: the model's attention path cannot be captured."""


def capture_family(model) -> tuple[str | None, str]:
    """(family, problem) of a model: its capture family from ``config.model_type``, or None with
    the reason why its attention cannot be captured."""
    from softrank.fastpath.capture.models import FAMILIES

    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    if config is None or not hasattr(model, "set_attn_implementation"):
        return None, f"{type(model).__name__} is not a transformers model (no config, no attention dispatch)"
    if model_type not in FAMILIES:
        return None, (f"no attention capture support for model type {model_type!r} "
                      f"(supported: {', '.join(sorted(FAMILIES))})")
    return FAMILIES[model_type][0], ""


def _configs(model) -> list:
    """Every config whose attention setting a switch may change: the model's and its sub-models',
    and their sub-configs at any depth (each once)."""
    stack = [getattr(m, "config", None) for m in model.modules()]
    seen, out = set(), []
    while stack:
        config = stack.pop()
        if config is None or id(config) in seen or not hasattr(config, "_attn_implementation_internal"):
            continue
        seen.add(id(config))
        out.append(config)
        stack.extend(getattr(config, key, None) for key in getattr(config, "sub_configs", {}) or {})
    return out


def switch_to_capture(model) -> tuple[list, str]:
    """Select the capture attention on ``model``: (saved settings for :func:`restore_attention`,
    problem or ''); on a problem the model is left as it was."""
    saved = [(c, c._attn_implementation_internal) for c in _configs(model)]
    if model.config._attn_implementation == CAPTURE_IMPLEMENTATION:
        return saved, ""
    if not type(model)._can_set_attn_implementation():
        return saved, f"{type(model).__name__}'s attention does not go through transformers' AttentionInterface"
    try:
        model.set_attn_implementation(CAPTURE_IMPLEMENTATION)
    except (ValueError, TypeError, AttributeError, NotImplementedError) as err:
        restore_attention(saved)
        first = (str(err).splitlines() or [type(err).__name__])[0]
        return saved, f"cannot select the capture attention on {type(model).__name__}: {first}"
    return saved, ""


def restore_attention(saved: list) -> None:
    """Put back every attention setting saved by :func:`switch_to_capture`."""
    for config, value in saved:
        config._attn_implementation_internal = value


def _count_calls(model) -> tuple[list[int], list]:
    """A call counter on the model and each of its sub-models (a pass may start at ``base_model``)."""
    calls = [0]

    def hook(*_):
        calls[0] += 1

    handles = [m.register_forward_pre_hook(hook) for m in model.modules() if getattr(m, "config", None) is not None]
    return calls, handles


@contextmanager
def capturing(model, family: str | None = None, layers: set[int] | None = None, stop_early: bool = False):
    """``with capturing(model) as session: model(...)``; captures in ``session.captures``.

    Selects the capture attention on ``model`` for the duration of the block and restores the
    model's own attention setting on exit, also on an exception.  ``family`` (default: from the
    model's config) selects which modules are captured.  When the model's attention cannot be
    captured (unsupported model type, attention outside transformers' AttentionInterface), or the
    model ran but no attention call reached the capture, a :class:`CaptureWarning` says so and
    nothing is recorded.  ``stop_early`` (for models with one attention call per layer: encoders,
    decoders, vision) aborts the forward pass after the last wanted layer; the pass's output is
    then not computed."""
    register_capture()
    problem = ""
    if family is None:
        family, problem = capture_family(model)
    saved: list = []
    if not problem:
        saved, problem = switch_to_capture(model)
    if problem:
        warnings.warn(f"softrank capture: {problem}; nothing is recorded", CaptureWarning, stacklevel=3)
    session = CaptureSession(model, family or "", layers, stop_early)
    calls, handles = _count_calls(model)
    try:
        with torch.no_grad(), (nullcontext() if problem else session):
            try:
                yield session
            except CaptureComplete:
                pass
    finally:
        for handle in handles:
            handle.remove()
        restore_attention(saved)
    if not problem and calls[0] and not session.captures:
        warnings.warn("softrank capture: the model ran but no attention call reached the capture "
                      f"(family {family!r}, layers {sorted(layers) if layers else 'all'}); nothing is recorded",
                      CaptureWarning, stacklevel=3)
