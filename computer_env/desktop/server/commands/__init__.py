"""Where the server's commands run: the nest (the agent's own user, pid and mount namespace;
``nest_root.py`` makes the Docker desktop's, where sudo is real), the server's child processes
in it, and the verifier runner that nothing the agent left can reach. ``nest.py`` also runs as
a script (the local sandbox's init script starts it by path,
``python3 -I -S``): standard library only.

May import: nothing of the server outside this wing (no routes, no ``state``).
"""
