"""From captured attention calls to operators (docs/extraction.md) and records.

- **Full operator** (encoders, vision, T5 encoder self-attention): all m x N, after dropping
  query rows whose keys are all masked (left padding) and key columns masked for every kept row.
  The remaining block must be free of masked entries.
- **Common-prefix block** (causal decoders, T5 decoder self-attention): for a pass of P tokens
  and width N, keys 0..N-1 and queries P-N..P-1; needs P >= 2N-1 so that every query sees every
  key.  The operator is the rowsoftmax of the logits restricted to the block (the renormalised
  block).  P counts the valid positions (left-padded positions dropped).
- **Cross-attention** (T5, BLIP-2 Q-Former): rectangular, queries x encoder keys.

Each operator is written as a record of form ``qk``: the head's queries and keys (restricted to
the operator's rows and columns, keys expanded to the query head), the scale and the optional
bias; ``a_hat`` is the float64 rowsoftmax of the float64 logits computed from them.
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass

import numpy as np
from softrank.fastpath.capture.dispatch import Capture
from softrank.fastpath.float64 import rowsoftmax64
from softrank.fastpath.store.writer import RecordWriter

BLOCK_WIDTHS = (64, 128, 256, 512)
PRODUCER = "softrank.fastpath.extract"


@dataclass
class Operator:
    """One attention operator: ``A = rowsoftmax(scale * Q K^T + bias)``."""

    attention: str  # "encoder-self", "decoder-self-block" or "cross"
    module: str
    layer: int
    head: int
    queries: np.ndarray  # (m, d) float64 (float32 values)
    keys: np.ndarray  # (N, d) float64
    scale: float
    bias: np.ndarray | None  # (m, N) float64 or None
    block_width: int | None
    positions: tuple[int, int] | None  # query positions [start, stop) in the pass (blocks)
    pass_tokens: int  # valid query positions of the pass

    @property
    def shape(self) -> tuple[int, int]:
        return self.queries.shape[0], self.keys.shape[0]

    def logits(self) -> np.ndarray:
        h = self.scale * (self.queries @ self.keys.T)
        return h if self.bias is None else h + self.bias

    def a_hat(self) -> np.ndarray:
        return rowsoftmax64(self.logits())


def block_bounds(pass_tokens: int, width: int) -> tuple[int, int] | None:
    """Query positions [P-N, P) of the width-N block, or None when P < 2N-1."""
    if pass_tokens < 2 * width - 1:
        return None
    return pass_tokens - width, pass_tokens


def _head_arrays(cap: Capture, head: int, batch: int):
    q = cap.head_queries(head, batch).astype(np.float64)
    k = cap.head_keys(head, batch).astype(np.float64)
    bias = cap.head_bias(head, batch)
    if bias is not None:
        bias = bias.astype(np.float64)
        if not np.any(bias):
            bias = None  # an all-zero bias (T5 cross-attention) defines the same operator
    return q, k, bias, cap.head_masked(batch)


def full_operator(cap: Capture, head: int, batch: int = 0) -> Operator:
    q, k, bias, masked = _head_arrays(cap, head, batch)
    rows = np.flatnonzero(~masked.all(axis=1))
    cols = np.flatnonzero(~masked[rows].all(axis=0))
    if rows.size == 0 or cols.size == 0:
        raise ValueError(f"{cap.module}: every entry is masked")
    if masked[np.ix_(rows, cols)].any():
        raise ValueError(f"{cap.module}: the mask is not a padding mask; use common-prefix blocks")
    sub_bias = None if bias is None else bias[np.ix_(rows, cols)]
    attention = "cross" if cap.attention == "cross" else "encoder-self"
    return Operator(attention, cap.module, cap.layer, head, q[rows], k[cols], cap.scale, sub_bias,
                    None, None, int(rows.size))


def block_operator(cap: Capture, head: int, width: int, batch: int = 0) -> Operator:
    """The width-N common-prefix block of a causal self-attention call (ValueError if P < 2N-1)."""
    q, k, bias, masked = _head_arrays(cap, head, batch)
    valid = np.flatnonzero(~masked.all(axis=1))  # left-padded query rows are all masked
    if valid.size == 0:
        raise ValueError(f"{cap.module}: every query row is masked")
    first = int(valid[0])
    pass_tokens = int(masked.shape[0] - first)
    bounds = block_bounds(pass_tokens, width)
    if bounds is None:
        raise ValueError(f"pass of {pass_tokens} tokens is too short for block width {width} (needs {2 * width - 1})")
    key_offset = first + (masked.shape[1] - masked.shape[0])  # keys may include a cached prefix
    qrows = np.arange(first + bounds[0], first + bounds[1])
    kcols = np.arange(key_offset, key_offset + width)
    if masked[np.ix_(qrows, kcols)].any():
        raise ValueError(f"{cap.module}: block of width {width} contains masked entries")
    sub_bias = None if bias is None else bias[np.ix_(qrows, kcols)]
    if sub_bias is not None and not np.any(sub_bias):
        sub_bias = None
    return Operator("decoder-self-block", cap.module, cap.layer, head, q[qrows], k[kcols], cap.scale,
                    sub_bias, width, bounds, pass_tokens)


def operators_for(cap: Capture, head: int, widths: list[int], batch: int = 0) -> list[Operator]:
    """Every operator of one head of one call: blocks at each width for causal self-attention,
    the full operator otherwise."""
    if cap.attention == "decoder-self":
        return [block_operator(cap, head, w, batch) for w in widths]
    return [full_operator(cap, head, batch)]


def slug(text: str) -> str:
    s = re.sub(r"^(pydoc|image|text):", lambda m: "image" if m.group(1) == "image" else "", text)
    return re.sub(r"[^A-Za-z0-9.]+", ".", s).strip(".") or "src"


def record_id(tag: str, source_id: str, op: Operator) -> str:
    kind = {"encoder-self": "self", "cross": "cross"}.get(op.attention, f"blk{op.block_width}")
    if op.module.startswith("decoder.") and op.attention == "decoder-self-block":
        kind = f"dec-blk{op.block_width}"
    rid = f"{tag}-{slug(source_id)}-L{op.layer:02d}-H{op.head:02d}-{kind}"
    if len(rid) > 200:
        rid = rid[:180] + "-" + hashlib.sha256(rid.encode()).hexdigest()[:12]
    return rid


def provenance(op: Operator, *, model: str, family: str, checkpoint_sha256: str, source_id: str,
               source_sha256: str, extra: dict | None = None) -> dict:
    """Provenance keys of docs/record-format.md, plus the producer's diagnostics."""
    import torch
    import transformers
    from softrank import __version__

    prov = {
        "model": model,
        "family": family,
        "checkpoint_sha256": checkpoint_sha256,
        "layer": op.layer,
        "head": op.head,
        "attention": op.attention,
        "source_id": source_id,
        "source_sha256": source_sha256,
        "block_width": op.block_width,
        "positions": list(op.positions) if op.positions is not None else None,
        "producer": f"{PRODUCER} {__version__}",
        "module": op.module,
        "pass_tokens": op.pass_tokens,
        "capture_dtype": "float32",
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }
    prov.update(extra or {})
    return prov


def write_operator(store, rid: str, op: Operator, prov: dict) -> str:
    """Write one extracted (unbracketed) record, form ``qk``; returns its id."""
    with RecordWriter(store, rid, prov) as writer:
        writer.set_qk(op.queries, op.keys, op.scale, op.bias)
        writer.set_a_hat(op.a_hat())
    return rid
