"""Naming the attention modules of a model (``ModuleNames``).

Module naming is static, from the model's structure: the attention modules are
the modules whose class calls transformers' attention interface (or an adapter's class); each
has a *stack* (the module path before its first numeric component, e.g. ``encoder.layer``), a
*layer* (that number) and a *sub-path* (the rest), and a kind (``cross`` when the module attends
to another sequence).  Record ids qualify a layer by its stack only when the model has several
stacks, and by its sub-path only when a layer has several attention modules of one kind, so a
single-stack model's ids read ``...-L03-H05-self`` as before.
"""

from __future__ import annotations

import inspect
import re

_NUMBER_RE = re.compile(r"(?:^|\.)(\d+)(?=\.|$)")
_CROSS_RE = re.compile(r"cross|encdec|enc_dec|encoder_attn", re.IGNORECASE)


def _calls_interface(cls) -> bool:
    """Whether a module class's forward goes through transformers' attention dispatch."""
    cached = _INTERFACE_CLASSES.get(cls)
    if cached is None:
        try:
            source = inspect.getsource(cls.forward)
        except (OSError, TypeError):
            source = ""
        cached = "ALL_ATTENTION_FUNCTIONS" in source
        _INTERFACE_CLASSES[cls] = cached
    return cached


_INTERFACE_CLASSES: dict = {}


def is_cross(name: str, module) -> bool:
    """A module that attends to another sequence (encoder-decoder, Q-Former queries to an image)."""
    return bool(getattr(module, "is_cross_attention", False)) or bool(_CROSS_RE.search(name.rsplit(".", 1)[-1])) \
        or bool(_CROSS_RE.search(name))


def split_name(name: str) -> tuple[str, int, str]:
    """(stack, layer, sub-path) of a module path: ``encoder.layer.3.attention.self`` ->
    (``encoder.layer``, 3, ``attention.self``); no number: (path, 0, "")."""
    match = _NUMBER_RE.search(name)
    if match is None:
        return name, 0, ""
    return name[:match.start()], int(match.group(1)), name[match.end() + 1:]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", ".", text).strip(".") or "attn"


class ModuleNames:
    """Stack, layer, kind and record-id qualifier of every attention module of a model (static)."""

    def __init__(self, model, extra_classes: tuple = ()):
        self.names = {id(mod): name for name, mod in model.named_modules()}
        found = [(name, mod) for name, mod in model.named_modules()
                 if isinstance(mod, extra_classes) or _calls_interface(type(mod))]
        self.parts: dict[str, tuple[str, int, str, bool]] = {}
        for name, mod in found:
            stack, layer, sub = split_name(name)
            self.parts[name] = (stack, layer, sub, is_cross(name, mod))
        stacks = sorted({p[0] for p in self.parts.values()})
        short = {s: (s.rsplit(".", 1)[0] if "." in s else s) for s in stacks}
        if len(set(short.values())) < len(stacks):
            short = {s: s for s in stacks}
        self.stack_part = {s: (_slug(short[s]) + "-" if len(stacks) > 1 else "") for s in stacks}
        per_slot: dict[tuple, int] = {}
        for stack, layer, _, cross in self.parts.values():
            per_slot[(stack, layer, cross)] = per_slot.get((stack, layer, cross), 0) + 1
        self.per_slot = per_slot

    def name_of(self, module) -> str:
        return self.names.get(id(module)) or type(module).__name__  # the root module: its class name

    def describe(self, name: str, module) -> tuple[int, bool, str]:
        """(layer, cross, record-id qualifier) of a module."""
        if name not in self.parts:  # an attention module found only when it ran
            stack, layer, sub = split_name(name)
            self.parts[name] = (stack, layer, sub, is_cross(name, module))
            self.stack_part.setdefault(stack, _slug(stack) + "-" if self.stack_part else "")
            self.per_slot[(stack, layer, self.parts[name][3])] = self.per_slot.get((stack, layer, self.parts[name][3]), 0) + 1
        stack, layer, sub, cross = self.parts[name]
        qualifier = self.stack_part.get(stack, "")
        if self.per_slot.get((stack, layer, cross), 1) > 1 and sub:
            qualifier += _slug(sub) + "-"
        return layer, cross, qualifier
