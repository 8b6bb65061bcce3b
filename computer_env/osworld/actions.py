"""``InputEvent`` -> OSWorld-style pyautogui code (what upstream agents send to ``/execute``)."""

from __future__ import annotations

from computer_env.base import (
    Click,
    Drag,
    Hotkey,
    InputEvent,
    KeyPress,
    MoveTo,
    Scroll,
    TypeText,
    Wait,
    describe,
)

_CLICK_FN = {
    ("left", 1): "click",
    ("left", 2): "doubleClick",
    ("left", 3): "tripleClick",
    ("right", 1): "rightClick",
    ("middle", 1): "middleClick",
}


def to_pyautogui(event: InputEvent, scale: tuple[float, float] = (1.0, 1.0)) -> str:
    """The pyautogui code for one event; ``scale`` maps screenshot pixels to screen pixels.
    ``TypeText`` gives the ``pyautogui.write`` form for the history (typing itself goes through
    the server's Unicode-safe typing); ``Wait`` gives ``WAIT``."""
    sx, sy = scale

    def pt(x: int, y: int) -> tuple[int, int]:
        return round(x * sx), round(y * sy)

    if isinstance(event, Click):
        x, y = pt(event.x, event.y)
        fn = _CLICK_FN.get((event.button, event.count))
        if fn:
            return f"pyautogui.{fn}({x}, {y})"
        return (
            f"pyautogui.click({x}, {y}, clicks={event.count}, interval=0.1, "
            f"button={event.button!r})"
        )
    if isinstance(event, MoveTo):
        x, y = pt(event.x, event.y)
        return f"pyautogui.moveTo({x}, {y})"
    if isinstance(event, KeyPress):
        return f"pyautogui.press({event.key!r})"
    if isinstance(event, Hotkey):
        return f"pyautogui.hotkey({', '.join(repr(k) for k in event.keys)})"
    if isinstance(event, Scroll):
        where = ""
        if event.x is not None and event.y is not None:
            x, y = pt(event.x, event.y)
            where = f", x={x}, y={y}"
        sign = 1 if event.direction in ("up", "right") else -1
        fn = "scroll" if event.direction in ("up", "down") else "hscroll"
        return f"pyautogui.{fn}({sign * event.amount}{where})"
    if isinstance(event, Drag):
        x1, y1 = pt(event.x1, event.y1)
        x2, y2 = pt(event.x2, event.y2)
        return (
            f"pyautogui.moveTo({x1}, {y1}); "
            f"pyautogui.dragTo({x2}, {y2}, duration=0.5, button='left')"
        )
    if isinstance(event, TypeText):
        code = f"pyautogui.write({event.text!r})"
        return code + "; pyautogui.press('enter')" if event.press_enter else code
    if isinstance(event, Wait):
        return "WAIT"
    raise TypeError(f"unknown input event {event!r}")


__all__ = ["describe", "to_pyautogui"]
