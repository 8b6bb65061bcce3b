"""``InputEvent`` -> OSWorld-style pyautogui code (what upstream agents send to ``/execute``)."""

from __future__ import annotations

from computer_env.base import Click, Drag, Hotkey, InputEvent, KeyPress, MoveTo, Scroll, TypeText, Wait

_CLICK_FN = {("left", 1): "click", ("left", 2): "doubleClick", ("left", 3): "tripleClick",
             ("right", 1): "rightClick", ("middle", 1): "middleClick"}


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
        return (f"pyautogui.click({x}, {y}, clicks={event.count}, interval=0.1, "
                f"button={event.button!r})")
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
        return (f"pyautogui.moveTo({x1}, {y1}); "
                f"pyautogui.dragTo({x2}, {y2}, duration=0.5, button='left')")
    if isinstance(event, TypeText):
        code = f"pyautogui.write({event.text!r})"
        return code + "; pyautogui.press('enter')" if event.press_enter else code
    if isinstance(event, Wait):
        return "WAIT"
    raise TypeError(f"unknown input event {event!r}")


def describe(event: InputEvent) -> str:
    """A short human-readable description of an event."""
    if isinstance(event, Click):
        what = {1: "click", 2: "double click", 3: "triple click"}[event.count]
        prefix = "" if event.button == "left" else f"{event.button} "
        return f"{prefix}{what} at ({event.x}, {event.y})"
    if isinstance(event, MoveTo):
        return f"moved the pointer to ({event.x}, {event.y})"
    if isinstance(event, TypeText):
        text = event.text if len(event.text) <= 60 else event.text[:57] + "..."
        return f"typed {text!r}" + (" and pressed Enter" if event.press_enter else "")
    if isinstance(event, KeyPress):
        return f"pressed {event.key}"
    if isinstance(event, Hotkey):
        return f"pressed {'+'.join(event.keys)}"
    if isinstance(event, Scroll):
        at = f" at ({event.x}, {event.y})" if event.x is not None and event.y is not None else ""
        return f"scrolled {event.direction} {event.amount}{at}"
    if isinstance(event, Drag):
        return f"dragged from ({event.x1}, {event.y1}) to ({event.x2}, {event.y2})"
    if isinstance(event, Wait):
        return f"waited {event.seconds:g} s"
    return type(event).__name__


__all__ = ["describe", "to_pyautogui"]
