"""The support of a masked operator: which keys each query sees (docs/record-format.md).

A record without a support has every entry visible.  With one, ``A_ij = exp(H_ij) / sum over the
keys k that query i sees of exp(H_ik)`` where query i sees key j, and ``A_ij = 0`` exactly elsewhere.
Three forms: ``causal`` (query i sees key j iff ``j <= i + offset``), ``window`` (iff
``i + offset - size < j <= i + offset``) and ``packed`` (the m x N bits, ``numpy.packbits`` of the
row-major mask, bit order big, padding bits 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from softrank.errors import InputError

FIELDS = {"causal": ("offset",), "window": ("size", "offset"), "packed": ("bits",)}
THEOREM_REFUSAL = "the theorem assumes one common positive support"


@dataclass(frozen=True, eq=False)
class Support:
    """A support: ``form`` with its integers (``offset``, ``size``) or its packed ``bits`` (uint8)."""

    form: str
    offset: int = 0
    size: int = 0
    bits: np.ndarray | None = None

    def boolean(self, m: int, n: int) -> np.ndarray:
        """The m x N bool array, True where the query sees the key (of a support already checked)."""
        if self.form == "packed":
            return np.unpackbits(self.bits, count=m * n).reshape(m, n).astype(bool)
        ahead = np.arange(m)[:, None] + self.offset - np.arange(n)  # i + offset - j
        return (ahead >= 0) & (ahead < self.size if self.form == "window" else True)


def support_mask(support, m: int, n: int, where: str) -> np.ndarray | None:
    """The checked m x N bool array of ``support`` (None: every key visible); else ``InputError``
    naming the field: an unknown form, an ill-typed or out-of-range integer, malformed packed bits
    (dtype, length, nonzero padding), a row with no visible key."""
    if support is None:
        return None

    def fail(name: str, message: str):
        raise InputError(where, "operator.support" + name, message)

    if not isinstance(support, Support) or support.form not in FIELDS:
        fail(".form", f"expected one of {sorted(FIELDS)}, got {getattr(support, 'form', support)!r}"[:120])
    for name in FIELDS[support.form]:
        value, high, size = getattr(support, name), (n - 1 if name == "offset" else 2**63 - 1), -(-m * n // 8)
        if name == "bits" and (type(value) is not np.ndarray or value.dtype != np.uint8 or value.shape != (size,)):
            fail(".bits", f"expected a uint8 array of shape [{size}] (ceil(m N / 8))")
        if name == "bits" and value[-1] & ((1 << (-m * n % 8)) - 1):
            fail(".bits", "nonzero padding bits after the m N mask bits")
        if name != "bits" and (type(value) is not int or not int(name == "size") <= value <= high):
            fail("." + name, f"expected an integer in [{int(name == 'size')}, {high}], got {value!r}"[:120]
                 + (" (past the matrix)" if type(value) is int and value > high else ""))
    mask = support.boolean(m, n)
    if not mask.any(axis=1).all():
        fail("", f"row {int(np.argmin(mask.any(axis=1)))} has no visible key")
    return mask


def support_of_mask(mask) -> Support | None:
    """The compact support of a user's m x N bool mask (None when every entry is True): causal or
    window when the mask is one (with the offset read off row 0), else packed; the same mask always
    gives the same support."""
    mask = np.asarray(mask, dtype=bool)
    if mask.all():
        return None
    offset, first = mask.shape[1] - 1 - int(mask[0, ::-1].argmax()), mask.argmax(axis=1)  # first: per row
    i = int(np.argmax(first))  # the row whose window starts last
    for cand in (Support("causal", offset), Support("window", offset, i + offset + 1 - int(first[i]))):
        if np.array_equal(cand.boolean(*mask.shape), mask):  # an empty row 0 matches neither
            return cand
    return Support("packed", bits=np.packbits(mask.reshape(-1)))


def refuse_masked(record) -> None:
    """The theorem's quantities (C = P log(A) P, tau, kappa) need positive entries: a masked
    record is refused in one line."""
    if record.mask is not None:
        raise InputError(str(record.path or record.record_id), "operator.support", THEOREM_REFUSAL)
