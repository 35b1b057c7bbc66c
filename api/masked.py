"""The mask of a captured operator as arguments of a record maker (``Record.from_qk``,
``Record.from_logits``), for both capture front ends (``softrank.api.capturing``, ``softrank.api.lens``)."""

from __future__ import annotations

import inspect

from softrank.errors import InputError


def mask_arguments(mask, maker, field: str, lacking: str) -> dict:
    """``{"mask": mask}`` for a masked operator, ``{}`` for one without a mask; an ``InputError``
    (``records``, ``field``: ``lacking``) when the record maker ``maker`` takes no mask."""
    masked = {} if mask is None else {"mask": mask}
    if masked and "mask" not in inspect.signature(maker).parameters:
        raise InputError("records", field, lacking)
    return masked
