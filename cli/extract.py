"""``softrank extract``: capture attention operators from a model into a store.

Python entry point: :func:`extract_to_store` (used by ``softrank run``).  Records are written
unbracketed (``tolerances = []``), form ``qk``; ``index.csv`` is rewritten at the end.

Default panels (the ones ``softrank run`` needs), chosen when the model is named and an option
is not given: see ``DEFAULT_PANELS``.
"""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path
from typing import Any

from softrank.validated.errors import InputError

# Defaults per named model: the panel of issue 3 (>= 64 MiniLM operators at 256 x 256,
# >= 54 SmolLM2 operators as N = 128 common-prefix blocks of a 256-token pass).
DEFAULT_PANELS: dict[str, dict[str, Any]] = {
    "minilm": {"sources": 8, "tokens": 256, "max_operators": 64, "seed": 0},
    "smollm2": {"sources": 6, "tokens": 256, "widths": [128], "max_operators": 54, "seed": 0},
}
GENERAL_DEFAULTS: dict[str, Any] = {"sources": 2, "tokens": 256, "widths": None, "max_operators": None, "seed": 0}
OPTION_NAMES = ("sources", "seed", "tokens", "widths", "layers", "heads", "max_operators", "texts",
                "device", "progress", "threads")
# torch CPU threads during extraction.  One thread: on the shared 2-core machine two OpenMP
# threads made a SmolLM2 pass 3 to 10 times slower under load (measured: 2 passes, 1 thread
# 3.6-5.7 s, 2 threads 12-42 s, load average 5-7); on an idle machine one thread costs little.
DEFAULT_THREADS = 1


def configure(parser) -> None:
    parser.add_argument("--model", required=True, help="minilm, smollm2, or a local checkpoint folder / .gguf file")
    parser.add_argument("--out", required=True, metavar="STORE", help="store folder (created if absent)")
    parser.add_argument("--sources", type=int, default=None,
                        help="number of passages (stdlib documentation) or images (vision models)")
    parser.add_argument("--seed", type=int, default=None, help="selection seed (sources, layers, heads)")
    parser.add_argument("--tokens", type=int, default=None, help="tokens per pass (default 256)")
    parser.add_argument("--widths", default=None,
                        help="common-prefix block widths for decoders, e.g. 128,256 (default: those of "
                             "64,128,256,512 that fit the pass)")
    parser.add_argument("--layers", default=None, help="layers to use, e.g. 0,2,4-6 (default all)")
    parser.add_argument("--heads", default=None, help="heads to use, e.g. 0-3 (default all)")
    parser.add_argument("--max-operators", type=int, default=None, dest="max_operators",
                        help="at most this many operators, spread over sources, layers and heads")
    parser.add_argument("--text-file", action="append", default=None, dest="text_files", metavar="PATH",
                        help="use this text file as a source instead of the stdlib passages (repeatable)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--threads", type=int, default=None,
                        help=f"torch CPU threads during extraction (default {DEFAULT_THREADS})")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def _int_list(text: str | None, field: str) -> list[int] | None:
    """``"0,2,4-6"`` -> [0, 2, 4, 5, 6]; ``InputError`` if malformed."""
    if text is None:
        return None
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        span = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if span:
            out.extend(range(int(span.group(1)), int(span.group(2)) + 1))
        elif re.fullmatch(r"-?\d+", part):
            out.append(int(part))
        else:
            raise InputError("arguments", field, f"not an integer list: {text!r}")
    if not out:
        raise InputError("arguments", field, f"empty list: {text!r}")
    return out


def run(args) -> int:
    texts = None
    if args.text_files:
        texts = []
        for name in args.text_files:
            try:
                texts.append((f"text:{Path(name).name}", Path(name).read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as err:
                raise InputError(name, "text-file", f"cannot read: {getattr(err, 'strerror', None) or err}")
    options = {"sources": args.sources, "seed": args.seed, "tokens": args.tokens,
               "widths": _int_list(args.widths, "widths"), "layers": _int_list(args.layers, "layers"),
               "heads": _int_list(args.heads, "heads"), "max_operators": args.max_operators,
               "texts": texts, "device": args.device, "progress": not args.no_progress, "threads": args.threads}
    start = time.perf_counter()
    ids = extract_to_store(args.model, args.out, **{k: v for k, v in options.items() if v is not None})
    elapsed = time.perf_counter() - start
    print(f"softrank extract: {len(ids)} operators from {args.model} written to {args.out} in {elapsed:.1f} s")
    return 0


# ----------------------------------------------------------------------------------------------


def _options(model_name: str | None, given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(OPTION_NAMES)
    if unknown:
        raise TypeError(f"extract_to_store: unknown options {sorted(unknown)}")
    opts = dict(GENERAL_DEFAULTS)
    opts.update(DEFAULT_PANELS.get(model_name or "", {}))
    opts.update({k: v for k, v in given.items() if v is not None})
    return opts


def spread_pairs(layers: list[int], heads: list[int], count: int | None, rng: random.Random) -> list[tuple[int, int]]:
    """``count`` (layer, head) pairs spread over layers: each layer's heads in a seeded order,
    layers visited round-robin in a seeded order; all pairs when ``count`` is None."""
    layer_order = list(layers)
    rng.shuffle(layer_order)
    per_layer = {}
    for layer in layer_order:
        hs = list(heads)
        rng.shuffle(hs)
        per_layer[layer] = hs
    pairs = [(layer, per_layer[layer][r]) for r in range(len(heads)) for layer in layer_order]
    return pairs if count is None else pairs[:count]


def _check_range(values: list[int] | None, limit: int, field: str) -> list[int]:
    if values is None:
        return list(range(limit))
    bad = [v for v in values if not 0 <= v < limit]
    if bad:
        raise InputError("arguments", field, f"{bad[0]} out of range 0..{limit - 1}")
    return sorted(set(values))


def extract_to_store(model, store, **options) -> list[str]:
    """Capture operators from ``model`` and write them to ``store``; returns the record ids.

    ``model``: "minilm", "smollm2", a local checkpoint path, or a ``LoadedModel``.
    Options (all optional; a named model's ``DEFAULT_PANELS`` entry fills what is not given):
    ``sources`` (int), ``seed`` (int), ``tokens`` (pass length), ``widths`` (block widths for
    decoders), ``layers``, ``heads`` (lists of ints), ``max_operators`` (int), ``texts`` (list of
    strings or (source_id, text) pairs, replacing the stdlib passages), ``device``,
    ``progress`` (bool: a rich progress bar on stderr), ``threads`` (torch CPU threads during
    extraction, default ``DEFAULT_THREADS``, restored afterwards).
    Raises ``InputError`` for bad input (unknown model, unsupported model, pass too short for a
    block width, empty text, out-of-range layers or heads).
    """
    import torch

    from softrank.fastpath.models import LoadedModel, load_model

    name = model.name if isinstance(model, LoadedModel) else str(model)
    opts = _options(name, options)
    for key in ("sources", "tokens", "max_operators", "threads"):
        if opts.get(key) is not None and (not isinstance(opts[key], int) or opts[key] < 1):
            raise InputError("arguments", key.replace("_", "-"), f"must be a positive integer, got {opts[key]!r}")
    passages = _text_sources(opts) if opts.get("texts") is not None else None

    threads_before = torch.get_num_threads()
    torch.set_num_threads(int(opts.get("threads") or DEFAULT_THREADS))
    try:
        lm = model if isinstance(model, LoadedModel) else load_model(name, device=opts.get("device"))
        plan = _plan(lm, opts, passages)
        return _extract(lm, store, plan, opts)
    finally:
        torch.set_num_threads(threads_before)


def _extract(lm, store, plan, opts) -> list[str]:
    from softrank.fastpath.writer import write_index

    Path(store).mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    with _progress(opts.get("progress", False), plan["total"], f"extract {lm.tag}") as advance:
        for source, pairs in plan["work"]:
            for rid in _extract_source(lm, store, source, pairs, plan):
                ids.append(rid)
                advance()
                if plan["max_operators"] is not None and len(ids) >= plan["max_operators"]:
                    break
            if plan["max_operators"] is not None and len(ids) >= plan["max_operators"]:
                break
    write_index(store)
    return ids


def _text_sources(opts):
    from softrank.fastpath.sources import text_passage

    out, seen = [], set()
    for i, item in enumerate(opts["texts"]):
        source_id, text = item if isinstance(item, tuple) else (f"text:{i}", item)
        if source_id in seen:  # two files with the same name: keep record ids distinct
            source_id = f"{source_id}#{i}"
        seen.add(source_id)
        out.append(text_passage(text, source_id))
    if not out:
        raise InputError("texts", "text", "no text given")
    return out


def _plan(lm, opts, passages) -> dict[str, Any]:
    """Sources, (layer, head) pairs per source, widths and pass length; checks what can be
    checked before any forward pass."""
    from softrank.fastpath.operators import BLOCK_WIDTHS
    from softrank.fastpath.sources import stdlib_passages, synthetic_images

    layers = _check_range(opts.get("layers"), lm.num_layers, "layers")
    heads = _check_range(opts.get("heads"), lm.num_heads, "heads")
    tokens = int(opts["tokens"])
    max_pos = lm.max_positions
    causal = lm.kind in ("decoder", "seq2seq")
    widths = opts.get("widths")
    if lm.kind in ("encoder", "decoder", "seq2seq"):
        if max_pos is not None and tokens > max_pos:
            raise InputError("arguments", "tokens", f"{tokens} tokens exceed the model's {max_pos} positions")
    if causal:
        if widths is None:
            widths = [w for w in BLOCK_WIDTHS if 2 * w - 1 <= tokens]
            if not widths:
                raise InputError("arguments", "tokens",
                                 f"a pass of {tokens} tokens is too short for any block width "
                                 f"{list(BLOCK_WIDTHS)} (width N needs 2N-1 tokens)")
        widths = sorted(set(int(w) for w in widths))
        if widths[0] < 1:
            raise InputError("arguments", "widths", f"block widths must be positive, got {widths[0]}")
        if 2 * widths[-1] - 1 > tokens:
            raise InputError("arguments", "tokens",
                             f"a pass of {tokens} tokens is too short for block width {widths[-1]} "
                             f"(needs {2 * widths[-1] - 1})")
    else:
        widths = []

    n_sources = int(opts["sources"]) if passages is None else len(passages)
    if lm.kind in ("vision", "blip2"):
        size = lm.config.vision_config.image_size if lm.kind == "blip2" else lm.config.image_size
        channels = getattr(lm.config.vision_config if lm.kind == "blip2" else lm.config, "num_channels", 3)
        sources = synthetic_images(n_sources, int(opts["seed"]), size=int(size), channels=int(channels))
    else:
        sources = passages if passages is not None else stdlib_passages(n_sources, int(opts["seed"]))

    per_pair = {"encoder": 1, "vision": 1, "blip2": 1, "decoder": len(widths), "seq2seq": 2 + len(widths)}[lm.kind]
    max_ops = opts.get("max_operators")
    work = []
    rng = random.Random(int(opts["seed"]))
    quota = None if max_ops is None else math.ceil(max_ops / len(sources))
    for source in sources:
        count = None if quota is None else math.ceil(quota / per_pair)
        work.append((source, spread_pairs(layers, heads, count, rng)))
    total = sum(len(p) * per_pair for _, p in work)
    if max_ops is not None:
        total = min(total, max_ops)
    return {"work": work, "widths": widths, "tokens": tokens, "max_operators": max_ops, "total": total,
            "seed": int(opts["seed"])}


def _extract_source(lm, store, source, pairs, plan):
    """Run one forward pass on ``source`` capturing the layers in ``pairs``; yield record ids."""
    import torch

    from softrank.fastpath.capture import capturing
    from softrank.fastpath.operators import operators_for, provenance, record_id, write_operator

    layers = {layer for layer, _ in pairs}
    tokens = plan["tokens"]
    widths = plan["widths"]
    dev = lm.device
    one_call_per_layer = lm.kind in ("encoder", "decoder", "vision")
    with capturing(lm.model, lm.family, layers, stop_early=one_call_per_layer) as session:
        if lm.kind in ("vision", "blip2"):
            pixels = torch.from_numpy(source.pixels)[None].to(dev)
            if lm.kind == "vision":
                lm.model(pixel_values=pixels)
            else:
                _blip2_qformer(lm.model, pixels)
        else:
            ids = lm.encode_text(source.text, tokens)
            if not ids:
                raise InputError(source.source_id, "text", "the text gives no tokens")
            if widths and len(ids) < 2 * widths[-1] - 1:
                raise InputError(source.source_id, "text",
                                 f"pass of {len(ids)} tokens is too short for block width {widths[-1]} "
                                 f"(needs {2 * widths[-1] - 1})")
            input_ids = torch.tensor([ids], dtype=torch.long, device=dev)
            mask = torch.ones_like(input_ids)
            if lm.kind == "seq2seq":
                decoder_ids = lm.model._shift_right(input_ids)
                lm.model(input_ids=input_ids, attention_mask=mask, decoder_input_ids=decoder_ids, use_cache=False)
            elif lm.kind == "decoder":
                lm.model.base_model(input_ids=input_ids, attention_mask=mask, use_cache=False)
            else:
                lm.model(input_ids=input_ids, attention_mask=mask)

    wanted = set(pairs)
    order = {pair: i for i, pair in enumerate(pairs)}
    captures = sorted((c for c in session.captures), key=lambda c: (c.layer, c.attention))
    jobs = []
    for cap in captures:
        for head in range(cap.num_heads):
            if (cap.layer, head) in wanted:
                jobs.append((order[(cap.layer, head)], cap, head))
    jobs.sort(key=lambda j: (j[0], j[1].attention))
    extra = {"checkpoint_files": lm.checkpoint_files, "device": lm.device, "selection_seed": plan["seed"],
             "kv_head": None, **lm.extra}
    for _, cap, head in jobs:
        for op in operators_for(cap, head, widths):
            rid = record_id(lm.tag, source.source_id, op)
            prov = provenance(op, model=lm.name, family=lm.family, checkpoint_sha256=lm.checkpoint_sha256,
                              source_id=source.source_id, source_sha256=source.sha256,
                              extra={**extra, "kv_head": head // cap.n_rep})
            yield write_operator(store, rid, op, prov)


def _blip2_qformer(model, pixels) -> None:
    """BLIP-2: vision encoder, then the Q-Former's query tokens against the image embeddings."""
    import torch

    image_embeds = model.vision_model(pixel_values=pixels).last_hidden_state
    mask = torch.ones(image_embeds.shape[:-1], dtype=torch.long, device=image_embeds.device)
    queries = model.query_tokens.expand(image_embeds.shape[0], -1, -1)
    model.qformer(query_embeds=queries, encoder_hidden_states=image_embeds, encoder_attention_mask=mask)


class _progress:
    """A rich progress bar on stderr (or nothing); ``with _progress(on, total, label) as advance``."""

    def __init__(self, on: bool, total: int, label: str):
        self.on, self.total, self.label = on, total, label
        self.bar = None

    def __enter__(self):
        if not self.on:
            return lambda: None
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=Console(stderr=True), transient=False)
        self.bar.__enter__()
        task = self.bar.add_task(self.label, total=self.total)
        return lambda: self.bar.advance(task)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.__exit__(*exc)
