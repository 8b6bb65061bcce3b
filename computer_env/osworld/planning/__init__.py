"""Know before running: what a task needs (read from its JSON), whether this host and its desktop
have it, the markers a task's case gets, and the ``plan`` of a task list (which tasks can run
here, and why the others cannot).

May import: ``computer_env.osworld.scoring`` (whether an evaluator is supported),
``catalog``, ``guards``, ``upstream``, the bottom modules and the desktop side (a desktop's
inventory); never ``check``, ``env`` or ``__main__``.
"""
