"""Checkpoint files: their SHA-256 (for provenance) and the cache of de-quantized GGUF checkpoints.

Parsing a GGUF file (config, tokenizer and weights each re-read its metadata) costs about 40 s
of CPU for SmolLM2 on two cores; the float32 weights and tokenizer saved once load in about 1 s.
Cache key: the GGUF file's SHA-256 and the transformers version (which does the de-quantization).
SOFTRANK_CACHE=<folder> moves the cache (default ~/.cache/softrank); SOFTRANK_CACHE=off disables it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

_HASH_CACHE: dict[tuple[str, int, int], str] = {}


def sha256_file(path: Path) -> str:
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _HASH_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
        _HASH_CACHE[key] = h.hexdigest()
    return _HASH_CACHE[key]


def checkpoint_sha256(files: list[Path]) -> str:
    """SHA-256 of the weight file; for several files, SHA-256 of the lines ``<sha256>  <name>\\n``
    (sorted by name), i.e. of a ``sha256sum`` listing."""
    if len(files) == 1:
        return sha256_file(files[0])
    listing = "".join(f"{sha256_file(f)}  {f.name}\n" for f in sorted(files, key=lambda p: p.name))
    return hashlib.sha256(listing.encode()).hexdigest()


CACHE_MANIFEST = "softrank-gguf-cache.json"  # written last into a cache folder: the cache is complete


def gguf_cache_dir(digest: str) -> Path | None:
    import transformers

    root = os.environ.get("SOFTRANK_CACHE", str(Path.home() / ".cache" / "softrank"))
    if root.strip().lower() in ("", "off", "0", "none"):
        return None
    return Path(root).expanduser() / "gguf" / f"{digest}-transformers-{transformers.__version__}"


def write_gguf_cache(model, tokenizer, digest: str, gguf_path: Path) -> None:
    """Save the de-quantized model (float32 safetensors) and tokenizer; atomic (rename); best
    effort: a failure leaves no cache and is not an error."""
    import copy
    import json
    import shutil
    import tempfile

    import safetensors.torch

    target = gguf_cache_dir(digest)
    if target is None or target.exists():
        return
    tmp = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
        config = copy.deepcopy(model.config)
        if hasattr(config, "quantization_config"):
            del config.quantization_config  # the saved weights are plain float32
        config.save_pretrained(tmp)
        safetensors.torch.save_model(model, str(tmp / "model.safetensors"))
        tokenizer.save_pretrained(tmp)
        manifest = {"gguf_file": gguf_path.name, "gguf_sha256": digest,
                    "model_safetensors_sha256": sha256_file(tmp / "model.safetensors")}
        (tmp / CACHE_MANIFEST).write_text(json.dumps(manifest, indent=1))
        os.rename(tmp, target)
    except OSError:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
