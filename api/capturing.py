"""``softrank.capture(model)``: capture a transformers model's attention in a ``with`` block.

Like TransformerLens' ``run_with_cache`` or nnsight's ``trace``, the capture cleans up after
itself: the capturing attention is selected on entry and the model's own attention setting is
restored on exit, also on an exception.  A model whose attention cannot be captured gets a
``CaptureWarning`` and records nothing; so does each attention call or operator that cannot be
recorded exactly.  Needs torch and transformers (the ``producer`` extra): without them,
``capture`` raises one ``ImportError`` naming the extra.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from softrank.api.masked import mask_arguments
from softrank.api.records import Record
from softrank.errors import InputError

PRODUCER_EXTRA = "pip install 'softrank[producer]'"


class Captured:
    """What a ``softrank.capture`` block recorded: ``captures`` (one per attention call: queries,
    keys, scale, bias, mask and the model's own probabilities of every head of one layer) and
    :meth:`records`."""

    def __init__(self, session, model, name: str | None = None):
        self.session = session
        config = getattr(model, "config", None)
        self.model_name = name or str(getattr(config, "_name_or_path", "") or type(model).__name__)

    @property
    def captures(self) -> list:
        return self.session.captures

    @property
    def refused(self) -> list[tuple[str, str]]:
        """(module, reason) of every attention call that was not recorded."""
        return list(getattr(self.session, "refused", []))

    @property
    def batch_size(self) -> int:
        return max((c.batch_size for c in self.captures), default=0)

    @property
    def num_heads(self) -> int:
        return max((c.num_heads for c in self.captures), default=0)

    def __len__(self) -> int:
        return len(self.session.captures)

    def records(self, widths=None, heads=None, batch: int | None = None, source_id: str | None = None,
                operators: str = "blocks") -> list[Record]:
        """One in-memory :class:`~softrank.api.records.Record` per captured operator, for every
        batch item (or only item ``batch``), over the item's tokens only (padding, left or
        right, dropped): the full operator for encoders and cross-attention; for causal
        self-attention the common-prefix blocks of each width in ``widths`` (default: the widest
        the item allows, N = (P + 1) // 2 for P tokens).  Form ``qk`` (``logits`` when the model
        soft-caps its logits).  Each operator is checked against the model's own attention
        probabilities (provenance ``capture_max_deviation``); one that cannot be recorded
        exactly is left out with a ``CaptureWarning``.  Record ids name the model, the input
        (``source_id``, default ``input.<first 12 hex digits of the input's SHA-256>``), the
        batch item (when the batch has several), the layer, the head and the block.

        ``operators``: what a causal self-attention call gives: ``"blocks"`` (the common-prefix
        blocks above), ``"native"`` (the masked operator the model applies, over the item's
        tokens: support causal, or a window when the model's sliding window is shorter than the
        pass; record kind ``native``, provenance ``support``) or ``"both"``."""
        from softrank.fastpath.capture.live import (OPERATOR_KINDS, CaptureWarning, Refusal, link_cross_queries,
                                                    model_tag as _tag, operators_for, provenance, record_id)

        if not isinstance(operators, str) or operators not in OPERATOR_KINDS:
            raise InputError("records", "operators", f"expected one of {', '.join(OPERATOR_KINDS)}, got {operators!r}")
        size = self.batch_size
        if batch is not None and not (isinstance(batch, int) and 0 <= batch < max(size, 1)):
            raise InputError("records", "batch", f"batch item {batch!r} out of range: the capture holds "
                                                 f"{size} batch item{'s' if size != 1 else ''} (0..{size - 1})")
        widths, heads = _checked(widths, "widths", None), _checked(heads, "heads", self.num_heads)
        passes = list(getattr(self.session, "passes", []) or [getattr(self.session, "input_sha256", None)])
        link_cross_queries(self.captures)
        out, tag = [], _tag(self.model_name)
        for cap in self.captures:
            index = getattr(cap, "pass_index", 0)
            digest = passes[min(index, len(passes) - 1)]
            base = source_id if source_id is not None else (f"input.{digest[:12]}" if digest else "memory")
            source = f"{base}-pass{index}" if index else base  # each forward pass its own source
            items = range(cap.batch_size) if batch is None else [batch]
            for b in items:
                ws = list(widths) if widths else [_widest(cap, b)]
                for head in (range(cap.num_heads) if heads is None else heads):
                    for op in operators_for(cap, head, ws, b, operators=operators):
                        if isinstance(op, Refusal):
                            warnings.warn(op.message(), CaptureWarning, stacklevel=2)
                            continue
                        prov = provenance(op, model=self.model_name, family=self.session.family, checkpoint_sha256=None,
                                          source_id=source, source_sha256=digest,
                                          extra={"kv_head": head // cap.n_rep, "batch_item": b,
                                                 "producer": "softrank.capture"})
                        rid = record_id(tag, source, op, batch_size=cap.batch_size)
                        out.append(_record(op, rid, prov))
        return out


def _record(op, rid: str, prov: dict) -> Record:
    """The in-memory record of one operator; a native operator carries its mask (``mask=``)."""
    masked = mask_arguments(op.mask, Record.from_qk, "operators",
                            "native (masked) operators need a record model with supports "
                            "(Record.from_qk(..., mask=...)), which this installation lacks; use operators='blocks'")
    if op.form == "qk":
        return Record.from_qk(op.queries, op.keys, op.scale, op.bias, record_id=rid, provenance=prov, **masked)
    return Record.from_logits(op.logits(), record_id=rid, provenance=prov, **masked)


def _checked(values, field: str, count: int | None):
    """``widths`` (positive integers) or ``heads`` (0..count-1) as given, or an ``InputError``
    naming the argument and what exists."""
    if values is None:
        return None
    values = list(values)
    for v in values:
        if count is None and not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
            raise InputError("records", field, f"block widths must be positive integers, got {v!r}")
        if count is not None and not (isinstance(v, int) and not isinstance(v, bool) and 0 <= v < count):
            raise InputError("records", field, f"head {v!r} does not exist: the captured layers have {count} "
                                               f"heads (0..{count - 1})")
    return values


def _check_layers(model, layers) -> None:
    """``capture(model, layers=...)``: each layer one of the model's attention layers."""
    if layers is None:
        return
    from softrank.fastpath.capture.live import ModuleNames

    found = sorted({part[1] for part in ModuleNames(model).parts.values()})
    bad = [v for v in layers if not isinstance(v, int) or isinstance(v, bool) or (found and v not in found)]
    if bad:
        shown = f"{found[0]}..{found[-1]}" if found == list(range(found[0], found[-1] + 1)) else str(found)
        raise InputError("capture", "layers", f"layer {bad[0]!r} does not exist: the model's attention layers are "
                                              f"{shown if found else 'not known'}")


def _widest(cap, batch: int) -> int:
    from softrank.fastpath.capture.live import valid_positions

    rows, _ = valid_positions(cap, batch)
    return max(1, (len(rows) + 1) // 2)


def require_torch() -> None:
    """One clear ``ImportError`` when torch or transformers is missing."""
    import importlib.util
    import sys

    missing = []
    for name in ("torch", "transformers"):
        try:
            absent = sys.modules[name] is None if name in sys.modules else importlib.util.find_spec(name) is None
        except (ImportError, ValueError):
            absent = True
        if absent:
            missing.append(name)
    if missing:
        raise ImportError(f"softrank.capture needs {' and '.join(missing)} (not installed): {PRODUCER_EXTRA}")


@contextmanager
def capture(model, layers=None, family: str | None = None, name: str | None = None):
    """``with softrank.capture(model) as cap: model(**inputs)``; then ``cap.captures`` and
    ``cap.records(widths=[64])``.  ``layers`` restricts the layers kept (a layer the model lacks
    is an ``InputError``); ``family`` names the provenance family (default:
    ``model.config.model_type``); ``name`` the provenance model (default: the config's
    ``name_or_path``, else the class name); neither changes what is captured.  Each forward
    pass in the block is its own source (``-pass1``, ``-pass2`` ... after the first)."""
    require_torch()
    from softrank.fastpath.capture.lens import is_lens_model, unwrap

    model = unwrap(model)  # an nnsight wrapper: its underlying module

    if is_lens_model(model):  # TransformerLens: its hook points (api/lens.py)
        from softrank.api.lens import capture_lens

        with capture_lens(model, layers=layers, family=family) as cap:
            yield cap
        return
    from softrank.fastpath.capture.live import capturing

    _check_layers(model, layers)
    with capturing(model, family=family, layers=None if layers is None else set(layers)) as session:
        yield Captured(session, model, name)
