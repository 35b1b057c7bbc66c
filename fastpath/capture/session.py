"""What one capture pass records: :class:`Capture` (one attention call) and :class:`CaptureSession`.

Shared by the two ways a call reaches the capture: transformers' attention dispatch
(``dispatch.py``, every model whose attention goes through ``AttentionInterface``) and the
hooks of ``adapters.py`` (the few models that compute attention in their own module: Bloom,
Falcon).  Both hand :meth:`CaptureSession.record` the call's queries and keys (after any rotary
embedding; keys with the key-value head count), the scale, any additive bias (T5's relative
position bias, ALiBi), the mask (the dtype's minimum or a boolean "attend" mask, kept apart from the
logits), a logit soft-cap, and **the model's own attention probabilities** of the call (what its
eager attention computed), against which every operator built from the capture is checked
(``operators.py``).  A call whose operator the record format cannot state exactly is refused
(:meth:`CaptureSession.refuse`): a :class:`CaptureWarning` names the module and the reason, and
nothing of the call is recorded.
Module naming: ``names.py``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from softrank.fastpath.capture.calls import BatchHeads
from softrank.fastpath.capture.names import ModuleNames, split_name

_ACTIVE: list[CaptureSession] = []
FAMILY_ALIASES = {"blip-2": "blip2", "blip_2_qformer": "blip2"}  # provenance names kept from before


class CaptureWarning(UserWarning):
    """An attention call (or a whole model) that is not recorded, and why."""


class CaptureComplete(Exception):
    """Raised inside the forward pass once every wanted layer is captured (``stop_early``)."""


def family_name(config) -> str:
    """Provenance ``family`` of a transformers config: its ``model_type`` (``blip-2`` -> ``blip2``)."""
    model_type = str(getattr(config, "model_type", "") or "")
    return FAMILY_ALIASES.get(model_type, model_type)


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def repeat_kv(keys: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, Hkv, N, d) -> (B, Hkv * n_rep, N, d), query head h using key-value head h // n_rep."""
    if n_rep == 1:
        return keys
    b, hkv, n, d = keys.shape
    return keys[:, :, None, :, :].expand(b, hkv, n_rep, n, d).reshape(b, hkv * n_rep, n, d)


def _host(t: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy that keeps every value exactly: float64 stays float64, anything else
    (float32, bfloat16, float16) becomes float32."""
    dtype = torch.float64 if t.dtype == torch.float64 else torch.float32
    return t.detach().to("cpu", dtype).contiguous()


@dataclass
class Capture(BatchHeads):
    """One attention call: the operator's defining numbers for every head of one layer."""

    HEADS_OF = "queries"

    module: str  # qualified module name, e.g. "layers.3.self_attn"
    layer: int
    attention: str  # "encoder-self", "decoder-self" or "cross" (from batch item 0's mask)
    queries: torch.Tensor  # (B, Hq, m, d), on the CPU (float32, float64 for a float64 model)
    keys: torch.Tensor  # (B, Hkv, N, d), key-value head count
    scale: float
    bias: torch.Tensor | None  # additive, broadcastable to (B, Hq, m, N); None: no bias
    masked: torch.Tensor | None  # bool, broadcastable to (B, H', m, N): True where the mask removes the key
    probs: torch.Tensor | None = None  # (B, Hq, m, N): the model's own attention probabilities of the call
    softcap: float | None = None  # logits are c * tanh(scale * q.k / c) (+ bias): Gemma2's soft-capping
    model_logits: torch.Tensor | None = None  # (B, Hq, m, N): a low-precision model's logits as it computed them
    dtype: str = "float32"  # the model's dtype for this call
    device: str = "cpu"
    id_part: str = ""  # stack / sub-path qualifier of the record ids ("" for a single-stack model)
    call: int = 0  # how many earlier calls of the same module this pass made (weight-shared layers)
    query_valid: list | None = field(default=None, repr=False)  # cross-attention: valid query rows per item
    sliding_window: int | None = None  # the window the module passed (its mask applies it; provenance only)
    route: str = "attention-interface"  # which capture route made it (provenance ``route``)
    checks: dict = field(default_factory=dict)  # the route's own checks of the call (provenance)
    pass_index: int = 0  # which forward pass of the capture block made the call (0, 1, ...)

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

    def head_masked(self, batch: int = 0, head: int = 0) -> np.ndarray:
        m, n = self.shape
        if self.masked is None:
            return np.zeros((m, n), dtype=bool)
        mk = self.masked
        return torch.broadcast_to(mk[min(batch, mk.shape[0] - 1), min(head, mk.shape[1] - 1)], (m, n)).numpy()

    def all_heads_masked(self, batch: int = 0) -> np.ndarray:
        """(m, N): True where the mask removes the key for every head."""
        m, n = self.shape
        if self.masked is None:
            return np.zeros((m, n), dtype=bool)
        mk = self.masked[min(batch, self.masked.shape[0] - 1)]
        return torch.broadcast_to(mk.all(dim=0), (m, n)).numpy()

    def head_probs(self, head: int, batch: int = 0) -> np.ndarray | None:
        if self.probs is None:
            return None
        return self.probs[batch, head].numpy()

    def scores(self, head: int, batch: int = 0) -> np.ndarray:
        """float64 ``scale * Q K^T``, soft-capped when the model caps its logits."""
        q = self.head_queries(head, batch).astype(np.float64)
        k = self.head_keys(head, batch).astype(np.float64)
        h = self.scale * (q @ k.T)
        if self.softcap is not None:
            h = self.softcap * np.tanh(h / self.softcap)
        return h

    def logits(self, head: int, batch: int = 0) -> np.ndarray:
        """float64 logits ``scale * Q K^T + bias`` (soft-capped first when the model caps; mask not applied)."""
        h = self.scores(head, batch)
        bias = self.head_bias(head, batch)
        if bias is not None:
            h = h + bias.astype(np.float64)
        return h


def eager_scores(query, key, attention_mask, scaling, position_bias=None, softcap=None) -> torch.Tensor:
    """The logits as transformers' eager attention computes them, in the model's dtype:
    ``q @ k^T * scaling``, soft-capped (``tanh(h / c) * c``), plus the position bias, plus the mask."""
    n_rep = query.shape[1] // key.shape[1]
    h = torch.matmul(query, repeat_kv(key, n_rep).transpose(2, 3)) * scaling
    if softcap is not None:
        h = torch.tanh(h / softcap) * softcap
    if position_bias is not None:
        h = h + position_bias
    if attention_mask is not None and attention_mask.dtype != torch.bool:
        h = h + attention_mask
    return h


def split_mask(attention_mask: torch.Tensor | None) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(masked, finite additive part) of an attention mask as the attention function received it:
    a boolean mask (True: attend) or an additive float mask whose removed entries are at most half
    the dtype's minimum; the finite rest (ALiBi folded into Falcon's mask, say) is part of the logits."""
    if attention_mask is None:
        return None, None
    mask = attention_mask.detach()
    if mask.dtype == torch.bool:
        return (~mask).cpu(), None
    removed = mask <= torch.finfo(mask.dtype).min / 2
    rest = torch.where(removed, torch.zeros((), dtype=mask.dtype, device=mask.device), mask)
    finite = _host(rest) if bool(torch.any(rest != 0)) else None
    return removed.cpu(), finite


def valid_positions(cap: Capture, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """(query rows, key columns) of batch item ``batch`` that hold tokens, not padding.

    A key column the mask removes for every query (and every head) is padding.  In
    self-attention over one sequence (m = N) the query rows are the same positions; otherwise
    (cross-attention, a cached prefix) the rows are those of ``cap.query_valid`` when known (the
    decoder's own valid positions), else the rows with at least one key."""
    m, n = cap.shape
    removed = cap.all_heads_masked(batch)
    cols = np.flatnonzero(~removed.all(axis=0))
    if cap.attention != "cross" and m == n:
        return cols, cols
    if cap.query_valid is not None and cap.query_valid[batch] is not None:
        return np.asarray(cap.query_valid[batch]), cols
    return np.flatnonzero(~removed.all(axis=1)), cols


def link_cross_queries(captures: list[Capture]) -> None:
    """Give each cross-attention capture the valid query rows of its decoder: the self-attention
    capture of the same stack and layer over the same m positions (padded decoder inputs)."""
    selfs = {}
    for cap in captures:
        if cap.attention != "cross" and cap.shape[0] == cap.shape[1]:
            stack, layer, _ = split_name(cap.module)
            selfs.setdefault((stack, layer, cap.pass_index, cap.call, cap.shape[0]), cap)
    for cap in captures:
        if cap.attention == "cross" and cap.query_valid is None:
            stack, layer, _ = split_name(cap.module)
            dec = selfs.get((stack, layer, cap.pass_index, cap.call, cap.shape[0]))
            if dec is not None and dec.batch_size == cap.batch_size:
                cap.query_valid = [valid_positions(dec, b)[0] for b in range(cap.batch_size)]


def causal_like(block: np.ndarray) -> bool:
    """Every entry above the (bottom-right aligned) diagonal is masked: a causal pattern,
    possibly with a sliding window below the diagonal."""
    m, n = block.shape
    upper = np.triu(np.ones((m, n), dtype=bool), k=n - m + 1)
    return bool(block[upper].all()) and bool(block.any())


class CaptureSession:
    """Records the attention calls of one model while active (``with CaptureSession(...)``).

    ``layers`` (a set, or None for all) restricts the layers kept; ``select(name, cross)`` (or
    None for all) the modules kept."""

    def __init__(self, model: torch.nn.Module, family: str = "", layers: set[int] | None = None,
                 stop_early: bool = False, select=None, extra_classes: tuple = ()):
        self.family = family
        self.layers = layers
        self.select = select
        self.stop_early = stop_early and layers is not None
        self.naming = ModuleNames(model, extra_classes)
        self.captures: list[Capture] = []
        self.refused: list[tuple[str, str]] = []  # (module, reason)
        self.calls: dict[str, int] = {}
        self._bias_cache: dict[int, torch.Tensor] = {}
        self.passes: list[str] = []  # the input SHA-256 of each forward pass (outermost model call)

    def begin_pass(self, digest: str) -> None:
        """A new forward pass: its calls are counted afresh (``-c<k>`` is for weight-shared layers)."""
        self.passes.append(digest)
        self.calls = {}

    def __enter__(self):
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.remove(self)

    def wanted(self, module) -> tuple[str, int, bool, str] | None:
        """(name, layer, cross, id qualifier) of a module this session records, else None."""
        name = self.naming.name_of(module)
        layer, cross, qualifier = self.naming.describe(name, module)
        if self.layers is not None and layer not in self.layers:
            return None
        if self.select is not None and not self.select(name, cross):
            return None
        return name, layer, cross, qualifier

    def refuse(self, module, reason: str) -> None:
        """A call that cannot be recorded exactly: warned once per module, nothing recorded."""
        name = self.naming.name_of(module)
        self.refused.append((name, reason))
        warnings.warn(f"softrank capture: {name}: {reason}; its attention is not recorded", CaptureWarning,
                      stacklevel=4)
        self._maybe_complete()

    def record(self, module, query: torch.Tensor, key: torch.Tensor, attention_mask, scaling, *,
               probs: torch.Tensor, position_bias: torch.Tensor | None = None, bias: torch.Tensor | None = None,
               softcap: float | None = None, eager_logits: bool = False, sliding_window=None,
               route: str = "attention-interface") -> None:
        """Record one call (see the module docstring); ``bias`` is a further additive part of the
        logits (ALiBi), ``probs`` the model's own probabilities of the call.  ``eager_logits``: for
        a bfloat16 or float16 model, also keep the logits as eager attention computes them in the
        model's dtype (``model_logits``; their rounding is part of the model's operator)."""
        want = self.wanted(module)
        if want is None:
            return
        name, layer, cross, qualifier = want
        if scaling is None:
            scaling = query.size(-1) ** -0.5
        total = None
        if position_bias is not None:
            key_id = id(position_bias)
            if key_id not in self._bias_cache:  # T5 reuses layer 0's bias tensor in later layers
                self._bias_cache[key_id] = _host(position_bias)
            total = self._bias_cache[key_id]
        if bias is not None:
            total = _host(bias) if total is None else total + _host(bias)
        masked, finite = split_mask(attention_mask)
        if finite is not None:
            total = finite if total is None else total + finite
        call = self.calls.get(name, 0)
        self.calls[name] = call + 1
        model_logits = None
        if eager_logits and query.dtype in (torch.bfloat16, torch.float16):
            model_logits = _host(eager_scores(query, key, attention_mask, scaling, position_bias, softcap))
        cap = Capture(module=name, layer=layer, attention="cross" if cross else "encoder-self",
                      queries=_host(query), keys=_host(key), scale=float(scaling), bias=total, masked=masked,
                      probs=_host(probs), softcap=None if softcap is None else float(softcap),
                      dtype=dtype_name(query.dtype), device=str(query.device), id_part=qualifier, call=call,
                      model_logits=model_logits, route=route, pass_index=max(len(self.passes) - 1, 0),
                      sliding_window=sliding_window if isinstance(sliding_window, int) else None)
        if not cross and cap.masked is not None:
            rows, cols = valid_positions(cap, 0)
            if rows.size and cols.size and causal_like(cap.all_heads_masked(0)[np.ix_(rows, cols)]):
                cap.attention = "decoder-self"
        self.captures.append(cap)
        self._maybe_complete()

    def _maybe_complete(self) -> None:
        if self.stop_early and self.layers <= {c.layer for c in self.captures} | self._refused_layers():
            raise CaptureComplete  # every wanted layer is captured: skip the rest of the pass

    def _refused_layers(self) -> set[int]:
        return {split_name(name)[1] for name, _ in self.refused}


def active_session() -> CaptureSession | None:
    return _ACTIVE[-1] if _ACTIVE else None
