"""The players that need no model: the rule-based reference player (the harness check) and the
search-based expert whose scores normalise the benchmark.

May import: the game modules of ``computer_env.realtimegym`` (env, games, keymap); never ``scores``.
"""
