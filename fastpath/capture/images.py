"""Real images for vision models, with no download: fixed square crops of the sample images that
ship with matplotlib (``matplotlib.cbook.get_sample_data``), each file pinned by its SHA-256.

A crop is ``matplotlib:<file>@<x>,<y>,<size>`` (left, top, side in the file's pixels); it is
resized to the model's image size (linear, antialiased: ``sources.model_pixels``), rescaled and
normalised with the checkpoint's settings (``sources.image_settings``); its SHA-256 is that of
the float32 pixel bytes, as for the synthetic images.  ``sample_images(count, seed)`` picks
``count`` of the ``CROPS`` in a ``random.Random(seed)`` order.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import numpy as np
from softrank.fastpath.capture.sources import ImageSource, _match_channels, decode_image, model_pixels
from softrank.errors import InputError

# matplotlib's sample images (matplotlib/mpl-data/sample_data), SHA-256 of each file
FILES = {
    "grace_hopper.jpg": "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130",  # 512 x 600
    "Minduka_Present_Blue_Pack.png": "5e72868826a7a4329a950e5a9efa393594807833fb7f27e5cd001a8afb9cd081",  # 128 x 128
    "logo2.png": "0d7371e055decaac47cb6e809af3442e9c1ecd02f1c1e2d063d1cfee4b4a21d7",  # 542 x 130
}
# (file, left, top, side)
CROPS: tuple[tuple[str, int, int, int], ...] = (
    ("grace_hopper.jpg", 0, 44, 512), ("grace_hopper.jpg", 0, 0, 256), ("grace_hopper.jpg", 256, 0, 256),
    ("grace_hopper.jpg", 0, 344, 256), ("grace_hopper.jpg", 256, 344, 256), ("grace_hopper.jpg", 128, 172, 256),
    ("grace_hopper.jpg", 64, 64, 384), ("grace_hopper.jpg", 96, 150, 320),
    ("Minduka_Present_Blue_Pack.png", 0, 0, 128), ("logo2.png", 0, 0, 130), ("logo2.png", 206, 0, 130),
)


def sample_file(name: str) -> bytes:
    """The bytes of one of matplotlib's sample images, checked against its pinned SHA-256."""
    try:
        from matplotlib import cbook

        path = cbook.get_sample_data(name, asfileobj=False)
        raw = Path(path).read_bytes()
    except (ImportError, OSError, ValueError) as err:
        raise InputError(f"matplotlib:{name}", "image", f"matplotlib's sample image is not available: {err}")
    if hashlib.sha256(raw).hexdigest() != FILES[name]:
        raise InputError(str(path), "sha256", f"matplotlib's sample image {name} is not the pinned file "
                                              f"(SHA-256 {FILES[name][:16]}...)")
    return raw


def crop_image(crop: tuple[str, int, int, int], size: int, channels: int = 3, settings: dict | None = None) -> ImageSource:
    """One crop as model input (``channels`` x ``size`` x ``size`` float32)."""
    name, left, top, side = crop
    img = _match_channels(decode_image(sample_file(name), f"matplotlib:{name}"), channels)
    if top + side > img.shape[0] or left + side > img.shape[1]:
        raise InputError(f"matplotlib:{name}", "crop", f"crop {left},{top},{side} outside the {img.shape[1]} x "
                                                       f"{img.shape[0]} image")
    pixels = model_pixels(img[top:top + side, left:left + side].astype(np.float64), size, channels, settings)
    return ImageSource(f"matplotlib:{name}@{left},{top},{side}", pixels)


def sample_images(count: int, seed: int = 0, size: int = 224, channels: int = 3,
                  settings: dict | None = None) -> list[ImageSource]:
    """``count`` crops of ``CROPS`` in the order ``random.Random(seed)`` shuffles them."""
    if count < 1 or count > len(CROPS):
        raise InputError("sources", "count", f"{len(CROPS)} sample image crops available, {count} requested")
    order = list(CROPS)
    random.Random(seed).shuffle(order)
    return [crop_image(crop, size, channels, settings) for crop in order[:count]]
