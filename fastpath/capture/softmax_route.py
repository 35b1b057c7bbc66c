"""Capture at the softmax: the fallback route for any ``torch.nn.Module`` whose attention does not go
through transformers' attention interface (nor a capture adapter).

While a capture block is active, a ``torch.overrides.TorchFunctionMode`` sees every torch call
made inside the model's forward pass (calls outside any of its modules pass through untouched):

- a **softmax** (``torch.softmax``, ``F.softmax``, ``Tensor.softmax``, ``torch.special.softmax``,
  ``nn.Softmax``): its input is read (the logits, exact binary64 values of the tensor), its output
  is followed through value-preserving steps (view and reshape keeping the last two axes, casts,
  ``contiguous``, clone, dropout in eval mode or with p = 0) to the **matmul with values**
  (``matmul``, ``@``, ``bmm``, ``baddbmm``, two-operand ``einsum``); there the record is made;
- ``F.scaled_dot_product_attention``: ``sdpa_route.py``;
- ``F.multi_head_attention_forward`` (``nn.MultiheadAttention``): ``mha_route.py``.

**Which calls are attention.** The call is attributed to the innermost running *attention
module*: a module whose class name contains "attention" or "attn" (any case), or whose last path
component does and that has child modules (so ``self_attn_layer_norm``, a leaf, is not one);
else to the innermost running module.  A softmax is attention when its output reaches a matmul
with values; one inside an attention module that never does is refused, one elsewhere that never
does (a router, say) is ignored.  An outermost attention module that ran no softmax and no
``scaled_dot_product_attention`` is refused (a fused kernel with no logits).

**Exact or refused** (``CaptureWarning`` naming the module and the reason, nothing recorded):
the softmax's axis is not the last axis; the probabilities are multiplied on the wrong side (the
contracted axis is not the softmax's); the probabilities reach the matmul changed (any step not
listed above: a temperature, a renormalisation; detected by the step, and by the values: the
whole matrix used must equal the float64 softmax of the recorded logits within the tolerance of
its dtype, ``operators.tolerance``, provenance ``capture_softmax_deviation``); dropout in
training mode; +inf or NaN logits; a float16 / bfloat16 softmax (rule: the record holds the exact
binary64 values of the softmax's input, and that is the operator only when the softmax evaluated
in float32 or wider from exactly those values: a ``dtype=torch.float32`` argument or an input
upcast before the call; a softmax evaluated in float16 / bfloat16 itself is refused); a 3-d
``[batch * heads, queries, keys]`` softmax whose batch and heads cannot be told apart.
**Masked entries**: an input entry that is -inf or at most half the dtype's most negative value
(transformers' masks) is hidden (the record's support); its probability must be 0.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from softrank.fastpath.capture import mha_route, sdpa_route
from softrank.fastpath.capture.softmax_flow import DROPOUT, MATMUL, on_dropout, on_matmul, on_other
from softrank.fastpath.capture.session import Capture, CaptureComplete, causal_like, dtype_name, valid_positions

_ATTN_RE = re.compile(r"attention|attn", re.IGNORECASE)
SOFTMAX = (torch.softmax, F.softmax, torch.Tensor.softmax, torch.special.softmax)
HEAD_ATTRIBUTES = ("num_heads", "n_heads", "num_attention_heads", "attention_heads", "n_head", "num_head")
LOW = (torch.float16, torch.bfloat16)


def is_attention_module(name: str, module) -> bool:
    """The rule of the module docstring: class name, or (for a module with children) last path component."""
    if _ATTN_RE.search(type(module).__name__):
        return True
    return bool(_ATTN_RE.search(name.rsplit(".", 1)[-1])) and next(module.children(), None) is not None


def hidden_entries(x: torch.Tensor) -> torch.Tensor:
    """-inf, or at most half the dtype's most negative value (a mask's entries)."""
    return torch.isneginf(x) | (x <= torch.finfo(x.dtype).min / 2)


@dataclass
class Entry:
    """One softmax call, until its probabilities reach the matmul with values."""

    module: object
    name: str
    route: str
    shape: tuple  # (B, H, m, N)
    logits: torch.Tensor  # float64 (B, H, m, N), hidden entries 0
    hidden: torch.Tensor  # bool (B, H, m, N)
    dtype: torch.dtype  # the softmax input's dtype
    device: str
    named: bool
    problem: str = ""
    done: bool = False


class RouteState:
    """The modules running now, the tensors derived from softmax outputs, and the session."""

    def __init__(self, model, session):
        self.session = session
        self.names = {id(m): n for n, m in model.named_modules()}
        self.stack: list = []
        self.exact: dict[int, tuple] = {}  # id -> (tensor, entry): the probabilities, unchanged
        self.tainted: dict[int, tuple] = {}  # id -> (tensor, entry, step): derived from them, changed
        self.entries: list[Entry] = []
        self.seen = 0  # softmax / sdpa calls so far
        self.outer: list = []  # (attention module, seen at its start) of outermost attention modules
        self.batch: int | None = None

    # -- modules
    def attention_module(self):
        for mod in reversed(self.stack):
            if is_attention_module(self.names.get(id(mod), ""), mod):
                return mod, True
        return (self.stack[-1], False) if self.stack else (None, False)

    def route_name(self, default: str) -> str:
        return "multihead-attention" if any(isinstance(m, torch.nn.MultiheadAttention) for m in self.stack) \
            else default

    def heads_of(self, module, rows: int) -> int | None:
        for mod in [module] + list(reversed(self.stack)):
            for attr in HEAD_ATTRIBUTES:
                h = getattr(mod, attr, None)
                if isinstance(h, int) and h > 0 and rows % h == 0:
                    return h
        if self.batch and rows % self.batch == 0:
            return rows // self.batch
        return None

    # -- results
    def failed(self, module, reason: str) -> None:
        """A call the route could not read: refused, and every probability it follows is dropped."""
        for table in (self.exact, self.tainted):
            for _, entry, *_ in list(table.values()):
                if not entry.done and entry.module is module:
                    entry.problem = entry.problem or reason
        self.refuse(module, reason)

    def refuse(self, module, reason: str) -> None:
        if self.session.wanted(module) is not None:
            self.session.refuse(module, reason)

    def add(self, module, cap_kwargs: dict) -> None:
        want = self.session.wanted(module)
        if want is None:
            return
        name, layer, cross, qualifier = want
        call = self.session.calls.get(name, 0)
        self.session.calls[name] = call + 1
        cap = Capture(module=name, layer=layer, attention="cross" if cross else "encoder-self", id_part=qualifier,
                      call=call, **cap_kwargs)
        if not cross and cap.masked is not None:
            rows, cols = valid_positions(cap, 0)
            if rows.size and cols.size and causal_like(cap.all_heads_masked(0)[np.ix_(rows, cols)]):
                cap.attention = "decoder-self"
        self.session.captures.append(cap)
        self.session._maybe_complete()

    # -- tensors
    def lookup(self, t):
        if not isinstance(t, torch.Tensor):
            return None
        for table, exact in ((self.exact, True), (self.tainted, False)):
            hit = table.get(id(t))
            if hit is not None and hit[0] is t:
                return hit, exact
        return None


def _softmax_args(func, args, kwargs):
    x = args[0]
    dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
    pos = 3 if func is F.softmax else 2
    dtype = kwargs.get("dtype", args[pos] if len(args) > pos else None)
    if dim is None:  # F.softmax's legacy implicit axis
        dim = 0 if x.dim() in (0, 1, 3) else 1
    return x, dim, dtype


def on_softmax(state: RouteState, func, args, kwargs, out):
    x, dim, dtype = _softmax_args(func, args, kwargs)
    if not isinstance(x, torch.Tensor) or x.dim() < 2 or not x.is_floating_point():
        return
    state.seen += 1
    module, named = state.attention_module()
    n = x.dim()
    problem = ""
    if not isinstance(dim, int) or dim % n != n - 1:
        problem = f"softmax over axis {dim} of a {n}-d tensor, not the key axis (the last)"
    computed = dtype if isinstance(dtype, torch.dtype) else x.dtype
    if not problem and computed in LOW:
        problem = (f"softmax evaluated in {dtype_name(computed)} (the record's logits are the operator only when "
                   f"the softmax evaluates in float32 or wider from exactly them: pass dtype=torch.float32)")
    m, keys = x.shape[-2], x.shape[-1]
    if n == 2:
        b, h = 1, 1
    elif n == 3:
        h = state.heads_of(module, x.shape[0])
        b = x.shape[0] // h if h else 0
        if not h and not problem:
            problem = f"a 3-d softmax of {x.shape[0]} rows whose batch and heads cannot be told apart"
    else:
        b, h = x.shape[0], int(np.prod(x.shape[1:-2]))
    xd = x.detach()
    hidden = hidden_entries(xd).cpu()
    if not problem and bool(torch.isnan(xd).any() or torch.isposinf(xd).any()):
        problem = "NaN or +inf logits"
    if problem or not b:
        logits = hidden = None
    else:
        hidden = hidden.reshape(b, h, m, keys)
        logits = xd.to("cpu", torch.float64).reshape(b, h, m, keys).masked_fill(hidden, 0.0)
    entry = Entry(module, state.names.get(id(module), ""), state.route_name("softmax"), (b, h, m, keys), logits,
                  hidden, x.dtype, str(x.device), named, problem)
    state.entries.append(entry)
    if isinstance(out, torch.Tensor):
        state.exact[id(out)] = (out, entry)


class SoftmaxMode(TorchFunctionMode):
    """Routes the calls of the model's forward pass to the handlers above."""

    def __init__(self, state: RouteState):
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        st = self.state
        if not st.stack:
            return func(*args, **kwargs)
        if func is F.multi_head_attention_forward:
            with self:
                return mha_route.forward(*args, **kwargs)
        handler = on_softmax if func in SOFTMAX else sdpa_route.on_sdpa if func is F.scaled_dot_product_attention \
            else on_matmul if func in MATMUL else on_dropout if func in DROPOUT else on_other
        out = func(*args, **kwargs)  # the model's own call, unchanged
        if handler is sdpa_route.on_sdpa:
            st.seen += 1
        try:
            handler(st, func, args, kwargs, out)
        except CaptureComplete:
            raise
        except Exception as err:  # noqa: BLE001  (the capture may fail; the model's pass may not)
            module, _ = st.attention_module()
            st.failed(module, f"the softmax route cannot read a {getattr(func, '__name__', func)} call "
                              f"({type(err).__name__}: {(str(err).splitlines() or [''])[0]})")
        return out


def _hooks(model, state: RouteState) -> list:
    def pre(module, args, kwargs):
        if not state.stack:
            first = next((a for a in list(args) + list(kwargs.values()) if isinstance(a, torch.Tensor)), None)
            state.batch = int(first.shape[0]) if first is not None and first.dim() > 1 else None
        if is_attention_module(state.names.get(id(module), ""), module) and not state.outer:
            state.outer.append((module, state.seen))
        state.stack.append(module)

    def post(module, args, output):
        if state.stack and state.stack[-1] is module:
            state.stack.pop()
        if state.outer and state.outer[-1][0] is module:
            _, seen = state.outer.pop()
            if seen == state.seen:
                state.refuse(module, "no softmax and no scaled_dot_product_attention ran inside it "
                                     "(a fused kernel with no logits)")
    handles = []
    for mod in model.modules():
        handles.append(mod.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(mod.register_forward_hook(post, always_call=True))
    return handles


@contextmanager
def softmax_capturing(model, session):
    """The softmax route for ``model`` into ``session`` for the duration of the block; the MHA
    fast path is off inside it (``mha_route.fast_path_off``) and every hook is removed after."""
    state = RouteState(model, session)
    handles = _hooks(model, state)
    try:
        with mha_route.fast_path_off(), SoftmaxMode(state):
            yield state
    finally:
        for handle in handles:
            handle.remove()
        for entry in state.entries:
            if not entry.done and (entry.named or entry.problem):
                state.refuse(entry.module, entry.problem or "its probabilities never reach a matmul with values "
                                                            "unchanged (a temperature or other change after the softmax)")
        state.exact.clear()
        state.tainted.clear()


def family_of(model) -> str:
    """Provenance family of a model on this route: its config's model type, else its class name."""
    config = getattr(model, "config", None)
    model_type = getattr(config, "model_type", None)
    return str(model_type) if model_type else type(model).__name__.lower()
