"""Capture of what defines each attention operator, through transformers' attention dispatch.

Every attention module that goes through transformers' attention interface calls
``interface(module, query, key, value, attention_mask, scaling=..., **kw)`` with tensors
``(batch, heads, tokens, d)``.  ``register_capture()`` registers :func:`capture_attention` under
the name ``CAPTURE_IMPLEMENTATION`` in ``AttentionInterface`` **and** registers the same name with
``AttentionMaskInterface`` (with the library's ``eager_mask``): without the second registration
the mask is silently ``None`` and a causal model attends to the future.

:func:`capturing` selects that implementation on a model for the duration of a ``with`` block and
restores the model's own setting on exit (as TransformerLens' ``run_with_cache`` or nnsight's
``trace`` clean up).  No per-type allow-list: any model whose attention goes through the
interface (encoders, decoders, encoder-decoders, vision, cross-attention) is captured; the few
that compute attention in their own module and that an adapter knows (Bloom, Falcon:
``adapters.py``) are captured by hooks; any other model gets a :class:`CaptureWarning` and records
nothing.

Each call runs the module's **own eager attention function** (the ``eager_attention_forward`` of
its modeling file), so the forward pass is the model's eager pass, and its probabilities are kept
with the capture (``session.py``) to check every operator built from it.  What the function
receives decides what is recorded:

- ``scaling`` (default ``d ** -0.5``), ``position_bias`` (T5: part of the logits), the mask (its
  finite part is part of the logits), ``softcap`` (Gemma2: the logits are ``c * tanh(H / c)``);
  ``sliding_window``, ``is_causal`` and bookkeeping arguments are carried by the mask;
- refused, with a :class:`CaptureWarning` naming the module and the reason: attention sinks
  (``s_aux``, ``sinks``: a softmax over an extra column), attention dropout in training mode, a
  soft-cap together with a position bias, any other tensor argument (an unknown score
  modification), a module whose eager attention function cannot be found.
"""

from __future__ import annotations

import hashlib
import sys
import warnings
from collections.abc import Callable
from contextlib import contextmanager, nullcontext

import torch

from softrank.fastpath.capture import adapters, softmax_route
from softrank.fastpath.capture.session import (  # noqa: F401  (re-exported: the capture's public names)
    _ACTIVE,
    Capture,
    CaptureComplete,
    CaptureSession,
    CaptureWarning,
    active_session,
    family_name,
    repeat_kv,
)
from softrank.fastpath.capture.names import split_name

CAPTURE_IMPLEMENTATION = "softrank_capture"
_REGISTERED = False

# arguments an attention function may receive that the mask (or nothing) already carries
HARMLESS_ARGUMENTS = frozenset({
    "sliding_window", "is_causal", "output_attentions", "position_ids", "layer_idx", "cu_seq_lens_q",
    "cu_seq_lens_k", "max_length_q", "max_length_k", "cache_position", "use_cache", "config", "embed_dim",
    "num_heads", "hidden_size", "num_attention_heads", "has_relative_attention_bias", "head_dim",
    "target_dtype", "deterministic", "use_top_left_mask", "output_attentions",
})
SINK_ARGUMENTS = ("s_aux", "sinks")


def layer_of(module_name: str) -> int:
    return split_name(module_name)[1]


def eager_for(module) -> Callable | None:
    """The module's own eager attention function: its modeling file's ``eager_attention_forward``,
    else the file's one function named ``*eager_attention_forward``; None when it cannot be told."""
    namespace = vars(sys.modules.get(type(module).__module__, sys))
    fn = namespace.get("eager_attention_forward")
    if callable(fn):
        return fn
    named = [v for k, v in namespace.items() if k.endswith("eager_attention_forward") and callable(v)]
    return named[0] if len(named) == 1 else None


def _sdpa(module, query, key, value, attention_mask, **kwargs):
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    return ALL_ATTENTION_FUNCTIONS["sdpa"](module, query, key, value, attention_mask, **kwargs)


def unsupported(module, dropout, kwargs: dict) -> str:
    """Why a call's operator cannot be recorded exactly, or ''."""
    for name in SINK_ARGUMENTS:
        if kwargs.get(name) is not None:
            return f"attention sinks ({name}) add a softmax column the record format cannot state"
    if dropout and module.training:
        return f"attention dropout {dropout} in training mode changes the operator at random"
    if kwargs.get("softcap") is not None and kwargs.get("position_bias") is not None:
        return "a logit soft-cap together with a position bias (their order is not known)"
    for name, value in kwargs.items():
        if name in ("softcap", "position_bias") or name in HARMLESS_ARGUMENTS:
            continue
        if isinstance(value, torch.Tensor):
            return f"the attention function receives {name!r}, an unknown score modification"
    return ""


def decode_step(session, module, query, key) -> str:
    """Why a self-attention call with fewer queries than keys (a decode step of ``generate``, or
    a chunk over a key-value cache) is refused, or '': its operator depends on keys computed in
    earlier passes, which the capture of this call cannot check."""
    _, _, cross, _ = session.wanted(module)
    m, n = int(query.shape[-2]), int(key.shape[-2])
    if cross or m >= n:
        return ""
    return (f"a decode step over a key-value cache ({m} new quer{'y' if m == 1 else 'ies'}, {n} keys, "
            f"{n - m} cached): run the full sequence in one pass (use_cache=False) to capture it")


def capture_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention function registered as ``CAPTURE_IMPLEMENTATION``: runs the module's own eager
    attention, then records the call (with the probabilities it computed)."""
    eager = eager_for(module)
    run = eager if eager is not None else _sdpa
    out = run(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout, **kwargs)
    session = active_session()
    if session is not None and session.wanted(module) is not None:
        problem = "" if eager is not None else "cannot tell the module's eager attention function"
        problem = problem or unsupported(module, dropout, kwargs)
        probs = out[1] if isinstance(out, tuple) and len(out) > 1 else None
        if not problem and probs is None:
            problem = "its eager attention returned no probabilities to check the capture against"
        problem = problem or decode_step(session, module, query, key)
        if problem:
            session.refuse(module, problem)
        else:
            session.record(module, query, key, attention_mask, scaling, probs=probs,
                           position_bias=kwargs.get("position_bias"), softcap=kwargs.get("softcap"),
                           eager_logits=True, sliding_window=kwargs.get("sliding_window"))
    return out


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


def capture_family(model) -> tuple[str | None, str]:
    """(family, problem) of a model: its provenance family (``config.model_type``), or None with
    the reason why its attention cannot be captured."""
    config = getattr(model, "config", None)
    if config is None or not hasattr(model, "set_attn_implementation"):
        return None, f"{type(model).__name__} is not a transformers model (no config, no attention dispatch)"
    return family_name(config), ""


def capture_problem(model) -> str:
    """Why ``model``'s attention cannot be captured at all, or '' (nothing is switched); any
    ``torch.nn.Module`` outside the interface and the adapters has the softmax route."""
    if isinstance(model, torch.nn.Module):
        return ""
    _, problem = capture_family(model)
    if problem or adapters.adapter_modules(model):
        return problem
    if not type(model)._can_set_attn_implementation():
        return _no_interface(model)
    return ""


def _no_interface(model) -> str:
    return (f"{type(model).__name__}'s attention does not go through transformers' AttentionInterface "
            f"(model type {getattr(model.config, 'model_type', None)!r}, no capture adapter)")


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
        return saved, _no_interface(model)
    try:
        model.set_attn_implementation(CAPTURE_IMPLEMENTATION)
    except (ValueError, TypeError, AttributeError, NotImplementedError, KeyError) as err:
        restore_attention(saved)
        first = (str(err).splitlines() or [type(err).__name__])[0]
        return saved, f"cannot select the capture attention on {type(model).__name__}: {first}"
    return saved, ""


def restore_attention(saved: list) -> None:
    """Put back every attention setting saved by :func:`switch_to_capture`."""
    for config, value in saved:
        config._attn_implementation_internal = value


def input_digest(args, kwargs) -> str:
    """SHA-256 of a model call's tensor arguments (name, dtype, shape and bytes of each)."""
    h = hashlib.sha256()
    items = [(str(i), a) for i, a in enumerate(args)] + sorted(kwargs.items())
    for name, value in items:
        if isinstance(value, torch.Tensor):
            t = value.detach().to("cpu").contiguous()
            h.update(f"{name}:{t.dtype}:{list(t.shape)}:".encode())
            h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _watch_calls(model, session) -> tuple[list[int], list]:
    """A call counter on the model and each of its sub-models (a pass may start at
    ``base_model``); the outermost call's input digest goes to ``session.input_sha256``."""
    calls, depth = [0], [0]

    def hook(_module, args, kwargs):
        if depth[0] == 0:  # an outermost call: a forward pass of its own
            digest = input_digest(args, kwargs)
            if session.input_sha256 is None:
                session.input_sha256 = digest
            session.begin_pass(digest)
        calls[0] += 1
        depth[0] += 1

    def done(*_args):
        depth[0] -= 1

    models = [m for m in model.modules() if getattr(m, "config", None) is not None or m is model]
    handles = [m.register_forward_pre_hook(hook, with_kwargs=True) for m in models]
    handles += [m.register_forward_hook(done, always_call=True) for m in models]
    return calls, handles


@contextmanager
def capturing(model, family: str | None = None, layers: set[int] | None = None, stop_early: bool = False,
              select=None):
    """``with capturing(model) as session: model(...)``; captures in ``session.captures``.

    Selects the capture attention on ``model`` for the duration of the block (or installs the
    hooks of a capture adapter) and restores the model's own attention setting on exit, also on
    an exception.  ``family`` names the provenance family (default: the config's model type); it
    does not change what is captured.  ``layers`` restricts the layers kept, ``select(name,
    cross)`` the modules kept.  When the model's attention cannot be captured, or the model ran
    but no attention call reached the capture, a :class:`CaptureWarning` says so and nothing is
    recorded.  ``stop_early`` (for models with one attention call per layer) aborts the forward
    pass after the last wanted layer; the pass's output is then not computed."""
    register_capture()
    default_family, problem = capture_family(model)
    family = family or default_family
    saved: list = []
    hooks: list = []
    extra = ()
    if not problem:
        if adapters.adapter_modules(model):
            extra = adapters.adapter_classes(model)
            hooks = adapters.install(model, active_session)
        else:
            saved, problem = switch_to_capture(model)
    fallback = bool(problem) and isinstance(model, torch.nn.Module)  # the softmax route (softmax_route.py)
    if fallback:
        problem, family = "", family or softmax_route.family_of(model)
    if problem:
        warnings.warn(f"softrank capture: {problem}; nothing is recorded", CaptureWarning, stacklevel=3)
    session = CaptureSession(model, family or "", layers, stop_early, select, extra) if not problem else \
        _EmptySession(family)
    session.input_sha256 = None
    calls, handles = _watch_calls(model, session) if not problem else ([0], [])
    try:
        with torch.no_grad(), (nullcontext() if problem else session), \
                (softmax_route.softmax_capturing(model, session) if fallback else nullcontext()):
            try:
                yield session
            except CaptureComplete:
                pass
    finally:
        for handle in handles + hooks:
            handle.remove()
        restore_attention(saved)
    if not problem and calls[0] and not session.captures and not session.refused:
        warnings.warn("softrank capture: the model ran but no attention call reached the capture "
                      "(no attention call through transformers' attention interface, and no softmax or "
                      "scaled_dot_product_attention whose output reached values, or no wanted layer ran); "
                      "nothing is recorded", CaptureWarning, stacklevel=3)


class _EmptySession:
    """What a refused capture yields: nothing recorded."""

    def __init__(self, family):
        self.family = family or ""
        self.captures: list = []
        self.refused: list = []
        self.layers = None
