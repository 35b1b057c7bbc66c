"""``F.scaled_dot_product_attention`` on the softmax route (``softmax_route.py``).

A call ``sdpa(q, k, v, attn_mask, dropout_p, is_causal, scale, enable_gqa)`` is recorded as
form ``qk``: the queries and keys as given (``[..., heads, tokens, d]``; leading axes are the
batch; key-value heads expanded as ``enable_gqa`` does), the scale (default ``1 / sqrt(d)``),
and from the mask: a boolean mask's False entries, an additive mask's -inf entries (or entries at
most half the dtype's most negative value) and ``is_causal``'s upper triangle (top-left aligned,
as sdpa applies it) are hidden (the record's support); an additive mask's finite part is the
record's bias.  sdpa forms no probabilities, so the capture checks itself on what it returns:
the probabilities are recomputed in float64 from the same q, k, scale and mask, ``A V`` in
float64 is compared with sdpa's output, and the call is refused when they differ by more than
``tolerance(dtype) * max(1, max |V|)`` (provenance ``capture_output_deviation`` and
``capture_output_tolerance``); every record's ``a_hat`` is then checked against those float64
probabilities.  Refused: ``dropout_p > 0`` (sdpa applies it whether or not the model trains), a
query row with no visible key, a head count that does not match, a non-finite output.
"""

from __future__ import annotations

import math

import torch

from softrank.fastpath.capture.operators import tolerance
from softrank.fastpath.capture.session import _host, dtype_name, repeat_kv

NAMES = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")
DEFAULTS = {"attn_mask": None, "dropout_p": 0.0, "is_causal": False, "scale": None, "enable_gqa": False}


def _four(t: torch.Tensor) -> torch.Tensor:
    """``[..., heads, tokens, d]`` as ``[batch, heads, tokens, d]`` (2-d: one of each; 3-d: one head)."""
    if t.dim() == 2:
        return t[None, None]
    if t.dim() == 3:
        return t[:, None]
    return t.reshape(-1, *t.shape[-3:])


def call_arguments(args, kwargs) -> dict:
    given = dict(DEFAULTS)
    given.update(dict(zip(NAMES, args)))
    given.update(kwargs)
    return given


def on_sdpa(state, func, args, kwargs, out):
    module, _ = state.attention_module()
    try:
        problem, cap = _capture(call_arguments(args, kwargs), out, state.route_name("sdpa"))
    except (RuntimeError, ValueError) as err:  # shapes sdpa accepted but this reading does not
        problem, cap = f"cannot read the call ({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})", None
    if problem:
        state.refuse(module, problem)
    else:
        state.add(module, cap)


def _capture(a: dict, out, route: str) -> tuple[str, dict | None]:
    q, k, v = a["query"], a["key"], a["value"]
    if a["dropout_p"]:
        return f"scaled_dot_product_attention with dropout_p={a['dropout_p']} changes the operator at random", None
    q4, k4, v4 = _four(q.detach()), _four(k.detach()), _four(v.detach())
    b, hq, m, d = q4.shape
    hk, n = k4.shape[1], k4.shape[2]
    if k4.shape[0] != b and k4.shape[0] == 1:
        k4, v4 = k4.expand(b, *k4.shape[1:]), v4.expand(b, *v4.shape[1:])
    if hq % hk or (hq != hk and not a["enable_gqa"] and hk != 1):
        return f"{hq} query heads against {hk} key heads", None
    rep = hq // hk
    scale = a["scale"] if a["scale"] is not None else 1.0 / math.sqrt(d)
    q64 = q4.to("cpu", torch.float64)
    k64 = repeat_kv(k4.to("cpu", torch.float64), rep)
    v64 = repeat_kv(v4.to("cpu", torch.float64), rep)
    logits = float(scale) * (q64 @ k64.transpose(-1, -2))
    hidden = torch.zeros((b, hq, m, n), dtype=torch.bool)
    bias = None
    mask = a["attn_mask"]
    if mask is not None:
        mask = mask.detach().to("cpu").broadcast_to(q.shape[:-1] + (n,)).reshape(b, hq, m, n)
        if mask.dtype == torch.bool:
            hidden |= ~mask
        else:
            removed = torch.isneginf(mask) | (mask <= torch.finfo(mask.dtype).min / 2)
            hidden |= removed
            finite = mask.to(torch.float64).masked_fill(removed, 0.0)
            if bool(finite.any()):
                bias = finite
                logits = logits + finite
    if a["is_causal"]:
        hidden |= torch.ones((m, n), dtype=torch.bool).triu(1)
    if bool(hidden.all(dim=-1).any()):
        return "a query row with no visible key (sdpa returns NaN there)", None
    probs = torch.softmax(logits.masked_fill(hidden, float("-inf")), dim=-1)
    ref = probs @ v64
    got = _four(out.detach()).to("cpu", torch.float64).reshape(ref.shape)
    if not bool(torch.isfinite(got).all()):
        return "scaled_dot_product_attention returned non-finite values", None
    dev = float((ref - got).abs().max()) if got.numel() else 0.0
    dtype = dtype_name(q.dtype)
    tol = tolerance(dtype) * max(1.0, float(v64.abs().max()) if v64.numel() else 1.0)
    if not dev <= tol:
        return (f"A V recomputed in float64 differs from scaled_dot_product_attention's output by {dev:.3g} > "
                f"{tol:.3g}"), None
    return "", {"queries": _host(q4), "keys": _host(k4), "scale": float(scale), "bias": bias, "masked": hidden,
                "probs": probs, "dtype": dtype, "device": str(q.device), "route": route,
                "checks": {"capture_output_deviation": dev, "capture_output_tolerance": tol}}
