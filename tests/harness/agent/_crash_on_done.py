"""A planted harness bug for a child audit run (``-p _crash_on_done``, with this folder on
``PYTHONPATH``): the agent loop's parser raises ``ValueError`` on the ``done-at-once`` exploit's
answer and parses everything else as the real ``parse_step`` does.

A test double of a bug the harness no longer has (a parser exception that escapes the agent
loop): it lets ``test_parser_bombs`` check that ``--audit`` counts a case the harness crashed on
as a harness flaw, which no real exploit can now cause.
"""

from __future__ import annotations

import holo_agent.agent as agent_module
from holo_agent.tools import CodeStep, Step, parse_step

MARK = "The task is complete."
"""The thought of the ``done-at-once`` answer (``holo_agent.reference.exploits.base.DONE``)."""


def _crashing_parse(text: object, code_actions: bool = False) -> Step | CodeStep:
    if isinstance(text, str) and MARK in text:
        raise ValueError("planted harness bug (test double): the parser raised")
    return parse_step(text, code_actions)


agent_module.parse_step = _crashing_parse  # type: ignore[assignment]
