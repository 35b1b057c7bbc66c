"""Capture of the few transformers models whose attention does not go through the attention
interface: each computes its attention inside its own module.  Per-type knowledge, kept to the
mathematics of each:

- **Bloom** (``BloomAttention``): logits ``inv_norm_factor * q.k + beta * alibi + mask``; ALiBi is
  the record's bias.  Bloom always returns its attention probabilities.
- **Falcon** (``FalconAttention``, in the transformers releases where its forward receives
  ``alibi``), eager path only: without ALiBi, rotary q and k and logits
  ``q.k / sqrt(d) + mask``; with ALiBi, ``(q.k + alibi) * inv_norm_factor + mask``, where
  transformers' Falcon model also folds ``alibi / sqrt(d)`` into the mask (so the eager operator
  carries ALiBi twice, and differs from Falcon's sdpa path; the record is the operator that ran).
  Falcon's sdpa path returns no probabilities to check a capture against: refused (load the model
  with ``attn_implementation="eager"``).

A forward hook on each attention module recomputes q and k from the module's own projections and
head split on the module's own input (the same operations on the same numbers, so the same
values), takes the ALiBi tensor and the mask the module received, and the probabilities it
returned; the model's forward pass is not changed.  A cached prefix (keys longer than queries)
is refused.
"""

from __future__ import annotations

import inspect
import math
import sys

import torch

from softrank.fastpath.capture.session import CaptureSession


def _arg(args, kwargs, index: int, name: str):
    if name in kwargs:
        return kwargs[name]
    return args[index] if len(args) > index else None


def _hook_inputs(session: CaptureSession, module, args, kwargs, output, alibi_at: int, no_probs: str):
    """(hidden states, alibi, attention mask, probabilities) of an adapted forward whose alibi and
    mask are positional arguments ``alibi_at`` and ``alibi_at + 1``; None (and the module refused)
    in training mode with attention dropout, or when the output carries no probabilities."""
    p = getattr(getattr(module, "attention_dropout", None), "p", 0.0)
    if module.training and p:
        session.refuse(module, f"attention dropout {p} in training mode changes the operator at random")
        return None
    hidden = _arg(args, kwargs, 0, "hidden_states")
    alibi = _arg(args, kwargs, alibi_at, "alibi")
    mask = _arg(args, kwargs, alibi_at + 1, "attention_mask")
    probs = output[1] if isinstance(output, tuple) and len(output) > 1 else None
    if probs is None:
        session.refuse(module, no_probs)
        return None
    return hidden, alibi, mask, probs


def _bloom(session: CaptureSession, module, args, kwargs, output) -> None:
    inputs = _hook_inputs(session, module, args, kwargs, output, 2,
                          "Bloom's attention returned no probabilities to check the capture against")
    if inputs is None:
        return
    hidden, alibi, mask, probs = inputs
    q, k, _ = module._reshape(module.query_key_value(hidden))
    if probs.shape[-1] != k.shape[-2]:
        session.refuse(module, "keys include a cached prefix (run without a cache)")
        return
    b, h = q.shape[0], q.shape[1]
    bias = alibi.reshape(b, h, 1, -1) * module.beta if alibi is not None else None
    session.record(module, q, k, mask, module.inv_norm_factor, probs=probs, bias=bias, route="adapter")


def _falcon_split(module, fused):
    """Query [b, m, heads, d] and key [b, m, kv heads, d] views of Falcon's fused projection, in the
    layout of each of its three architectures: the new decoder stores, per key/value group, the
    group's queries then one key and one value (the key is repeated for each query of its group);
    multi-query stores every query, then the one key and the one value; the original layout
    interleaves query, key and value per head.  Views only: the values are the module's own."""
    b, m, _ = fused.shape
    d = module.head_dim
    if module.new_decoder_architecture:
        grouped = fused.view(b, m, module.num_kv_heads, -1, d)
        q = grouped[:, :, :, :-2]
        k = torch.broadcast_to(grouped[:, :, :, -2:-1], q.shape)
        return q.flatten(2, 3), k.flatten(2, 3)
    if module.multi_query:
        heads = fused.view(b, m, module.num_heads + 2, d)
        return heads[:, :, :-2], heads[:, :, -2:-1]
    per_head = fused.view(b, m, module.num_heads, 3, d)
    return per_head[..., 0, :], per_head[..., 1, :]


def _falcon(session: CaptureSession, module, args, kwargs, output) -> None:
    inputs = _hook_inputs(session, module, args, kwargs, output, 1,
                          "Falcon's sdpa attention exposes no probabilities to check a capture against "
                          "(load the model with attn_implementation='eager')")
    if inputs is None:
        return
    hidden, alibi, mask, probs = inputs
    q, k = _falcon_split(module, module.query_key_value(hidden))
    b, m = q.shape[0], q.shape[1]
    kv_heads = k.shape[2]
    q = q.transpose(1, 2).reshape(b, module.num_heads, m, module.head_dim)
    k = k.transpose(1, 2).reshape(b, kv_heads, m, module.head_dim)
    if probs.shape[-1] != m:
        session.refuse(module, "keys include a cached prefix (run without a cache)")
        return
    if alibi is None:
        cos, sin = _arg(args, kwargs, 7, "position_embeddings")
        apply = getattr(sys.modules[type(module).__module__], "apply_rotary_pos_emb")
        q, k = apply(q, k, cos, sin)
        session.record(module, q, k, mask, 1.0 / math.sqrt(module.head_dim), probs=probs, route="adapter")
        return
    scale = module.inv_norm_factor
    bias = alibi.reshape(b, module.num_heads, 1, -1).to(torch.float64) * scale
    session.record(module, q, k, mask, scale, probs=probs, bias=bias, route="adapter")


# (modeling module, class name) -> hook
ADAPTERS = {
    ("transformers.models.bloom.modeling_bloom", "BloomAttention"): _bloom,
    ("transformers.models.falcon.modeling_falcon", "FalconAttention"): _falcon,
}


def _computes_own_attention(cls) -> bool:
    """Whether ``cls`` is the form an adapter knows: its forward receives ``alibi`` and computes the
    attention itself.  Later transformers releases route Falcon through the attention interface
    (ALiBi folded into the mask); such a class is captured like any other model, not here."""
    try:
        return "alibi" in inspect.signature(cls.forward).parameters
    except (TypeError, ValueError):
        return False


def adapter_modules(model) -> list[tuple[torch.nn.Module, object]]:
    """(module, hook function) of every attention module of ``model`` an adapter captures."""
    out = []
    for mod in model.modules():
        for cls in type(mod).__mro__:
            fn = ADAPTERS.get((cls.__module__, cls.__name__))
            if fn is not None and _computes_own_attention(cls):
                out.append((mod, fn))
                break
    return out


def adapter_classes(model) -> tuple:
    return tuple({type(mod) for mod, _ in adapter_modules(model)})


def install(model, session_of) -> list:
    """Forward hooks on the adapted attention modules; ``session_of()`` is the active session or
    None.  Returns the handles (remove them to uninstall)."""
    handles = []
    for mod, fn in adapter_modules(model):
        def hook(module, args, kwargs, output, fn=fn):
            session = session_of()
            if session is not None and session.wanted(module) is not None:
                fn(session, module, args, kwargs, output)
        handles.append(mod.register_forward_hook(hook, with_kwargs=True))
    return handles
