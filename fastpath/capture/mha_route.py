"""``nn.MultiheadAttention`` on the softmax route (``softmax_route.py``).

Inside a capture block on that route, torch's fused multi-head attention paths are off
(``torch.backends.mha.set_fastpath_enabled(False)``; the previous setting is restored on exit,
also on an exception): ``nn.MultiheadAttention`` and ``nn.TransformerEncoderLayer`` then run
``F.multi_head_attention_forward``, which computes the attention with
``F.scaled_dot_product_attention`` (``need_weights=False``, what ``nn.TransformerEncoderLayer``
asks for: recorded by ``sdpa_route.py``) or with an explicit softmax over a ``[batch * heads,
queries, keys]`` tensor followed by ``bmm`` with the values (``need_weights=True``: recorded by
the softmax route, the heads read from the module's ``num_heads``).  Either way provenance
``route`` is ``multihead-attention``.

``F.multi_head_attention_forward`` is a Python function that hands itself to a torch-function
mode whole; :func:`forward` is the same function (same code, same module globals) without that
hand-over, so the mode sees the calls inside it.
"""

from __future__ import annotations

import types
from contextlib import contextmanager

import torch
import torch.nn.functional as F


def _no_handover(fn):
    namespace = dict(vars(F))
    namespace["has_torch_function"] = lambda *args, **kwargs: False
    copy = types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__kwdefaults__ = fn.__kwdefaults__
    return copy


forward = _no_handover(F.multi_head_attention_forward)


@contextmanager
def fast_path_off():
    """torch's fused multi-head attention (and nested-tensor encoder) fast path off for the block."""
    before = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        yield
    finally:
        torch.backends.mha.set_fastpath_enabled(before)
