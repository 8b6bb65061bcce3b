"""The guest server's HTTP routes, one module per area of OSWorld's in-VM API (screen, input,
commands, files, windows, accessibility, the verifier), each a thin layer over the wings below.

May import: ``computer_env.desktop.server.state`` and ``httputil``, and the wings ``input``,
``screen``, ``commands``, ``x11``, ``a11y``; never ``app`` or ``cli``.
"""
