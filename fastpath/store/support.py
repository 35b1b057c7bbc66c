"""Supports of masked operators, producer side (docs/record-format.md, ``operator.support``).

A support says which keys each query sees (True: visible); the operator normalises over the
visible keys only and is exactly 0 elsewhere.  Its compact description is the JSON object a
record stores: ``{"form": "causal", "offset": k}`` (query i sees key j iff j <= i + k),
``{"form": "window", "size": w, "offset": k}`` (iff i + k - w < j <= i + k) or ``{"form":
"packed"}`` (the bits of the boolean mask, ``numpy.packbits`` of it row-major, stored as an
array).  :func:`support_of_mask` turns a boolean mask into that description, causal first, then
window, else packed, so every writer stores the same bytes for the same mask; all visible is
None (a full operator, no ``support`` key at all).

Torch-free; the masks and the compact form are the checker's (``softrank.replay.support``), so the
producer writes exactly what the reader rebuilds; a support object of the checker is accepted
wherever a description is (:func:`support_dict`).
"""

from __future__ import annotations

import numpy as np

from softrank.fastpath.float64 import rowsoftmax64
from softrank.replay.support import Support
from softrank.replay.support import support_of_mask as compact_support

FORMS = ("causal", "window", "packed")
KEYS = {"causal": ("form", "offset"), "window": ("form", "size", "offset"), "packed": ("form",)}  # as written


def causal_mask(m: int, n: int, offset: int) -> np.ndarray:
    """Query i sees key j iff j <= i + offset (the checker's ``Support.boolean``)."""
    return Support("causal", offset).boolean(m, n)


def window_mask(m: int, n: int, size: int, offset: int) -> np.ndarray:
    """Query i sees key j iff i + offset - size < j <= i + offset (the ``size`` most recent keys)."""
    return Support("window", offset, size).boolean(m, n)


def support_of_mask(mask) -> dict | None:
    """The compact description of a boolean m x N mask (True: the query sees the key), as the
    checker's ``support_of_mask`` finds it (None when every entry is visible, else causal, window
    or packed), as a plain dict; ``ValueError`` for a mask that is not 2-d boolean or leaves a row
    with no visible key (a producer's mistake, never written)."""
    mk = np.asarray(mask)
    if mk.dtype != np.bool_ or mk.ndim != 2 or 0 in mk.shape:
        raise ValueError(f"a support mask is a non-empty 2-d boolean array, got {mk.dtype} {list(mk.shape)}")
    if not mk.any(axis=1).all():
        raise ValueError(f"the mask leaves row {int(np.flatnonzero(~mk.any(axis=1))[0])} with no visible key")
    return support_dict(compact_support(mk))


def support_dict(support) -> dict | None:
    """A support description as a plain dict (or None): a dict is checked and copied; an object
    with ``form`` (and ``offset``, ``size``) attributes, such as the checker's, is read."""
    if support is None:
        return None
    form = support.get("form") if isinstance(support, dict) else getattr(support, "form", None)
    keys = KEYS.get(form)
    if keys is None:
        raise ValueError(f"unknown support form {form!r} (one of {', '.join(FORMS)})")
    raw = dict(support) if isinstance(support, dict) else {key: getattr(support, key, None) for key in keys}
    raw.pop("bits", None)  # a packed support's bits come from its mask
    if set(raw) != set(keys):
        raise ValueError(f"a {form} support has the keys {list(keys)}, got {sorted(raw)}")
    for key in keys[1:]:
        if isinstance(raw[key], bool) or not isinstance(raw[key], (int, np.integer)):
            raise ValueError(f"support {key} must be an integer, got {raw[key]!r}")
    return {key: raw[key] if key == "form" else int(raw[key]) for key in keys}  # the canonical key order


def support_boolean(support, m: int, n: int, mask=None) -> np.ndarray:
    """The m x N boolean support of a description (``mask`` for a packed one, else its
    ``boolean(m, N)``); ``ValueError`` when the description is out of range or disagrees with
    ``mask``."""
    desc = support_dict(support)
    if desc is None:
        return np.ones((m, n), dtype=bool)
    if desc["form"] == "packed":
        if mask is None and hasattr(support, "boolean"):
            mask = support.boolean(m, n)
        if mask is None:
            raise ValueError("a packed support needs its boolean mask")
        built = np.asarray(mask)
    else:
        if not 0 <= desc["offset"] <= n - 1 or desc.get("size", 1) < 1:
            raise ValueError(f"support {desc} out of range for an operator of {n} keys")
        built = causal_mask(m, n, desc["offset"]) if desc["form"] == "causal" else \
            window_mask(m, n, desc["size"], desc["offset"])
    if built.shape != (m, n) or built.dtype != np.bool_:
        raise ValueError(f"support mask {built.dtype} {list(built.shape)} does not fit the operator [{m}, {n}]")
    if mask is not None and not np.array_equal(np.asarray(mask, dtype=bool), built):
        raise ValueError(f"the support {desc} disagrees with the given mask")
    if not built.any(axis=1).all():
        raise ValueError("the support leaves a row with no visible key")
    return built


def packed_bits(mask: np.ndarray) -> np.ndarray:
    """``numpy.packbits`` of the mask, row-major, big-endian bit order: ceil(m*N/8) uint8, padding 0."""
    return np.packbits(np.asarray(mask, dtype=bool).reshape(-1), bitorder="big")


def masked_rowsoftmax64(logits: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """float64 row softmax over the visible entries only (exact 0 elsewhere); ``mask`` None: all."""
    if mask is None:
        return rowsoftmax64(logits)
    h = np.asarray(logits, dtype=np.float64)
    h = np.where(mask, h, -np.inf)
    z = np.exp(h - h.max(axis=1, keepdims=True))
    z[~mask] = 0.0
    return z / z.sum(axis=1, keepdims=True)
