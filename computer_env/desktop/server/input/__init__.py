"""Input applied and delivered: the persistent pyautogui interpreter (parent side and child),
Unicode typing with xdotool, and the check that the X server and the window got it.

May import: nothing of the server outside this wing (no routes, no ``state``).
"""
