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
same way (SHA-256 of the float32 pixel bytes); or image files (``image_file``: PNG and binary
PPM/PGM read here, any format Pillow reads when it is installed), resized to the model's image
size and normalised with the checkpoint's ``preprocessor_config.json`` (ViT's defaults without
one), hashed by the SHA-256 of the file's bytes.

Selection by seed is deterministic: the candidate list is in a fixed order and a
``random.Random(seed)`` picks from it.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import platform
import random
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from softrank.errors import InputError

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
    file_sha256: str | None = None  # an image file: SHA-256 of the file's bytes

    @property
    def sha256(self) -> str:
        if self.file_sha256 is not None:
            return self.file_sha256
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


# ----------------------------------------------------------------------------------------------
# image files

IMAGE_DEFAULTS = {"do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
                  "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}  # ViT's processor


def image_settings(folder) -> dict:
    """Rescaling and normalisation of a checkpoint's ``preprocessor_config.json`` (ViT's defaults
    for what it does not set, or without one)."""
    settings = dict(IMAGE_DEFAULTS)
    path = Path(folder) / "preprocessor_config.json" if folder is not None else None
    if path is not None and path.is_file():
        try:
            given = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise InputError(str(path), "preprocessor_config", f"unreadable: {err}")
        settings.update({k: given[k] for k in IMAGE_DEFAULTS if k in given})
    return settings


def image_file(path, size: int, channels: int = 3, settings: dict | None = None) -> ImageSource:
    """An image file as model input: decoded, channels matched, resized to ``size`` x ``size``
    (linear, antialiased), rescaled and normalised; id ``file:<name>``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(str(path), "image-file", f"cannot read: {err.strerror or err}")
    img = _match_channels(decode_image(raw, str(path)), channels).astype(np.float64)
    pixels = model_pixels(img, size, channels, settings)
    return ImageSource(f"file:{path.name}", pixels, hashlib.sha256(raw).hexdigest())


def model_pixels(img: np.ndarray, size: int, channels: int, settings: dict | None) -> np.ndarray:
    """(height, width, channels) float64 pixels as model input: resized to ``size`` x ``size``
    (linear, antialiased), rescaled and normalised with ``settings``; float32, channels first."""
    img = _resize_axis(_resize_axis(img, size, 0), size, 1)
    st = {**IMAGE_DEFAULTS, **(settings or {})}
    if st["do_rescale"]:
        img = img * float(st["rescale_factor"])
    if st["do_normalize"]:
        mean, std = (np.resize(np.asarray(st[k], dtype=np.float64), channels) for k in ("image_mean", "image_std"))
        img = (img - mean) / std
    return np.ascontiguousarray(img.transpose(2, 0, 1), dtype=np.float32)


def decode_image(raw: bytes, where: str) -> np.ndarray:
    """(height, width, channels) uint8 of a PNG or binary PPM/PGM file, or of anything Pillow reads."""
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        try:
            with Image.open(io.BytesIO(raw)) as im:
                arr = np.asarray(im.convert("RGBA" if "A" in im.getbands() else "RGB"))
            return arr
        except (OSError, ValueError) as err:
            raise InputError(where, "image-file", f"not an image Pillow reads: {err}")
    if raw[:8] == b"\x89PNG\r\n\x1a\n":
        return _png(raw, where)
    if raw[:2] in (b"P5", b"P6"):
        return _pnm(raw, where)
    raise InputError(where, "image-file", "not a PNG or binary PPM/PGM file (install Pillow for other formats)")


def _png(raw: bytes, where: str) -> np.ndarray:
    pos, idat, header = 8, [], None
    while pos + 8 <= len(raw):
        length, kind = struct.unpack(">I4s", raw[pos:pos + 8])
        data = raw[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat.append(data)
        elif kind == b"IEND":
            break
    if header is None or header[2] != 8 or header[3] not in (0, 2, 4, 6) or header[6] != 0:
        raise InputError(where, "image-file", "only 8-bit, non-interlaced grey or RGB(A) PNG is read without Pillow")
    width, height, chans = header[0], header[1], {0: 1, 2: 3, 4: 2, 6: 4}[header[3]]
    try:
        rows = np.frombuffer(zlib.decompress(b"".join(idat)), np.uint8).reshape(height, width * chans + 1)
    except (zlib.error, ValueError) as err:
        raise InputError(where, "image-file", f"corrupt PNG data: {err}")
    out = np.zeros((height, width * chans), dtype=np.int64)
    prev = np.zeros(width * chans, dtype=np.int64)
    for y in range(height):
        out[y] = prev = _unfilter(int(rows[y, 0]), rows[y, 1:].astype(np.int64), prev, chans, where)
    return out.reshape(height, width, chans).astype(np.uint8)


def _unfilter(kind: int, line: np.ndarray, prev: np.ndarray, bpp: int, where: str) -> np.ndarray:
    """One PNG scanline with its filter (0 none, 1 sub, 2 up, 3 average, 4 Paeth) undone."""
    if kind in (0, 2):
        return (line + prev * (kind == 2)) % 256
    if kind == 1:
        cur = line.copy()
        for c in range(bpp):
            cur[c::bpp] = np.cumsum(line[c::bpp]) % 256
        return cur
    if kind not in (3, 4):
        raise InputError(where, "image-file", f"corrupt PNG data: filter type {kind}")
    cur, lin, up = [0] * len(line), line.tolist(), prev.tolist()
    for i in range(len(lin)):
        a = cur[i - bpp] if i >= bpp else 0
        c = up[i - bpp] if i >= bpp else 0
        if kind == 3:
            pred = (a + up[i]) // 2
        else:
            p = a + up[i] - c
            pa, pb, pc = abs(p - a), abs(p - up[i]), abs(p - c)
            pred = a if pa <= pb and pa <= pc else (up[i] if pb <= pc else c)
        cur[i] = (lin[i] + pred) % 256
    return np.asarray(cur, dtype=np.int64)


def _pnm(raw: bytes, where: str) -> np.ndarray:
    fields, pos = [], 2
    while len(fields) < 3:
        match = re.compile(rb"(?:\s|#[^\n]*\n)*(\d+)").match(raw, pos)
        if match is None:
            raise InputError(where, "image-file", "malformed PPM/PGM header")
        fields.append(int(match.group(1)))
        pos = match.end()
    width, height, maxval = fields
    chans = 3 if raw[:2] == b"P6" else 1
    data = np.frombuffer(raw, np.uint8, count=width * height * chans, offset=pos + 1) if maxval < 256 else None
    if data is None or data.size != width * height * chans:
        raise InputError(where, "image-file", "only 8-bit PPM/PGM with complete pixel data is read")
    return (data.astype(np.int64) * 255 // max(maxval, 1)).astype(np.uint8).reshape(height, width, chans)


def _match_channels(img: np.ndarray, channels: int) -> np.ndarray:
    """Grey repeated, alpha dropped: (height, width, channels)."""
    if img.ndim == 2:
        img = img[:, :, None]
    colour = img[:, :, :3] if img.shape[2] >= 3 else img[:, :, :1]
    if colour.shape[2] == channels:
        return colour
    if channels == 1:
        return colour.mean(axis=2, keepdims=True)
    return np.repeat(colour[:, :, :1], channels, axis=2) if colour.shape[2] == 1 else np.resize(colour, (*colour.shape[:2], channels))


def _resize_axis(img: np.ndarray, size: int, axis: int) -> np.ndarray:
    """Linear resampling of one axis to ``size`` samples (triangle filter widened when shrinking)."""
    n_in = img.shape[axis]
    scale = n_in / size
    support = max(scale, 1.0)
    centres = (np.arange(size) + 0.5) * scale
    weights = np.maximum(0.0, 1.0 - np.abs(np.arange(n_in)[None, :] + 0.5 - centres[:, None]) / support)
    weights /= weights.sum(axis=1, keepdims=True)
    return np.moveaxis(np.tensordot(weights, np.moveaxis(img, axis, 0), axes=1), 0, axis)
