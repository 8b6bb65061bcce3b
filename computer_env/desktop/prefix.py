"""OSWorld's wrapper of pyautogui code, shared by the client and the desktop's interpreter (a
module of its own so the desktop side imports no HTTP client to get it)."""

#: How OSWorld's PythonController wraps pyautogui code for /execute (the fast path's
#: interpreter runs the same before each block).
PYAUTOGUI_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; "

__all__ = ["PYAUTOGUI_PREFIX"]
