"""A judge model as second opinion (SEAgent's protocol): the request a judge is asked with, and
the parsing of its verdict. The HTTP call itself uses the ``openai`` package
(:mod:`holo_agent.judge.client`)."""

from holo_agent.judge.client import JudgeClient, Judgement
from holo_agent.judge.request import (
    ACTIONS_CLOSE,
    ACTIONS_OPEN,
    JUDGE_SYSTEM_PROMPT,
    JudgeParseError,
    build_judge_messages,
    parse_verdict,
)

__all__ = [
    "ACTIONS_CLOSE",
    "ACTIONS_OPEN",
    "JUDGE_SYSTEM_PROMPT",
    "JudgeClient",
    "JudgeParseError",
    "Judgement",
    "build_judge_messages",
    "parse_verdict",
]
