"""The predictor study's frozen protocol (``docs/predictors-protocol-2.md``, its second version): the file is read, its
SHA-256 compared with the one this code was written against, and the study refuses to start when
they differ. Every setting the study uses is written here once, as the protocol fixes it; the
protocol's text, not this module, is the reference (a change there is a new protocol, and a new
hash here)."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

from softrank.errors import InputError

#: SHA-256 of the protocol file the code implements (its second version, frozen on 2026-12-07
#: before the run of record; the first, docs/predictors-protocol.md, was 97d6e782...5dac31)
PROTOCOL_SHA256 = "34bce6a82e77c49a15039b736b6059065dc67c18de78bbc4055f645a5f0d0fc6"
#: where the protocol lives in the repository (the package root is the repository root)
PROTOCOL_PATH = Path(__file__).resolve().parents[2] / "docs" / "predictors-protocol-2.md"

EPS = Fraction(1, 4)  # the one tolerance of the targets
TARGETS = ("U_p", "L_p", "mid_p")
#: the text families of the two panels: their models (the replay table's ``model``) and attention
#: kinds (MiniLM's self-attention, SmolLM2's common-prefix blocks); the shipped vision and seq2seq
#: families have rows of these kinds too and are outside the protocol
MODELS = ("minilm", "smollm2")
ATTENTIONS = ("encoder-self", "decoder-self-block")
COMPARISONS = (("native", "structural"), ("native", "calibrated"), ("intrinsic", "calibrated"),
               ("native+intrinsic", "calibrated"))
VIEWS = ("held-out", "leave-one-source-out", "leave-one-head-out")
BOOTSTRAP = 2000
SEED = 0
BAND = 0.10  # the decision rule's relative-gain band [-0.10, +0.10]
SUBSET_PER_FAMILY = 288  # the intrinsic block's fixed subset, per family and panel


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def check_protocol(path: Path | str | None = None) -> dict:
    """The protocol file's hash, checked: ``{"path", "sha256", "matches": True}``; a missing,
    unreadable or changed file is an ``InputError`` naming it (the study does not start)."""
    p = Path(path) if path is not None else PROTOCOL_PATH
    try:
        if not p.is_file():
            raise InputError(str(p), "protocol", "not found (the study runs only under its frozen protocol)")
        digest = file_sha256(p)
    except OSError as err:
        raise InputError(str(p), "protocol", f"cannot be read ({err.strerror or err})") from None
    if digest != PROTOCOL_SHA256:
        raise InputError(str(p), "protocol", f"SHA-256 {digest[:16]}... differs from the frozen protocol's "
                                             f"{PROTOCOL_SHA256[:16]}...: the protocol changed, so the study "
                                             "does not start (a new protocol needs a new file and new code)")
    return {"path": str(p), "sha256": digest, "matches": True}
