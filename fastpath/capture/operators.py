"""From captured attention calls to operators (docs/extraction.md) and records.

Per batch item, only the positions that hold tokens are used (``session.valid_positions``:
padding is read off the mask, left or right).  Over them the mask decides the operator:

- **Full operator** (no entry masked: encoders, vision, T5 encoder self-attention,
  cross-attention): all valid queries x all valid keys.
- **Common-prefix block** (a causal mask: decoders, T5 decoder self-attention): for P valid
  positions and width N, keys 0..N-1 and queries P-N..P-1; needs P >= 2N-1 so that every query
  sees every key.  The operator is the rowsoftmax of the logits restricted to the block (the
  renormalised block).  A block inside which the mask removes a key (a sliding window shorter
  than the block's reach) is refused.
- **Native operator** (``operators="native"`` or ``"both"``, a causal mask): all valid queries x
  all valid keys under the mask the call applied, as a masked record (``support``: causal
  offset 0, or a window of w keys when the model's sliding window is shorter than the pass); a
  sliding window is part of its support, never a reason to refuse it.
- Anything else (a mask that leaves a valid query row without keys, a pattern that is neither
  padding nor causal) is refused.

Every operator is checked against the model's own attention probabilities of the call (the same
rows and columns, renormalised over the block's columns): the maximum deviation goes into
provenance (``capture_max_deviation``), and an operator above its allowance is refused: the
dtype's ``tolerance(dtype)``, and for a float32 operator of form ``qk`` above it, that plus the
proved rounding of the model's float32 logits (``allowance.py``).  ``capture_tolerance`` is the
one the operator passed: ``tolerance(dtype)`` when its deviation is within it (the bytes of
earlier records), else the allowance.

Each operator is written as a record of form ``qk`` (the head's queries and keys restricted to
the operator's rows and columns, keys expanded to the query head, the scale and the optional
bias), or of form ``logits`` when the model soft-caps its logits (the capped logits
``c * tanh(scale * q.k / c) + bias``); ``a_hat`` is the float64 rowsoftmax of the float64 logits.
"""

from __future__ import annotations

import hashlib
import platform
import re
from dataclasses import dataclass

import numpy as np

from softrank.fastpath.capture.allowance import allowance
from softrank.fastpath.capture.session import Capture, causal_like, valid_positions
from softrank.fastpath.store.support import masked_rowsoftmax64, support_dict, support_of_mask
from softrank.fastpath.store.writer import RecordWriter

BLOCK_WIDTHS = (64, 128, 256, 512)
OPERATOR_KINDS = ("blocks", "native", "both")  # what a causal self-attention call gives
PRODUCER = "softrank.fastpath.extract"
INTERFACE_ROUTE = "attention-interface"  # the first route: its records carry no provenance ``route``

# Largest accepted deviation |rowsoftmax(record) - the model's attention probabilities| per model
# dtype (docs/extraction.md).  float32: the record's logits are computed in float64 from the
# model's float32 queries and keys, so the deviation is the model's own float32 rounding (measured:
# below 4e-6 on both shipped checkpoints at 256 tokens, below 1e-7 on the small test models).
# bfloat16 / float16: the record holds the logits as the model computed them in its dtype (form
# ``logits``), so what remains is the rounding of the model's probabilities to its dtype (measured:
# below 1.7e-3 in bfloat16, 1.8e-3 in float16); a block whose rows carry little probability
# mass, whose rounded probabilities cannot confirm it, is refused.  A float32 head with large
# logits may deviate more: the float32 rounding of its logits, bounded per operator (allowance.py).
TOLERANCES = {"float64": 1e-9, "float32": 1e-5, "float16": 4e-3, "bfloat16": 8e-3}


def tolerance(dtype: str) -> float:
    """The deviation above which a capture in ``dtype`` is refused (float32's for an unknown dtype)."""
    return TOLERANCES.get(dtype, TOLERANCES["float32"])


@dataclass
class Operator:
    """One attention operator: ``A = rowsoftmax(H)``, ``H = scale * Q K^T + bias`` (soft-capped
    first when ``softcap`` is set: ``H = c * tanh(scale * Q K^T / c) + bias``)."""

    attention: str  # "encoder-self", "decoder-self-block" or "cross"
    module: str
    layer: int
    head: int
    queries: np.ndarray  # (m, d) float64 (the model's values)
    keys: np.ndarray  # (N, d) float64
    scale: float
    bias: np.ndarray | None  # (m, N) float64 or None
    block_width: int | None
    positions: tuple[int, int] | None  # query positions [start, stop) among the valid ones (blocks)
    pass_tokens: int  # valid query positions of the pass
    softcap: float | None = None
    batch: int = 0
    deviation: float | None = None  # max |a_hat - model's probabilities| (None: not checked)
    dtype: str = "float32"
    device: str = "cpu"
    id_part: str = ""
    call: int = 0
    rows: np.ndarray | None = None  # the operator's rows / columns in the call's positions
    cols: np.ndarray | None = None
    model_logits: np.ndarray | None = None  # (m, N): a low-precision model's own logits (bias included)
    mask: np.ndarray | None = None  # native operators: (m, N) bool, True where the query sees the key
    support: dict | None = None  # its compact description (``support_of_mask``)
    sliding_window: int | None = None  # the window the module passed with the call (provenance)
    route: str = "attention-interface"  # the capture route that made it (provenance ``route``; none: INTERFACE_ROUTE)
    checks: dict | None = None  # the route's own checks of the call (provenance)
    tolerance: float | None = None  # the allowance it passed (provenance ``capture_tolerance``; None: not checked)

    @property
    def shape(self) -> tuple[int, int]:
        return self.queries.shape[0], self.keys.shape[0]

    @property
    def form(self) -> str:
        return "qk" if self.softcap is None and self.model_logits is None else "logits"

    def logits(self) -> np.ndarray:
        if self.model_logits is not None:
            return self.model_logits
        h = self.scale * (self.queries @ self.keys.T)
        if self.softcap is not None:
            h = self.softcap * np.tanh(h / self.softcap)
        return h if self.bias is None else h + self.bias

    def a_hat(self) -> np.ndarray:
        return masked_rowsoftmax64(self.logits(), self.mask)


@dataclass
class Refusal:
    """An operator that is not recorded, and why."""

    module: str
    layer: int
    head: int
    batch: int
    reason: str

    def message(self) -> str:
        return f"softrank capture: {self.module} (layer {self.layer}, head {self.head}, batch item {self.batch}): " \
               f"{self.reason}; not recorded"


def block_bounds(pass_tokens: int, width: int) -> tuple[int, int] | None:
    """Query positions [P-N, P) of the width-N block, or None when P < 2N-1."""
    if pass_tokens < 2 * width - 1:
        return None
    return pass_tokens - width, pass_tokens


def _operator(cap: Capture, head: int, batch: int, rows, cols, attention: str, width=None, bounds=None,
              pass_tokens=None, mask=None) -> Operator:
    q = cap.head_queries(head, batch).astype(np.float64)[rows]
    k = cap.head_keys(head, batch).astype(np.float64)[cols]
    bias = cap.head_bias(head, batch)
    if bias is not None:
        bias = bias.astype(np.float64)[np.ix_(rows, cols)]
        if not np.any(bias):
            bias = None  # an all-zero bias (T5 cross-attention) defines the same operator
    model_logits = None
    if cap.model_logits is not None:  # the low-precision model's own logits: bias and mask included
        model_logits = cap.model_logits[batch, head].numpy().astype(np.float64)[np.ix_(rows, cols)]
        bias = None
    op = Operator(attention, cap.module, cap.layer, head, q, k, cap.scale, bias, width, bounds,
                  int(pass_tokens if pass_tokens is not None else len(rows)), cap.softcap, batch,
                  dtype=cap.dtype, device=cap.device, id_part=cap.id_part, call=cap.call, rows=rows, cols=cols,
                  model_logits=model_logits, mask=mask,
                  support=None if mask is None else support_dict(support_of_mask(mask)),  # a dict from either helper
                  sliding_window=cap.sliding_window if mask is not None else None,
                  route=cap.route, checks=dict(cap.checks))
    op.deviation = deviation(cap, op)
    return op


def deviation(cap: Capture, op: Operator) -> float | None:
    """max |a_hat - the model's probabilities on the operator's rows and columns, renormalised|."""
    probs = cap.head_probs(op.head, op.batch)
    if probs is None:
        return None
    ref = probs.astype(np.float64)[np.ix_(op.rows, op.cols)]
    if op.mask is not None:  # a native operator: the whole matrix as the model computed it, zeros included
        return float(np.abs(op.a_hat() - ref).max())
    sums = ref.sum(axis=1, keepdims=True)
    if not np.all(sums > 0):
        return float("inf")
    return float(np.abs(op.a_hat() - ref / sums).max())


def operators_for(cap: Capture, head: int, widths: list[int], batch: int = 0,
                  operators: str = "blocks") -> list[Operator | Refusal]:
    """Every operator of one head of one batch item of one call (or the refusal in its place):
    the full operator when the mask removes nothing among the valid positions; when it is
    causal, the common-prefix block of each width in ``widths`` (``operators`` "blocks" or
    "both") and the native masked operator (``operators`` "native" or "both").  Each operator
    carries its deviation from the model's probabilities; one above its allowance
    (``checked``) is replaced by a refusal."""
    if operators not in OPERATOR_KINDS:
        raise ValueError(f"operators must be one of {', '.join(OPERATOR_KINDS)}, got {operators!r}")
    if not 0 <= batch < cap.batch_size:
        raise IndexError(f"batch item {batch} out of range: the capture has {cap.batch_size} items")
    rows, cols = valid_positions(cap, batch)

    def refuse(reason):
        return Refusal(cap.module, cap.layer, head, batch, reason)

    if rows.size == 0 or cols.size == 0:
        return [refuse("every position is masked")]
    sub = cap.head_masked(batch, head)[np.ix_(rows, cols)]
    if sub.all(axis=1).any():
        return [refuse("the mask leaves a query row without keys")]
    out: list[Operator | Refusal] = []
    if not sub.any():
        out.append(_operator(cap, head, batch, rows, cols, "cross" if cap.attention == "cross" else "encoder-self"))
    elif cap.attention == "cross" or not causal_like(sub) or len(rows) != len(cols):
        return [refuse("the mask is neither a padding mask nor causal")]
    else:
        p = len(rows)
        for width in (widths if operators != "native" else []):
            bounds = block_bounds(p, width)
            if bounds is None:
                out.append(refuse(f"pass of {p} tokens is too short for block width {width} (needs {2 * width - 1})"))
                continue
            if sub[bounds[0]:bounds[1], :width].any():
                out.append(refuse(f"the mask removes keys inside the width-{width} block "
                                  f"(a sliding window shorter than the block's reach)"))
                continue
            out.append(_operator(cap, head, batch, rows[bounds[0]:bounds[1]], cols[:width], "decoder-self-block",
                                 width, bounds, p))
        if operators != "blocks":
            out.append(_operator(cap, head, batch, rows, cols, "decoder-self", mask=~sub))
    return [checked(op, refuse) if isinstance(op, Operator) else op for op in out]


def checked(op: Operator, refuse) -> Operator | Refusal:
    """``op`` with the tolerance it passed, or ``refuse(reason)`` when its deviation exceeds its
    allowance: ``tolerance(dtype)``, widened by the rounding of float32 logits (``allowance.py``)
    only when the deviation is above it."""
    if op.deviation is None:
        return op
    floor = tolerance(op.dtype)
    if op.deviation <= floor:
        op.tolerance = floor
        return op
    allowed = allowance(op, floor)
    if op.deviation <= allowed:
        op.tolerance = allowed
        return op
    what = f"{floor:g} ({op.dtype})" if allowed == floor else \
        f"its allowance {allowed:.3g} ({op.dtype}: {floor:g} plus the rounding of its logits)"
    return refuse(f"rowsoftmax of the record deviates from the model's attention probabilities by "
                  f"{op.deviation:.3g} > {what}")


def full_operator(cap: Capture, head: int, batch: int = 0) -> Operator:
    """The full operator of one head (ValueError with the reason when there is none)."""
    return _only(operators_for(cap, head, [], batch))


def block_operator(cap: Capture, head: int, width: int, batch: int = 0) -> Operator:
    """The width-N common-prefix block of a causal self-attention call (ValueError with the
    reason when there is none, e.g. P < 2N-1)."""
    return _only(operators_for(cap, head, [width], batch))


def _only(found: list) -> Operator:
    if len(found) != 1 or isinstance(found[0], Refusal):
        raise ValueError(found[0].reason if found and isinstance(found[0], Refusal) else "no such operator")
    return found[0]


def slug(text: str) -> str:
    s = re.sub(r"^(pydoc|image|text):", lambda m: "image" if m.group(1) == "image" else "", text)
    return re.sub(r"[^A-Za-z0-9.]+", ".", s).strip(".") or "src"


def record_id(tag: str, source_id: str, op: Operator, batch_size: int = 1) -> str:
    """``<tag>-<source>[-b<item>]-[<stack>-]L<layer>-H<head>-<kind>[-c<call>]``: the batch item
    only when the batch has several, the stack only for models with several attention stacks, a
    call index only for a module called again in one pass."""
    kind = {"encoder-self": "self", "cross": "cross", "decoder-self": "native"}.get(op.attention,
                                                                                  f"blk{op.block_width}")
    item = f"-b{op.batch}" if batch_size > 1 else ""
    call = f"-c{op.call}" if op.call else ""
    rid = f"{tag}-{slug(source_id)}{item}-{op.id_part}L{op.layer:02d}-H{op.head:02d}-{kind}{call}"
    if len(rid) > 200:
        rid = rid[:180] + "-" + hashlib.sha256(rid.encode()).hexdigest()[:12]
    return rid


def provenance(op: Operator, *, model: str, family: str, checkpoint_sha256: str | None, source_id: str,
               source_sha256: str | None, extra: dict | None = None) -> dict:
    """Provenance keys of docs/record-format.md, plus the producer's diagnostics and the capture's
    own check (``capture_max_deviation``, ``capture_tolerance``)."""
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
        "capture_dtype": op.dtype,
        "python_version": platform.python_version(),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
    }
    prov.update(extra or {})
    prov["device"] = op.device
    if op.softcap is not None:
        prov["softcap"] = op.softcap
    if op.model_logits is not None:
        prov["logits_computed_in"] = op.dtype  # the logits as the model rounded them (form logits)
    if op.support is not None:
        prov["support"] = op.support["form"]
        if op.sliding_window is not None:
            prov["sliding_window"] = op.sliding_window  # the module's own window; the support is its mask's
    if op.route != INTERFACE_ROUTE:  # the first route's records keep the bytes of earlier versions
        prov["route"] = op.route
    prov.update(op.checks or {})
    prov["capture_max_deviation"] = op.deviation
    prov["capture_tolerance"] = op.tolerance if op.tolerance is not None else tolerance(op.dtype)
    return prov


def write_operator(store, rid: str, op: Operator, prov: dict) -> str:
    """Write one extracted (unbracketed) record, form ``qk`` (``logits`` when soft-capped); returns its id."""
    with RecordWriter(store, rid, prov, support=op.support, mask=op.mask) as writer:
        if op.form == "qk":
            writer.set_qk(op.queries, op.keys, op.scale, op.bias)
        else:
            writer.set_logits(op.logits())
        writer.set_a_hat(op.a_hat())
    return rid
