"""Token counts for the reference endpoint's ``usage``: text by characters, images by patches.

Text: a string content or a non-image part counts ``len(json.dumps(...)) // 4`` tokens (about four
characters a token, as before). Images count the way Qwen2.5-VL's vision encoder does (vLLM's
processor for Holo's base models): the decoded image's size is resized to multiples of 28 px
(``smart_resize``: each side rounded to the nearest multiple, then scaled down so that the area is
at most ``MAX_PIXELS`` or up so that it is at least ``MIN_PIXELS``, keeping the aspect ratio);
14 px patches merged 2x2 give one token per 28x28 px, plus the ``<|vision_start|>`` and
``<|vision_end|>`` tokens. A 1920x1080 screenshot is 1932x1092 after the resize: 69 x 39 = 2691
tokens + 2. The base64 text of the data URL is never counted as text. An image that cannot be
decoded counts as the smallest image (``MIN_PIXELS``).
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
from typing import Any, TypeGuard

from PIL import Image, UnidentifiedImageError

from holo_agent.reference.conformance import IMAGE_TYPES

PIXELS_PER_TOKEN_SIDE = 28  # 14 px patches, merged 2x2
MIN_PIXELS = 4 * 28 * 28
MAX_PIXELS = 16384 * 28 * 28
IMAGE_WRAPPER_TOKENS = 2  # <|vision_start|> ... <|vision_end|>


def smart_resize(width: int, height: int, factor: int = PIXELS_PER_TOKEN_SIDE,
                 min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) the encoder sees: multiples of ``factor`` within the pixel bounds."""
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return w_bar, h_bar


def image_tokens(width: int, height: int) -> int:
    """Prompt tokens of one image of ``width`` x ``height`` pixels."""
    w, h = smart_resize(max(1, width), max(1, height))
    return (w // PIXELS_PER_TOKEN_SIDE) * (h // PIXELS_PER_TOKEN_SIDE) + IMAGE_WRAPPER_TOKENS


def _image_url(part: dict[str, Any]) -> str:
    value = part.get("image_url", part.get("image"))
    if isinstance(value, dict):
        value = value.get("url")
    return value if isinstance(value, str) else ""


def image_size(url: str) -> tuple[int, int] | None:
    """Pixel size of a ``data:image/...;base64,`` URL's image (None when it does not decode)."""
    _, sep, data = url.partition(",")
    if not sep:
        return None
    try:
        with Image.open(io.BytesIO(base64.b64decode(data, validate=False))) as img:
            return img.size  # the header is enough: no pixel data is decoded
    except (binascii.Error, UnidentifiedImageError, Image.DecompressionBombError, OSError,
            ValueError):
        return None


def _is_image(part: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(part, dict) and part.get("type") in IMAGE_TYPES


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """Prompt tokens of a chat request's messages (text by characters, images by patches)."""
    chars = images = 0
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        for part in content if isinstance(content, list) else [content]:
            if _is_image(part):
                size = image_size(_image_url(part))
                images += image_tokens(*size) if size else image_tokens(56, 56)
            else:
                chars += len(json.dumps(part))
    return chars // 4 + images


def text_tokens(text: str) -> int:
    """Tokens of generated text (at least one)."""
    return max(1, len(text) // 4)
