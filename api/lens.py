"""TransformerLens models in ``softrank.capture`` and ``softrank.records_from_cache`` (docs/python.md).

``softrank.capture(hooked_transformer)`` records, by forward hooks on its ``hook_attn_scores``
and ``hook_pattern`` points, the logits each attention call fed to its softmax and the
probabilities it returned; ``records_from_cache(cache)`` reads the same two tensors from a
``run_with_cache`` cache.  Either gives one record of form ``logits`` per (call, batch item,
head), checked against the pattern (``fastpath/capture/lens.py``; route ``"transformer-lens"``).
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

from softrank.api.masked import mask_arguments
from softrank.api.records import Record
from softrank.errors import InputError


class LensCaptured:
    """What a ``softrank.capture`` block recorded from a TransformerLens model: ``captures`` (one
    per attention call: scores and pattern of every head) and :meth:`records`."""

    def __init__(self, session, model_name: str, family: str):
        self.session, self.model_name, self.family = session, model_name, family

    @property
    def captures(self) -> list:
        return self.session.calls

    @property
    def refused(self) -> list[tuple[str, str]]:
        return list(self.session.refused)

    @property
    def batch_size(self) -> int:
        return max((c.batch_size for c in self.captures), default=0)

    def __len__(self) -> int:
        return len(self.captures)

    def records(self, heads=None, batch: int | None = None, source_id: str | None = None) -> list[Record]:
        """One record per captured operator (every head, or ``heads``; every batch item, or item
        ``batch``), over the item's tokens: form ``logits``, with the causal (or any other) mask
        as its support (``record.mask``); one that fails its check against ``hook_pattern`` is left
        out with a ``CaptureWarning``.  Ids name the model, the input (``source_id``, default
        ``input.<12 hex digits of the SHA-256 of the model's input>``), item, layer and head."""
        return lens_records(self.captures, model=self.model_name, family=self.family, heads=heads, batch=batch,
                            source_id=source_id, digest=self.session.input_sha256)


def lens_records(calls, *, model: str, family: str, heads=None, batch=None, source_id=None, digest=None) -> list:
    from softrank.fastpath.capture.lens import Refusal, operators_for, provenance, record_id, stacks_of
    from softrank.fastpath.capture.live import CaptureWarning, model_tag as tag_of

    size = max((c.batch_size for c in calls), default=0)
    if batch is not None and not (isinstance(batch, int) and 0 <= batch < max(size, 1)):
        raise InputError("records", "batch", f"batch item {batch!r} out of range: the capture holds {size} "
                                             f"batch item{'s' if size != 1 else ''} (0..{size - 1})")
    if source_id is None:
        source_id = f"input.{digest[:12]}" if digest else "memory"
    tag, stacks = tag_of(model), stacks_of(calls)
    out = []
    for call in calls:
        for b in (range(call.batch_size) if batch is None else [batch]):
            for head in (range(call.num_heads) if heads is None else heads):
                op = operators_for(call, head, b)
                if isinstance(op, Refusal):
                    warnings.warn(op.message(), CaptureWarning, stacklevel=3)
                    continue
                prov = provenance(op, model=model, family=family, source_id=source_id, source_sha256=digest)
                out.append(_record(op, record_id(tag, source_id, op, stacks), prov))
    return out


def _record(op, rid: str, prov: dict) -> Record:
    """The in-memory record of one operator; a masked one carries its mask (``mask=``)."""
    masked = mask_arguments(op.mask, Record.from_logits, "mask",
                            "masked operators (a causal TransformerLens model) need a record model with supports "
                            "(Record.from_logits(..., mask=...)), which this installation lacks")
    return Record.from_logits(op.logits, record_id=rid, provenance=prov, **masked)


@contextmanager
def capture_lens(model, layers=None, family: str | None = None):
    """``softrank.capture`` for a TransformerLens hooked model (``HookedTransformer``, ...)."""
    from softrank.fastpath.capture.lens import LensSession, lens_problem
    from softrank.fastpath.capture.live import CaptureWarning

    problem = lens_problem(model)
    session = LensSession(model, None if layers is None else set(layers))
    cap = LensCaptured(session, str(getattr(model.cfg, "model_name", "") or type(model).__name__),
                       family or session.family)
    if problem:
        warnings.warn(f"softrank capture: {problem}; nothing is recorded", CaptureWarning, stacklevel=3)
        yield cap
        return
    with session:
        yield cap
    for module, reason in session.refused:
        warnings.warn(f"softrank capture: {module}: {reason}; not recorded", CaptureWarning, stacklevel=3)


def records_from_cache(cache, heads=None, batch: int | None = None, source_id: str | None = None,
                       tokens=None, family: str | None = None) -> list[Record]:
    """Records of every attention call in a TransformerLens ``run_with_cache`` cache: the logits of
    ``cache["attn_scores", l]``, each checked against ``cache["pattern", l]`` (both must be cached).
    ``tokens``: the model's input, to name it by its SHA-256 as ``softrank.capture`` does; else
    ``source_id`` (default ``"cache"``)."""
    try:
        import torch  # noqa: F401
    except ImportError:
        raise ImportError("softrank.records_from_cache needs torch (not installed): "
                          "pip install 'softrank[producer]'") from None
    from softrank.fastpath.capture.live import input_digest
    from softrank.fastpath.capture.lens import calls_from_cache

    if not (hasattr(cache, "cache_dict") or isinstance(cache, dict)):
        raise InputError("records_from_cache", "cache", f"expected a TransformerLens ActivationCache (run_with_cache) "
                                                        f"or a dict of hook names, got {type(cache).__name__}")
    try:
        calls = calls_from_cache(cache)
    except (KeyError, ValueError) as err:
        raise InputError("records_from_cache", "cache", str(err).strip("'\"")) from None
    if not calls:
        raise InputError("records_from_cache", "cache", "holds no hook_attn_scores (run_with_cache without a "
                                                        "names_filter that drops them)")
    cfg = getattr(getattr(cache, "model", None), "cfg", None)
    digest = None if tokens is None else input_digest((tokens,), {})
    return lens_records(calls, model=str(getattr(cfg, "model_name", "") or "transformer-lens"),
                        family=family or str(getattr(cfg, "original_architecture", None) or "transformer-lens"),
                        heads=heads, batch=batch, digest=digest,
                        source_id=source_id if source_id is not None or digest else "cache")
