"""Synthesized tasks with executable verifiers as pytest cases (EvoCUA's protocol).

The plugin collects the task files of ``--synthetic-dir`` (default: the shipped examples), sets
each up on a reset desktop, checks that the verifier scores 0 before the agent acts, lets the
agent play and scores the case with the verifier, run inside the desktop.
"""


def test_synthetic(synthetic_case):
    synthetic_case.run()
