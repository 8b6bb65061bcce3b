"""The accessibility tree: ``atspi_dump.py`` (run by path under the desktop's system Python, which
has ``gi``) and the server's side that runs it.

May import: nothing of the server outside this wing (no routes, no ``state``).
"""
