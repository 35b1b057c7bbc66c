"""Input sources that need no download.

Text: passages of the documentation of Python's own standard library, rendered with
``pydoc.render_doc(..., renderer=pydoc.plaintext)`` for a fixed list of modules.  Each rendered
document is normalised (the FILE section and memory addresses such as ``0x7f...`` removed, so a
passage does not depend on where Python is installed or on the process; pydoc's ``|`` margins,
indentation, rules and blank lines removed, so the passage is mostly prose and signatures) and cut at line
boundaries into passages of about ``PASSAGE_CHARS`` characters.  A passage's id is
``pydoc:<module>#<index>`` and the SHA-256 of its UTF-8 bytes goes into provenance.  The text
depends on the Python version (recorded in provenance as ``python_version``).

Images (for vision models): deterministic smooth pseudo-random images from the seed, hashed the
same way (SHA-256 of the float32 pixel bytes).

Selection by seed is deterministic: the candidate list is in a fixed order and a
``random.Random(seed)`` picks from it.
"""

from __future__ import annotations

import hashlib
import importlib
import platform
import random
import re
from dataclasses import dataclass

import numpy as np

from softrank.validated.errors import InputError

# Fixed list of standard-library modules whose documentation is the text corpus.
STDLIB_MODULES: tuple[str, ...] = (
    "json", "csv", "heapq", "bisect", "textwrap", "fractions", "decimal", "statistics", "itertools",
    "functools", "collections", "pathlib", "argparse", "string", "difflib", "random", "datetime",
    "calendar", "re", "shutil", "tempfile", "hashlib", "base64", "struct", "array", "queue",
    "contextlib", "dataclasses", "enum", "fnmatch", "glob", "gzip", "zipfile", "tarfile", "logging",
    "math", "operator", "pprint", "reprlib", "shlex", "sqlite3", "typing", "unittest", "urllib.parse",
    "uuid", "weakref", "copy", "configparser", "html", "inspect",
)
PASSAGE_CHARS = 6000  # about 1200-1500 tokens: enough for a 1023-token pass (width 512)
_ADDRESS_RE = re.compile(r" at 0x[0-9a-fA-F]+")
_HEX_RE = re.compile(r"0x[0-9a-fA-F]{6,}")
_MARGIN_RE = re.compile(r"^[\s|]+")


@dataclass(frozen=True)
class Passage:
    source_id: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ImageSource:
    source_id: str
    pixels: np.ndarray  # (channels, height, width) float32

    @property
    def sha256(self) -> str:
        return hashlib.sha256(np.ascontiguousarray(self.pixels, dtype="<f4").tobytes()).hexdigest()


def python_version() -> str:
    return platform.python_version()


def render_module_doc(module_name: str) -> str:
    """Plain-text pydoc of a stdlib module, normalised (no FILE section, no memory addresses)."""
    import pydoc

    module = importlib.import_module(module_name)
    text = pydoc.render_doc(module, renderer=pydoc.plaintext)
    lines, skip = [], False
    for line in text.splitlines():
        if line in ("FILE", "MODULE REFERENCE"):
            skip = True  # sections that name local paths or URLs of this install
            continue
        if skip:
            if line.startswith(" ") or not line:
                continue
            skip = False
        line = _MARGIN_RE.sub("", line).rstrip()  # pydoc's " |  " class margins
        if not line or set(line) <= set("-= "):
            continue  # blank lines and rules carry no text
        lines.append(line)
    text = "\n".join(lines)
    text = _ADDRESS_RE.sub("", text)
    return _HEX_RE.sub("0x?", text)


def module_passages(module_name: str, chars: int = PASSAGE_CHARS) -> list[Passage]:
    """A module's documentation cut at line boundaries into passages of about ``chars``
    characters (the last, shorter remainder is dropped unless it is the only passage)."""
    text = render_module_doc(module_name)
    passages, current, size = [], [], 0
    for line in text.splitlines():
        current.append(line)
        size += len(line) + 1
        if size >= chars:
            passages.append("\n".join(current))
            current, size = [], 0
    if current and not passages:
        passages.append("\n".join(current))
    return [Passage(f"pydoc:{module_name}#{i}", p) for i, p in enumerate(passages)]


def stdlib_passages(count: int, seed: int = 0, chars: int = PASSAGE_CHARS) -> list[Passage]:
    """``count`` passages chosen deterministically by ``seed``, spread over modules: modules are
    shuffled by the seed and visited round-robin, taking each one's passages in a seeded order."""
    if count < 1:
        raise InputError("sources", "count", f"need at least one source, got {count}")
    rng = random.Random(seed)
    modules = list(STDLIB_MODULES)
    rng.shuffle(modules)
    chosen: list[Passage] = []
    queues: list[list[Passage]] = []
    for name in modules:
        try:
            found = module_passages(name, chars)
        except ImportError:
            continue  # a module missing from this Python build
        rng.shuffle(found)
        queues.append(found)
        if sum(len(q) for q in queues) >= count * 2 and len(queues) >= min(count, len(modules)):
            break
    round_index = 0
    while len(chosen) < count and any(round_index < len(q) for q in queues):
        for q in queues:
            if round_index < len(q) and len(chosen) < count:
                chosen.append(q[round_index])
        round_index += 1
    if len(chosen) < count:
        raise InputError("sources", "count", f"only {len(chosen)} passages available, {count} requested")
    return chosen


def text_passage(text: str, source_id: str = "text") -> Passage:
    """A user-supplied passage; empty (or whitespace-only) text is an ``InputError``."""
    if not text or not text.strip():
        raise InputError(source_id, "text", "empty text: nothing to run the model on")
    return Passage(source_id, text)


def synthetic_images(count: int, seed: int = 0, size: int = 224, channels: int = 3) -> list[ImageSource]:
    """Deterministic smooth pseudo-random images in [-1, 1] (sums of a few random plane waves),
    ``image:<seed>#<i>``; for vision models when no image files are given."""
    out = []
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64) / size
    for i in range(count):
        rng = np.random.default_rng([seed, i])
        img = np.zeros((channels, size, size))
        for c in range(channels):
            for _ in range(6):
                fx, fy = rng.uniform(-8, 8, size=2)
                img[c] += rng.uniform(0.2, 1.0) * np.sin(2 * np.pi * (fx * xx + fy * yy) + rng.uniform(0, 2 * np.pi))
        img /= np.abs(img).max() or 1.0
        out.append(ImageSource(f"image:{seed}#{i}", img.astype(np.float32)))
    return out
