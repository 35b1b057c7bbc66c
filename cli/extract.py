"""``softrank extract``: capture attention operators from a model into a store (the front end of
``softrank.fastpath.capture.extract.extract_to_store``; records are written unbracketed)."""

from __future__ import annotations

import os
import sys
import time
import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path

# This process extracts offline: nothing is downloaded (set before transformers is imported).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from softrank.cli.args import check_count, check_device, parse_int_list, path_arg, value_arg

from softrank.cli.paths import output_dir

from softrank.cli.progress import progress
from softrank.fastpath.capture.extract import DEFAULT_THREADS


EPILOG = """--json prints one object: {"model", "out" (the store), "operators", "ids" (the record ids
written), "seconds"}."""


def configure(parser) -> None:
    parser.add_argument("--model", required=True,
                        help="minilm, smollm2, dinov2-small, flan-t5-small, a local checkpoint folder (save_pretrained) / .gguf file, or a Hugging "
                             "Face id already in the local cache (offline); any model type whose attention goes "
                             "through transformers' attention interface, and Bloom, Falcon")
    parser.add_argument("--out", required=True, metavar="STORE", type=path_arg, help="store folder (created if absent)")
    parser.add_argument("--sources", type=int, default=None,
                        help="number of passages (stdlib documentation) or images (vision models)")
    parser.add_argument("--seed", type=int, default=None, help="selection seed (sources, layers, heads)")
    parser.add_argument("--tokens", type=int, default=None, help="tokens per pass (default 256)")
    parser.add_argument("--widths", default=None,
                        help="common-prefix block widths for decoders, e.g. 128,256 (default: those of "
                             "64,128,256,512 that fit the pass)")
    parser.add_argument("--layers", default=None, help="layers to use, e.g. 0,2,4-6 (default all)")
    parser.add_argument("--operators", default=None, choices=("blocks", "native", "both"),
                        help="what a causal self-attention call gives: common-prefix blocks (default), the "
                             "native masked operator over the whole pass (causal or sliding-window support), or both")
    parser.add_argument("--heads", default=None, help="heads to use, e.g. 0-3 (default all)")
    parser.add_argument("--max-operators", type=int, default=None, dest="max_operators",
                        help="at most this many operators, spread over sources, layers and heads")
    parser.add_argument("--text-file", action="append", default=None, dest="text_files", metavar="PATH", type=path_arg,
                        help="use this text file as a source instead of the stdlib passages (repeatable)")
    parser.add_argument("--image-file", action="append", default=None, dest="image_files", metavar="PATH", type=path_arg,
                        help="use this image as a source for a vision model (PNG, PPM/PGM; any format with "
                             "Pillow) instead of the synthetic images (repeatable)")
    parser.add_argument("--device", default=None, type=value_arg, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"torch CPU threads during extraction (default {DEFAULT_THREADS})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--json", action="store_true", help="print one JSON object (keys below)")
    parser.epilog = EPILOG


@contextmanager
def progress_report(on: bool, label: str, start: int = 0):
    """``with progress_report(on, label) as report: producer(progress=report)``: a producer's
    ``report(done, total)`` drives ``softrank.cli.progress.progress`` (counting from ``start``),
    opened at the first report (when the total is known); ``report`` is None when ``on`` is false."""
    if not on:
        yield None
        return
    with ExitStack() as stack:
        bar = []

        def report(done: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(progress(True, total, label, start=start)))
            bar[0](done)
        yield report


@contextmanager
def one_line_warnings(command: str):
    """The producer's warnings (tokenizer fallback, capture) as one line each on stderr."""
    def show(message, category, *_args, **_kw):
        print(f"softrank {command}: warning: {message}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.simplefilter("default")
        warnings.showwarning = show
        yield


def _texts(paths: list[str] | None):
    if not paths:
        return None
    from softrank.cli.paths import read_text_file

    # a regular UTF-8 file of bounded size (a FIFO or /dev/zero would block or never end)
    return [(f"text:{Path(name).name}", read_text_file(name, "text-file")) for name in paths]


# ---------------------------------------------------------------------------------------------
# ``softrank run --model``: the user's model in the main job


RUN_MODEL_OPERATORS = 64  # a `softrank run --model` panel: at most this many operators (as MiniLM's)


def add_model_options(parser) -> None:
    """``softrank run``'s options for running the main job on the user's model."""
    parser.add_argument("--model", default=None, metavar="DIR_OR_NAME", type=value_arg,
                        help="run on this model instead of the built-in panel: a local checkpoint folder "
                             "(save_pretrained) or .gguf file, a Hugging Face id in the local cache, minilm or "
                             f"smollm2 (offline); at most {RUN_MODEL_OPERATORS} operators, labelled by the model's name")
    parser.add_argument("--texts", default=None, metavar="FILE", type=path_arg,
                        help="with --model: the input texts, the paragraphs of FILE (separated by blank lines) "
                             "(default: stdlib documentation passages)")
    parser.add_argument("--layers", default=None, help="with --model: layers to use, e.g. 0,2,4-6 (default all)")
    parser.add_argument("--heads", default=None, help="with --model: heads to use, e.g. 0-3 (default all)")
    parser.add_argument("--operators", default=None, choices=("blocks", "native", "both"),
                        help="with --model: what a causal self-attention call gives: common-prefix blocks (default), the "
                             "native masked operator over the whole pass (causal or sliding-window support), or both")
    parser.add_argument("--tokens", type=int, default=None,
                        help="with --model: tokens per pass (default 256, at most the model's positions and window)")
    parser.add_argument("--widths", default=None,
                        help="with --model: common-prefix block widths for decoders, e.g. 16,32 (default: those of "
                             "64,128,256,512 that fit the pass, else the widest block it allows)")
    parser.add_argument("--images", action="append", default=None, metavar="PATH", type=path_arg,
                        help="with --model, a vision model: the input images, a folder of image files or files "
                             "(repeatable; PNG, PPM/PGM, any format with Pillow) (default: synthetic images)")


def check_model_options(args) -> None:
    if getattr(args, "model", None) is None:
        for name in ("texts", "layers", "heads", "operators", "tokens", "widths", "images"):
            if getattr(args, name, None) is not None:
                from softrank.errors import InputError

                raise InputError("arguments", name, f"--{name} applies to --model only")


def read_texts(path: str) -> list[tuple[str, str]]:
    """The paragraphs of a text file (separated by blank lines) as (source id, text) pairs."""
    import re

    from softrank.cli.paths import read_text_file
    from softrank.errors import InputError

    text = read_text_file(path, "texts")
    parts = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    if not parts:
        raise InputError(path, "texts", "empty text: nothing to run the model on")
    name = Path(path).name
    return [(f"text:{name}#{i}" if len(parts) > 1 else f"text:{name}", p) for i, p in enumerate(parts)]


IMAGE_SUFFIXES = (".png", ".ppm", ".pgm", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp")


def image_paths(items: list[str] | None) -> list[str] | None:
    """``--images``: files as given, a folder as its image files (by suffix, sorted by name)."""
    if not items:
        return None
    from softrank.errors import InputError

    out = []
    for item in items:
        path = Path(item)
        if path.is_dir():
            found = sorted(str(p) for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise InputError(item, "images", f"no image files ({', '.join(IMAGE_SUFFIXES)}) in the folder")
            out.extend(found)
        elif path.is_file():
            out.append(str(path))
        else:
            raise InputError(item, "images", "no such file or folder")
    return out


def extract_model(args, store, console, progress: bool) -> list[str]:
    """Step 1 of ``softrank run --model``: the user's model into ``store``."""
    from softrank.fastpath.capture.extract import extract_to_store
    from softrank.fastpath.capture.labels import model_label

    label = model_label(args.model)
    options = {"texts": read_texts(args.texts) if args.texts is not None else None,
               "layers": parse_int_list(args.layers, "layers", minimum=None),
               "heads": parse_int_list(args.heads, "heads", minimum=None),
               "tokens": getattr(args, "tokens", None), "widths": parse_int_list(getattr(args, "widths", None), "widths",
                                                                                minimum=None),
               "images": image_paths(getattr(args, "images", None)),
               "max_operators": RUN_MODEL_OPERATORS, "device": check_device(args.device),
               "operators": getattr(args, "operators", None)}
    with one_line_warnings("run"), progress_report(progress, f"extract {label}") as report:
        ids = extract_to_store(args.model, store, progress=report, **{k: v for k, v in options.items() if v is not None})
    console.print(f"[bold]extract[/]: {len(ids)} operators from {label}")
    return ids


def run(args) -> int:
    from softrank.fastpath.capture.extract import extract_to_store

    from softrank.fastpath.capture.locate import resolve

    check_device(args.device)
    check_count(args.seed, "seed", minimum=0)
    resolve(str(args.model))  # a wrong path fails here, before torch is imported
    created = not Path(args.out).exists()
    output_dir(args.out)
    texts = _texts(args.text_files)
    options = {"sources": args.sources, "seed": args.seed, "tokens": args.tokens,
               "widths": parse_int_list(args.widths, "widths", minimum=None),
               "layers": parse_int_list(args.layers, "layers", minimum=None),
               "heads": parse_int_list(args.heads, "heads", minimum=None), "max_operators": args.max_operators,
               "texts": texts, "images": args.image_files, "device": check_device(args.device), "threads": args.threads,
               "operators": args.operators}
    start = time.perf_counter()
    with one_line_warnings("extract"), progress_report(not args.no_progress, f"extract {Path(args.model).name}") as report:
        options["progress"] = report
        try:
            ids = extract_to_store(args.model, args.out, **{k: v for k, v in options.items() if v is not None})
        except BaseException:
            if created and not any(Path(args.out).iterdir()):
                Path(args.out).rmdir()  # a failed extraction leaves no empty folder it created
            raise
    elapsed = time.perf_counter() - start
    if getattr(args, "json", False):
        from softrank.cli.output import print_json

        print_json({"model": str(args.model), "out": str(args.out), "operators": len(ids), "ids": list(ids),
                    "seconds": elapsed})
        return 0
    print(f"softrank extract: {len(ids)} operators from {args.model} written to {args.out} in {elapsed:.1f} s")
    return 0
