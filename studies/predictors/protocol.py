"""The predictor study's frozen protocol (``docs/predictors-protocol.md``): the file is read, its
SHA-256 compared with the one this code was written against, and the study refuses to start when
they differ. Every setting the study uses is written here once, as the protocol fixes it; the
protocol's text, not this module, is the reference (a change there is a new protocol, and a new
hash here)."""

from __future__ import annotations

import hashlib
from fractions import Fraction
from pathlib import Path

from softrank.errors import InputError

#: SHA-256 of the protocol file the code implements (frozen on 2026-12-07, before any run).
PROTOCOL_SHA256 = "97d6e7821274bc4c9f8af6b7e1fc862b8d4e853122f50cd00d291edd5d3dac31"
#: where the protocol lives in the repository (the package root is the repository root)
PROTOCOL_PATH = Path(__file__).resolve().parents[2] / "docs" / "predictors-protocol.md"

EPS = Fraction(1, 4)  # the one tolerance of the targets
TARGETS = ("U_p", "L_p", "mid_p")
#: the text families of the two panels, by the replay table's attention kind
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
