"""The TransformerLens route of the capture (route ``"transformer-lens"``; docs/extraction.md),
and :func:`unwrap` for models wrapped by nnsight.

A ``HookedTransformer`` (and TransformerLens' other hooked models) computes, in every attention
module, the logits fed to the softmax and exposes them at the hook point ``hook_attn_scores``
(``[batch, head, query, key]``: scale, rotary, ALiBi, soft-cap and relative position bias
already applied, the causal and padding mask applied as ``-inf``), then the probabilities at
``hook_pattern``.  Each (batch item, head) of a call gives one operator of form ``logits``: the
scores restricted to the item's tokens (a key hidden from every query is padding, and in
self-attention the query at that position is dropped too), hidden entries stored as 0.0 with
the boolean mask (``support``: causal for a causal model, compact window or packed for any other
pattern; none when nothing is hidden, an encoder).  Every operator is checked against
``hook_pattern`` of the same call, the whole matrix, zeros included: an operator whose float64
masked row softmax deviates by more than ``operators.tolerance(dtype)`` (1e-5 in float32) is
refused, as is a call with non-finite scores other than ``-inf``, a query row without keys, or
a model with attention sinks (its pattern rows sum to less than 1).

:class:`LensSession` records ``(scores, pattern)`` of a live model by forward hooks on its hook
points (removed on exit); :func:`calls_from_cache` reads them from a ``run_with_cache`` cache.
Never imports transformer_lens or nnsight: a model is recognised by its classes.
"""

from __future__ import annotations

import platform
import re
from dataclasses import dataclass

import numpy as np

from softrank.fastpath.capture.calls import BatchHeads
from softrank.fastpath.capture.names import split_name
from softrank.fastpath.capture.operators import Refusal, slug, tolerance
from softrank.fastpath.store.support import masked_rowsoftmax64, support_dict, support_of_mask

ROUTE = "transformer-lens"
SCORES, PATTERN = "hook_attn_scores", "hook_pattern"
_SCORES_RE = re.compile(r"^(?P<module>.+)\.hook_attn_scores$")


def is_lens_model(model) -> bool:
    """A TransformerLens hooked model (``HookedTransformer``, ``HookedEncoder``, ...): a
    ``HookedRootModule`` with a ``cfg`` and a ``hook_dict``; TransformerLens' bridges
    (``model_bridge``, wrapping a transformers model) are not."""
    cls = type(model)
    return (hasattr(model, "hook_dict") and hasattr(model, "cfg")
            and any(c.__name__ == "HookedRootModule" and c.__module__.startswith("transformer_lens")
                    for c in cls.__mro__)
            and not cls.__module__.startswith("transformer_lens.model_bridge"))


def unwrap(model):
    """The module an nnsight wrapper (``LanguageModel``, ``NNsight``: its ``_module``) runs; any
    other model as it is.  Capture the wrapper once its weights are loaded (an in-memory model, or
    ``dispatch=True``): a lazily loaded wrapper replaces its module on the first trace."""
    inner = getattr(model, "_module", None) if type(model).__module__.startswith("nnsight") else None
    return model if inner is None else inner


def lens_problem(model) -> str:
    """Why a hooked model's attention cannot be recorded exactly, or ''."""
    cfg = model.cfg
    if getattr(cfg, "use_attention_sinks", False):
        return "attention sinks (cfg.use_attention_sinks) add a softmax column the record format cannot state"
    if not any(name.endswith("." + SCORES) for name in model.hook_dict):
        return f"{type(model).__name__} has no {SCORES} hook points"
    return ""


@dataclass
class LensCall(BatchHeads):
    """One attention call: the logits fed to the softmax and the probabilities, ``(B, H, m, N)``."""

    HEADS_OF = "scores"

    module: str  # e.g. "blocks.3.attn"
    layer: int
    scores: object  # torch.Tensor on the CPU (float32, float64 for a float64 model)
    pattern: object
    dtype: str = "float32"
    device: str = "cpu"
    call: int = 0
    causal: bool = True  # the model's attention direction (positions of a causal call with a cache)

    @property
    def cross(self) -> bool:
        return "cross" in self.module.rsplit(".", 1)[-1]


@dataclass
class LensOperator:
    """One operator: ``a_hat`` is the row softmax of ``logits`` over the visible keys (``mask``)."""

    call: LensCall
    head: int
    batch: int
    logits: np.ndarray  # (m, N) float64, hidden entries 0.0
    mask: np.ndarray | None  # (m, N) bool, True where the query sees the key; None: all visible
    support: dict | None
    rows: np.ndarray  # the operator's query rows / key columns in the call
    cols: np.ndarray
    deviation: float = float("nan")

    @property
    def attention(self) -> str:
        return "cross" if self.call.cross else ("encoder-self" if self.mask is None else "decoder-self")

    def a_hat(self) -> np.ndarray:
        return masked_rowsoftmax64(self.logits, self.mask)

    def positions(self) -> list[int] | None:
        """[start, stop) of the query positions in the pass (after a key-value cache's prefix, in
        causal self-attention the keys' excess over the queries); None when not contiguous."""
        m, n = self.call.scores.shape[2], self.call.scores.shape[3]
        shift = int(n - m) if self.call.causal and not self.call.cross and n > m else 0
        r = self.rows
        return [int(r[0]) + shift, int(r[-1]) + 1 + shift] if np.all(np.diff(r) == 1) else None


def _host(t):
    import torch

    t = t.detach()
    return t.to("cpu", torch.float64 if t.dtype == torch.float64 else torch.float32).contiguous()


def make_call(module: str, scores, pattern, call: int = 0, causal: bool = True, dtype: str | None = None,
              device: str | None = None) -> LensCall:
    """A call from the two hook tensors (a cache without its batch dimension: one item);
    ``dtype`` and ``device``: the model's, when the tensors are host copies."""
    dtype = dtype or str(scores.dtype).removeprefix("torch.")
    device = device or str(scores.device)
    s, p = _host(scores), _host(pattern)
    if s.ndim == 3:
        s, p = s[None], p[None]
    if s.ndim != 4 or tuple(p.shape) != tuple(s.shape):
        raise ValueError(f"{module}: scores {list(s.shape)} and pattern {list(p.shape)} are not both "
                         f"[batch, head, query, key]")
    return LensCall(module, split_name(module)[1], s, p, dtype, device, call, causal)


def operators_for(call: LensCall, head: int, batch: int) -> LensOperator | Refusal:
    """The operator of one head of one batch item, checked against the call's pattern, or why not."""
    s = call.scores[batch, head].numpy().astype(np.float64)
    ref = call.pattern[batch, head].numpy().astype(np.float64)

    def refuse(reason):
        return Refusal(call.module, call.layer, head, batch, reason)

    floor = float(np.finfo(np.float16 if call.dtype == "float16" else np.float64 if call.dtype == "float64"
                           else np.float32).min) / 2  # a mask added as the dtype's minimum (HookedEncoderDecoder)
    hidden = np.isneginf(s) | (s <= floor)
    if np.any(np.isnan(s) | np.isposinf(s)):
        return refuse("the attention scores hold NaN or +inf")
    m, n = s.shape
    cols = np.flatnonzero(~hidden.all(axis=0))
    rows = cols if (m == n and not call.cross) else np.flatnonzero(~hidden.all(axis=1))
    if rows.size == 0 or cols.size == 0:
        return refuse("every position is masked")
    seen = ~hidden[np.ix_(rows, cols)]
    if not seen.any(axis=1).all():
        return refuse("the mask leaves a query row without keys")
    h = np.where(seen, s[np.ix_(rows, cols)], 0.0)
    mask = None if seen.all() else seen
    support = None if mask is None else support_dict(support_of_mask(mask))
    op = LensOperator(call, head, batch, h, mask, support, rows, cols)
    op.deviation = float(np.abs(op.a_hat() - ref[np.ix_(rows, cols)]).max())
    tol = tolerance(call.dtype)
    if not op.deviation <= tol:
        return refuse(f"rowsoftmax of the record deviates from {PATTERN} by {op.deviation:.3g} > {tol:g} "
                      f"({call.dtype})")
    return op


def record_id(tag: str, source_id: str, op: LensOperator, stacks: int = 1) -> str:
    """``<tag>-<source>[-b<item>]-[<stack>-]L<layer>-H<head>-<kind>[-c<call>]`` (kind ``native``,
    ``self`` or ``cross``), as the transformers route names its records."""
    kind = {"encoder-self": "self", "cross": "cross", "decoder-self": "native"}[op.attention]
    item = f"-b{op.batch}" if op.call.batch_size > 1 else ""
    stack = split_name(op.call.module)[0]
    part = f"{slug(stack)}-" if stacks > 1 else ""
    again = f"-c{op.call.call}" if op.call.call else ""
    return f"{tag}-{slug(source_id)}{item}-{part}L{op.call.layer:02d}-H{op.head:02d}-{kind}{again}"[:200]


def stacks_of(calls) -> int:
    """How many attention stacks (``blocks``; ``encoder`` and ``decoder``) the calls come from."""
    return len({split_name(c.module)[0] for c in calls})


def provenance(op: LensOperator, *, model: str, family: str, source_id: str, source_sha256: str | None) -> dict:
    """The record-format keys plus the route, the capture's check and the support."""
    import torch
    from softrank import __version__

    prov = {"model": model, "family": family, "checkpoint_sha256": None, "layer": op.call.layer, "head": op.head,
            "attention": op.attention, "source_id": source_id, "source_sha256": source_sha256,
            "block_width": None, "positions": op.positions(), "producer": f"softrank.capture {__version__}",
            "route": ROUTE, "module": op.call.module, "pass_tokens": int(op.call.scores.shape[3]),
            "batch_item": op.batch, "capture_dtype": op.call.dtype, "device": op.call.device,
            "python_version": platform.python_version(), "torch_version": torch.__version__,
            "transformer_lens_version": _lens_version()}
    if op.support is not None:
        prov["support"] = op.support["form"]
    prov["capture_max_deviation"] = op.deviation
    prov["capture_tolerance"] = tolerance(op.call.dtype)
    return prov


def _lens_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformer-lens")
    except PackageNotFoundError:
        return None


def calls_from_cache(cache) -> list[LensCall]:
    """Every attention call of a ``run_with_cache`` cache (an ``ActivationCache`` or a dict of hook
    names): ``<module>.hook_attn_scores`` with its ``<module>.hook_pattern``, in layer order."""
    names = dict(cache.cache_dict) if hasattr(cache, "cache_dict") else dict(cache)
    model = getattr(cache, "model", None)
    causal = getattr(getattr(model, "cfg", None), "attention_dir", "causal") == "causal"
    out = []
    for name, scores in names.items():
        match = _SCORES_RE.match(name)
        if match is None:
            continue
        module = match.group("module")
        pattern = names.get(f"{module}.{PATTERN}")
        if pattern is None:
            raise KeyError(f"the cache holds {name} but not {module}.{PATTERN} to check it against "
                           f"(cache both: run_with_cache(tokens) with no names_filter, or a filter keeping both)")
        out.append(make_call(module, scores, pattern, causal=causal and "cross" not in module))
    return sorted(out, key=lambda c: (split_name(c.module)[0], c.layer, c.module))


class LensSession:
    """``with LensSession(model, layers) as session: model(tokens)``: forward hooks on every
    ``hook_attn_scores`` and ``hook_pattern`` point (removed on exit, also on an exception);
    ``session.calls`` pairs the n-th scores of a module with its n-th pattern."""

    def __init__(self, model, layers: set[int] | None = None):
        self.model, self.layers = model, layers
        self.family = str(getattr(model.cfg, "original_architecture", None) or "transformer-lens")
        self.causal = getattr(model.cfg, "attention_dir", "causal") == "causal"
        self.seen: dict[str, dict[str, list]] = {}
        self.handles: list = []
        self.input_sha256: str | None = None
        self.refused: list[tuple[str, str]] = []
        self.calls: list[LensCall] = []

    def __enter__(self) -> LensSession:
        for name, point in self.model.hook_dict.items():
            module, _, kind = name.rpartition(".")
            if kind in (SCORES, PATTERN) and (self.layers is None or split_name(module)[1] in self.layers):
                self.handles.append(point.register_forward_hook(self._hook(module, kind)))
        self.handles.append(self.model.register_forward_pre_hook(self._digest, with_kwargs=True))
        return self

    def __exit__(self, *exc) -> None:
        for handle in self.handles:
            handle.remove()
        self.handles = []
        self.calls = self._pair()

    def _hook(self, module: str, kind: str):
        def hook(_point, _args, output):
            where = (str(output.dtype).removeprefix("torch."), str(output.device))
            self.seen.setdefault(module, {SCORES: [], PATTERN: []})[kind].append((_host(output), where))
        return hook

    def _digest(self, _module, args, kwargs) -> None:
        from softrank.fastpath.capture.dispatch import input_digest

        if self.input_sha256 is None:
            self.input_sha256 = input_digest(args, kwargs)

    def _pair(self) -> list[LensCall]:
        out = []
        for module, got in self.seen.items():
            for n, ((s, (dtype, device)), (p, _)) in enumerate(zip(got[SCORES], got[PATTERN])):
                out.append(make_call(module, s, p, call=n, causal=self.causal and "cross" not in module,
                                     dtype=dtype, device=device))
            if len(got[SCORES]) != len(got[PATTERN]):
                self.refused.append((module, f"{len(got[SCORES])} {SCORES} calls but {len(got[PATTERN])} "
                                             f"{PATTERN} calls"))
        return sorted(out, key=lambda c: (split_name(c.module)[0], c.layer, c.module, c.call))
