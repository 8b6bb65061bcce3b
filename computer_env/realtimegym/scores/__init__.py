"""Per-case normalisers: the expert's score (the divisor, from ``expert_scores.json``) and the
provable ceiling of each case.

May import: the game modules of ``computer_env.realtimegym`` and ``players`` (the expert).
"""
