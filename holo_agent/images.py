"""Preparing the screenshot that is sent: its true size, and an optional downscale."""

from __future__ import annotations

import io
import logging
import math
from dataclasses import dataclass

from PIL import Image

from computer_env.base import Observation

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SentImage:
    """The exact image sent to the model and the env screenshot it came from."""

    data: bytes
    mime: str
    width: int
    height: int
    env_width: int
    env_height: int


def prepare_image(
    obs: Observation, max_width: int | None = None, size: tuple[int, int] | None = None
) -> SentImage:
    """Return the image to send: the env's bytes untouched, or a proportional PNG downscale
    (``max_width``), or a resize to exactly ``size`` (a protocol's resolution, e.g. 1504x832;
    coordinates stay exact because they are normalised per axis).

    Sizes come from the decoded image, not from the observation's fields, so scaling always
    refers to the exact pixels; a mismatch with ``obs.width``/``obs.height`` is logged.
    """
    with Image.open(io.BytesIO(obs.image)) as img:
        w, h = img.size
        if (w, h) != (obs.width, obs.height):
            log.warning(
                "observation says %dx%d but the image is %dx%d; using the image size",
                obs.width,
                obs.height,
                w,
                h,
            )
        if size is not None and (w, h) != (size[0], size[1]):
            exact = img.convert("RGB").resize((size[0], size[1]), Image.Resampling.LANCZOS)
            buf = io.BytesIO()
            exact.save(buf, format="PNG")
            return SentImage(buf.getvalue(), "image/png", size[0], size[1], w, h)
        if max_width is None or w <= max_width:
            return SentImage(obs.image, obs.mime, w, h, w, h)
        new_h = max(1, round(h * max_width / w))
        small = img.convert("RGB").resize((max_width, new_h), Image.Resampling.LANCZOS)
        buf = io.BytesIO()
        small.save(buf, format="PNG")
    return SentImage(buf.getvalue(), "image/png", max_width, new_h, w, h)


def extension_for(mime: str) -> str:
    """File extension for an image mime type."""
    return {
        "image/png": ".png",
        "image/jpeg": ".jpg",
        "image/jpg": ".jpg",
        "image/webp": ".webp",
        "image/gif": ".gif",
    }.get(mime.lower(), ".bin")


# Qwen-VL's image arithmetic (Holo3.1's family, Qwen3.5: 16-pixel patches merged 2x2, so one
# token per 32x32 pixels; transformers' ``smart_resize``): the harness's own estimate of the
# image tokens of a request, recorded beside the server's count
QWEN_PATCH, QWEN_MERGE = 16, 2
QWEN_MIN_PIXELS, QWEN_MAX_PIXELS = 65536, 16777216


def qwen_image_tokens(
    width: int,
    height: int,
    *,
    patch: int = QWEN_PATCH,
    merge: int = QWEN_MERGE,
    min_pixels: int = QWEN_MIN_PIXELS,
    max_pixels: int = QWEN_MAX_PIXELS,
) -> int:
    """The ``<|image_pad|>`` tokens a Qwen-VL processor gives one ``width`` x ``height`` image:
    each side rounded to a multiple of ``patch * merge``, the area scaled into
    [``min_pixels``, ``max_pixels``] keeping the aspect ratio (1920x1080: 1920x1088, 2040)."""
    factor = patch * merge
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return (h // factor) * (w // factor)
