"""Token counts for the reference endpoint's ``usage``: text by characters, images by patches.

Text: a string content or a non-image part counts ``len(json.dumps(...)) // 4`` tokens (about four
characters a token, as before). Images count the way the vision encoder of Holo3.1's family
counts them (Qwen3.5: 16 px patches merged 2x2, one token per 32x32 px;
:func:`holo_agent.images.qwen_image_tokens`: each side rounded to a multiple of 32, the area
scaled into the processor's pixel bounds keeping the aspect ratio), plus the
``<|vision_start|>`` and ``<|vision_end|>`` tokens. A 1920x1080 screenshot is 1920x1088 after
the resize: 60 x 34 = 2040 tokens + 2, what vLLM itself counts for the tiny model of that family
(``tests/harness/model/test_vllm_real.py``; this estimate used Qwen2.5-VL's 28 px until it was checked
against a real server). The base64 text of the data URL is never counted as text. An image
that cannot be decoded counts as the smallest image.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
from typing import Any, TypeGuard

from PIL import Image, UnidentifiedImageError

from holo_agent.images import qwen_image_tokens
from holo_agent.reference.conformance import IMAGE_TYPES

IMAGE_WRAPPER_TOKENS = 2  # <|vision_start|> ... <|vision_end|>


def image_tokens(width: int, height: int) -> int:
    """Prompt tokens of one image of ``width`` x ``height`` pixels."""
    return qwen_image_tokens(max(1, width), max(1, height)) + IMAGE_WRAPPER_TOKENS


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
    except (
        binascii.Error,
        UnidentifiedImageError,
        Image.DecompressionBombError,
        OSError,
        ValueError,
    ):
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
