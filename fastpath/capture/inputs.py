"""What the forward passes of an extraction read: the user's texts, seeded stdlib passages or
images, and the common-prefix block widths a causal model's pass allows."""

from __future__ import annotations

from softrank.errors import InputError


def text_sources(opts):
    from softrank.fastpath.capture.sources import text_passage

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


def block_widths(lm, opts, tokens: int, passages=None, blocks: bool = True) -> list[int]:
    """Block widths for causal models (default: those of ``BLOCK_WIDTHS`` the pass fits; with
    given texts, the pass is the shortest text's tokens; when none of ``BLOCK_WIDTHS`` fits the
    pass (a model with 64 positions, say), the widest block it allows, N = (P + 1) // 2), none otherwise or when ``blocks`` is
    false (native operators only); the pass length is checked against the model's positions and
    the widths."""
    from softrank.fastpath.capture.operators import BLOCK_WIDTHS

    max_pos = lm.max_positions
    if lm.kind in ("encoder", "decoder", "seq2seq") and max_pos is not None and tokens > max_pos:
        raise InputError("arguments", "tokens", f"{tokens} tokens exceed the model's {max_pos} positions")
    if lm.kind in ("decoder", "seq2seq") and not blocks:
        if opts.get("widths") is not None:
            raise InputError("arguments", "widths", "block widths apply to common-prefix blocks only "
                                                    "(operators blocks or both), not to native operators")
        return []
    if lm.kind not in ("decoder", "seq2seq"):
        if opts.get("widths") is not None:
            raise InputError("arguments", "widths", f"block widths apply to causal models only; {lm.name} is "
                                                    f"an {lm.kind} model (its operators are whole passes)")
        return []
    widths = opts.get("widths")
    if widths is None and passages:
        shortest = min(len(lm.encode_text(p.text, tokens)) for p in passages)
        widths = [w for w in BLOCK_WIDTHS if 2 * w - 1 <= shortest] or ([(shortest + 1) // 2] if shortest else None)
        tokens = min(tokens, shortest) if shortest else tokens
    if widths is None:  # those of BLOCK_WIDTHS the pass fits, else the widest block it allows
        widths = [w for w in BLOCK_WIDTHS if 2 * w - 1 <= tokens] or [(tokens + 1) // 2]
    widths = sorted({int(w) for w in widths})
    if widths[0] < 1:
        raise InputError("arguments", "widths", f"block widths must be positive, got {widths[0]}")
    if 2 * widths[-1] - 1 > tokens:
        raise InputError("arguments", "tokens",
                         f"a pass of {tokens} tokens is too short for block width {widths[-1]} "
                         f"(needs {2 * widths[-1] - 1})")
    return widths


def pass_sources(lm, opts, passages) -> list:
    """The given passages or image files, else seeded stdlib passages (text models) or synthetic
    images (vision models)."""
    from softrank.fastpath.capture.sources import (
        image_file,
        image_settings,
        stdlib_passages,
        synthetic_images,
    )

    images = opts.get("images")
    n_sources = int(opts["sources"]) if passages is None else len(passages)
    if lm.kind in ("vision", "blip2") and passages is not None:
        raise InputError("arguments", "texts", f"texts do not fit {lm.label}, a vision model ({lm.family}): "
                                               f"give images (--images, --image-file), or no input for synthetic ones")
    if lm.kind not in ("vision", "blip2"):
        if images:
            raise InputError("arguments", "image-file", f"image files need a vision model (vit, blip-2), "
                                                        f"not {lm.family}")
        return passages if passages is not None else stdlib_passages(n_sources, int(opts["seed"]))
    vision = lm.config.vision_config if lm.kind == "blip2" else lm.config
    size, channels = int(vision.image_size), int(getattr(vision, "num_channels", 3))
    if images:
        settings = image_settings(lm.folder)
        return [image_file(path, size, channels, settings) for path in images]
    from softrank.fastpath.capture.shipped import default_images

    shipped = default_images(lm, n_sources, int(opts["seed"]))  # a shipped checkpoint's sample crops
    return shipped if shipped is not None else synthetic_images(n_sources, int(opts["seed"]), size=size, channels=channels)


def model_window(lm) -> int | None:
    """The sliding window a causal model applies (``config.sliding_window`` unless the config turns
    it off with ``use_sliding_window=False``), else None: a block over a pass longer than the
    window is refused, so the default pass of such a model is at most the window."""
    cfg = lm.config.text_config if lm.kind == "blip2" else lm.config
    window = getattr(cfg, "sliding_window", None)
    if lm.kind not in ("decoder", "seq2seq") or not isinstance(window, int) or isinstance(window, bool) or window < 1:
        return None
    return None if getattr(cfg, "use_sliding_window", True) is False else window
