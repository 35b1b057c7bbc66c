"""``softrank.capture(model)``: capture a transformers model's attention in a ``with`` block.

Like TransformerLens' ``run_with_cache`` or nnsight's ``trace``, the capture cleans up after
itself: the capturing attention is selected on entry and the model's own attention setting is
restored on exit, also on an exception.  A model whose attention cannot be captured gets a
``CaptureWarning`` and records nothing.  Needs torch and transformers (the ``producer`` extra).
"""

from __future__ import annotations

from contextlib import contextmanager

from softrank.api.records import Record


class Captured:
    """What a ``softrank.capture`` block recorded: ``captures`` (one per attention call: queries,
    keys, scale, bias and mask of every head of one layer) and :meth:`records`."""

    def __init__(self, session, model):
        self.session = session
        config = getattr(model, "config", None)
        self.model_name = str(getattr(config, "_name_or_path", "") or type(model).__name__)

    @property
    def captures(self) -> list:
        return self.session.captures

    def __len__(self) -> int:
        return len(self.session.captures)

    def records(self, widths=None, heads=None, batch: int = 0, source_id: str = "memory") -> list[Record]:
        """One in-memory :class:`~softrank.api.records.Record` (form ``qk``) per captured operator:
        full operators for encoders and cross-attention; for causal self-attention the
        common-prefix blocks of each width in ``widths`` (default: the widest the pass allows,
        N = (P + 1) // 2 for P tokens)."""
        from softrank.fastpath.capture.models import _tag
        from softrank.fastpath.capture.operators import operators_for, provenance, record_id

        out = []
        tag = _tag(self.model_name)
        for cap in self.captures:
            ws = list(widths) if widths else [_widest(cap, batch)]
            for head in (range(cap.num_heads) if heads is None else heads):
                for op in operators_for(cap, head, ws, batch):
                    prov = provenance(op, model=self.model_name, family=self.session.family, checkpoint_sha256=None,
                                      source_id=source_id, source_sha256=None,
                                      extra={"kv_head": head // cap.n_rep, "producer": "softrank.capture"})
                    out.append(Record.from_qk(op.queries, op.keys, op.scale, op.bias,
                                              record_id=record_id(tag, source_id, op), provenance=prov))
        return out


def _widest(cap, batch: int) -> int:
    valid = int((~cap.head_masked(batch).all(axis=1)).sum())
    return max(1, (valid + 1) // 2)


@contextmanager
def capture(model, layers=None, family: str | None = None):
    """``with softrank.capture(model) as cap: model(**inputs)``; then ``cap.captures`` and
    ``cap.records(widths=[64])``.  ``layers`` restricts the layers kept; ``family`` overrides the
    one read from ``model.config.model_type``."""
    from softrank.fastpath.capture.dispatch import capturing

    with capturing(model, family=family, layers=None if layers is None else set(layers)) as session:
        yield Captured(session, model)
