"""A task's desktop made ready: its ``config`` steps run with OSWorld's own ``SetupController``
(confined, proxied, judged from what the desktop answered), then the screen settles and the
task's app is up and accepting input (readiness probes, run inside the desktop).

May import: ``catalog``, ``guards``, ``upstream`` and the bottom modules; never scoring or planning.
"""
