"""Where the model pointed, drawn over the screenshot: the SVG shapes of a tool call (crosshair,
drag arrow or scroll marker), in pixels of the image that was sent. The template draws them."""

from __future__ import annotations

from typing import Any

from holo_agent.tools import (
    ClickTool,
    DoubleClickTool,
    DragTool,
    MoveToTool,
    RightClickTool,
    ScrollTool,
)

__all__ = ["overlay"]

Shape = tuple[str, dict[str, str]]
"""An SVG element: its tag and its attributes (in order)."""

RED, ORANGE, BLUE, GREEN = "#ff3b6b", "#ffb020", "#4da3ff", "#2fbf71"
SCROLL_STEP = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}


def _n(v: float) -> str:
    return f"{v:.1f}"


def _circle(x: float, y: float, r: float, paint: dict[str, str]) -> Shape:
    return "circle", {"cx": _n(x), "cy": _n(y), "r": _n(r), **paint}


def _line(a: tuple[float, float], b: tuple[float, float], paint: dict[str, str]) -> Shape:
    return "line", {"x1": _n(a[0]), "y1": _n(a[1]), "x2": _n(b[0]), "y2": _n(b[1]), **paint}


def _shapes(call: Any, w: int, h: int, r: float) -> list[Shape]:
    def p(x: int, y: int) -> tuple[float, float]:
        return x / 1000 * w, y / 1000 * h

    def stroke(color: str) -> dict[str, str]:
        return {"stroke": color, "stroke-width": _n(r / 3), "fill": "none"}

    if isinstance(call, (ClickTool, DoubleClickTool, RightClickTool, MoveToTool)):
        x, y = p(call.x, call.y)
        paint = stroke({"right_click": ORANGE, "move_to": BLUE}.get(call.tool_name, RED))
        out = [
            _circle(x, y, r, paint),
            _line((x - 2 * r, y), (x + 2 * r, y), paint),
            _line((x, y - 2 * r), (x, y + 2 * r), paint),
        ]
        if isinstance(call, DoubleClickTool):
            out.append(_circle(x, y, r * 1.6, paint))
        return out
    if isinstance(call, DragTool):
        a, b = p(call.from_x, call.from_y), p(call.to_x, call.to_y)
        return [
            _line(a, b, {**stroke(RED), "marker-end": "url(#arrow)"}),
            _circle(a[0], a[1], r / 2, {"fill": RED}),
        ]
    if isinstance(call, ScrollTool):
        x, y = (w / 2, h / 2) if call.x is None or call.y is None else p(call.x, call.y)
        dx, dy = SCROLL_STEP[call.direction]
        return [
            _circle(x, y, r, stroke(GREEN)),
            _line(
                (x, y),
                (x + dx * 4 * r, y + dy * 4 * r),
                {**stroke(GREEN), "marker-end": "url(#arrow-g)"},
            ),
        ]
    return []


def overlay(call: Any, size: tuple[int, int] | None) -> dict[str, Any] | None:
    """``{"w", "h", "shapes"}`` for a typed tool call on an image of ``size``; None when the call
    points nowhere (typing, keys, waiting, an answer) or the size is unknown."""
    if not size or call is None:
        return None
    w, h = int(size[0]), int(size[1])
    shapes = _shapes(call, w, h, max(w, h) / 80)
    return {"w": w, "h": h, "shapes": shapes} if shapes else None
