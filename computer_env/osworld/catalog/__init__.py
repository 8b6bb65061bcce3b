"""The tasks and what comes with them: the OSWorld task format and its loaders, the built-in
set's asset server, the oracle solutions of real tasks, and the shared download cache of the
files a task needs from the web.

May import: ``computer_env.osworld.guards``, ``computer_env.osworld.upstream`` and the package's
bottom modules (``context``, ``errors``, ``builtin``); never planning, set-up or scoring.
"""
