"""Following a softmax's output to the matmul with values (the softmax route, ``softmax_route.py``).

The probabilities stay *exact* through value-preserving steps (``PRESERVING`` with the last two
axes kept, dropout in eval mode or with p = 0); any other step whose output keeps the shape of
the last two axes makes it *changed* (``tainted``), and an in-place step on them is a change too.
At the first matmul that takes them (``MATMUL``; a changed tensor only in the probabilities'
place) the call is resolved (:func:`resolve`): recorded when they are exact, on the
left (the product contracts the softmax's axis; for ``einsum``, exactly that axis), and equal,
as a whole matrix, to the float64 softmax of the recorded logits within ``tolerance(dtype)`` of
the coarser of the input's and the used probabilities' dtypes; refused otherwise.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from softrank.fastpath.capture.operators import tolerance
from softrank.fastpath.capture.session import dtype_name

MATMUL = (torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.bmm, torch.Tensor.bmm, torch.baddbmm,
          torch.Tensor.baddbmm, torch.einsum, torch.Tensor.__rmatmul__)
DROPOUT = (F.dropout, torch.dropout)
PRESERVING = (torch.Tensor.view, torch.Tensor.reshape, torch.reshape, torch.Tensor.contiguous, torch.Tensor.to,
              torch.Tensor.type, torch.Tensor.float, torch.Tensor.half, torch.Tensor.bfloat16, torch.Tensor.double,
              torch.Tensor.clone, torch.clone, torch.Tensor.detach, torch.Tensor.view_as, torch.Tensor.reshape_as,
              torch.Tensor.type_as)


def masked_softmax64(logits: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
    """float64 softmax over the last axis, over the visible entries (0 elsewhere; NaN for a row with none)."""
    h = logits.masked_fill(hidden, float("-inf"))
    return torch.softmax(h, dim=-1)


def coarser(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    return a if torch.finfo(a).eps >= torch.finfo(b).eps else b


def _einsum_side_ok(args, index: int) -> bool:
    """Whether a two-operand einsum contracts exactly the last axis of operand ``index``."""
    eq = args[0].replace(" ", "") if isinstance(args[0], str) else ""
    if "->" not in eq or eq.count(",") != 1:
        return False
    ins, out = eq.split("->")
    sub = ins.split(",")[index]
    other = ins.split(",")[1 - index]
    if len(sub) < 2 or not sub[-1].isalpha() or not sub[-2].isalpha():
        return False
    return sub[-1] in other and sub[-1] not in out and sub[-2] in out


def _operands(func, args):
    """(left operand index, candidate indices) of a matmul-like call; einsum: its operand positions."""
    if func is torch.einsum:
        ops = list(args[1]) if len(args) == 2 and isinstance(args[1], (list, tuple)) else list(args[1:])
        return ops, None
    if func in (torch.baddbmm, torch.Tensor.baddbmm):
        return [args[1], args[2]], 0
    if func is torch.Tensor.__rmatmul__:
        return [args[1], args[0]], 0
    return [args[0], args[1]], 0


def on_matmul(state: RouteState, func, args, kwargs, out):
    ops, left = _operands(func, args)
    for index, operand in enumerate(ops):
        hit = state.lookup(operand)
        if hit is None:
            continue
        (tensor, entry, *step), exact = hit
        if entry.done or (not exact and left is not None and index != left):
            continue  # a changed tensor in the values' place is not the probabilities
        entry.done = True
        if not exact:
            entry.problem = entry.problem or (f"the probabilities are changed ({step[0]}) between the softmax and "
                                              f"the matmul with values (a temperature, a renormalisation, ...)")
        elif left is None:
            if not _einsum_side_ok((args[0],), 0) and not _einsum_side_ok(args, index):
                entry.problem = entry.problem or "an einsum that does not contract exactly the softmax's axis"
        elif index != left:
            entry.problem = entry.problem or ("the probabilities are multiplied on the wrong side: the product "
                                              "contracts another axis than the softmax's")
        resolve(state, entry, tensor)


def resolve(state: RouteState, entry: Entry, used: torch.Tensor) -> None:
    """Check the probabilities that reached the matmul against the softmax of the recorded logits
    (the whole matrix), then record the call, or refuse it."""
    if entry.problem:
        state.refuse(entry.module, entry.problem)
        return
    b, h, m, n = entry.shape
    if used.numel() != b * h * m * n:
        state.refuse(entry.module, "the probabilities reach the matmul reshaped")
        return
    probs = used.detach().to("cpu", torch.float64).reshape(b, h, m, n)
    ref = masked_softmax64(entry.logits, entry.hidden)
    rows = ~entry.hidden.all(dim=-1)  # a row with no visible key (padding) is never recorded
    dev = float((probs - ref).abs()[rows].max()) if bool(rows.any()) else 0.0
    dt = coarser(entry.dtype, used.dtype)  # the model's precision of the call (provenance capture_dtype)
    tol = tolerance(dtype_name(used.dtype))  # the rounding of the probabilities used
    if not dev <= tol:
        state.refuse(entry.module, f"the probabilities used differ from the softmax of its input by {dev:.3g} > "
                                   f"{tol:g} (changed after the softmax read its input)")
        return
    state.add(entry.module, {
        "queries": torch.zeros((b, h, m, 0), dtype=torch.float64), "keys": torch.zeros((b, h, n, 0), dtype=torch.float64),
        "scale": 1.0, "bias": None, "masked": entry.hidden, "probs": probs, "model_logits": entry.logits,
        "dtype": dtype_name(dt), "device": entry.device, "route": entry.route,
        "checks": {"capture_softmax_deviation": dev, "capture_softmax_tolerance": tol}})


def on_dropout(state: RouteState, func, args, kwargs, out):
    hit = state.lookup(args[0] if args else kwargs.get("input"))
    if hit is not None:
        (_, entry, *_), exact = hit
        p = kwargs.get("p", args[1] if len(args) > 1 else 0.5)
        train = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else func is F.dropout))
        if train and p:
            entry.problem = entry.problem or f"dropout {p} in training mode changes the operator at random"
        else:
            (state.exact if exact else state.tainted)[id(out)] = (out, entry, *hit[0][2:])


def on_other(state: RouteState, func, args, kwargs, out):
    if not isinstance(out, torch.Tensor) or (not state.exact and not state.tainted):
        return
    for arg in list(args) + list(kwargs.values()):
        hit = state.lookup(arg)
        if hit is None:
            continue
        (src, entry, *_), exact = hit
        keeps = exact and func in PRESERVING and out.shape[-2:] == src.shape[-2:] and out.numel() == src.numel()
        if keeps:
            state.exact[id(out)] = (out, entry)
        elif out is not src and out.shape[-2:] == src.shape[-2:]:  # still shaped like the probabilities
            state.tainted[id(out)] = (out, entry, getattr(func, "__name__", str(func)))
        elif out is src:  # an in-place change of the probabilities: the values check at the matmul sees it
            entry.problem = entry.problem or f"the probabilities are changed in place ({getattr(func, '__name__', func)})"
        break
