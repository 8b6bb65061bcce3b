"""``parse_step`` against hostile model output: a Step or ``StepParseError``, never anything else.

A server without structured outputs passes whatever the model wrote. Before, a coordinate of
more than 4,300 digits (``ValueError``) or deeply nested JSON (``RecursionError``) escaped the
agent loop and the case had no result. Explicit bombs first, then generated outputs
(hypothesis): arbitrary text with lone surrogates, arbitrary JSON values, valid Steps with one
field replaced by a hostile value, and valid Steps cut or spliced at random. Pure logic: no
desktop, no network.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from holo_agent.tools import (
    MAX_OUTPUT_CHARS,
    CodeStep,
    Step,
    StepParseError,
    parse_step,
)

FUZZ = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
"""No example database (nothing written into the working tree), no per-example deadline (a
loaded CI host)."""

VALID: dict[str, Any] = {
    "note": None,
    "thought": "Click OK.",
    "tool_call": {"tool_name": "click", "element": "OK", "x": 500, "y": 500},
}


def step_text(call: str, thought: str = '"Act."') -> str:
    """A Step's JSON around the tool call ``call`` (JSON text, written as it is)."""
    return f'{{"note": null, "thought": {thought}, "tool_call": {call}}}'


def outcome(text: object, code_actions: bool = False) -> Step | CodeStep | StepParseError:
    """What ``parse_step`` made of ``text``: the Step, or the StepParseError it raised; any other
    exception fails the test (it would escape the agent loop)."""
    try:
        return parse_step(text, code_actions)
    except StepParseError as exc:
        return exc


def assert_sound(result: Step | CodeStep | StepParseError) -> None:
    """A reason is one short line of valid UTF-8 (it is recorded and sent back to the model); a
    Step serialises (it is recorded and sent back) with its coordinates in [0, 1000]."""
    if isinstance(result, StepParseError):
        assert isinstance(result.reason, str) and result.reason
        assert "\n" not in result.reason and len(result.reason) <= 600, result.reason
        result.reason.encode("utf-8")
        return
    result.model_dump_json()
    call = result.tool_call.model_dump()
    for key in ("x", "y", "from_x", "from_y", "to_x", "to_y"):
        if call.get(key) is not None:
            assert isinstance(call[key], int) and 0 <= call[key] <= 1000, call


def malformed(text: object, code_actions: bool = False) -> str:
    """The reason ``text`` is malformed (fails the test if it parses)."""
    result = outcome(text, code_actions)
    assert isinstance(result, StepParseError), f"parsed: {result!r}"
    assert_sound(result)
    return result.reason


BOMBS: dict[str, tuple[object, str]] = {
    # name: (model output, what the reason says)
    "5001-digit coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": 1' + "0" * 5000 + ', "y": 1}'),
        "4300 digits",
    ),
    "5001-digit float": (step_text('{"tool_name": "wait", "seconds": 1' + "0" * 5000 + ".5}"), ""),
    "4000-digit coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": 1' + "0" * 4000 + ', "y": 1}'),
        "schema mismatch",
    ),
    "200,000 nested arrays": ("[" * 200_000 + "]" * 200_000, "too long"),
    "200,000 arrays open": ("[" * 200_000, "nested too deeply"),
    "30,000 nested objects": ('{"a":' * 30_000, "nested too deeply"),
    "deep nesting inside a Step": (
        step_text('{"tool_name": "answer", "content": ' + "[" * 5000 + "]" * 5000 + "}"),
        "nested too deeply",
    ),
    "lone surrogate": (
        step_text('{"tool_name": "answer", "content": "DONE \ud800"}'),
        "invalid Unicode",
    ),
    "lone surrogate escape": (
        step_text('{"tool_name": "answer", "content": "\\udfff"}'),
        "invalid Unicode",
    ),
    "lone surrogate in a key": ('{"\\ud800": 1}', "valid string"),
    "30 MB write": (
        json.dumps({**VALID, "tool_call": {"tool_name": "write", "content": "A" * 30_000_000}}),
        "too long",
    ),
    "30 MB JSON string": ('"' + "x" * 30_000_000 + '"', "too long"),
    "NaN": (step_text('{"tool_name": "wait", "seconds": NaN}'), "NaN"),
    "Infinity": (step_text('{"tool_name": "wait", "seconds": Infinity}'), "Infinity"),
    "-Infinity": (step_text('{"tool_name": "wait", "seconds": -Infinity}'), "Infinity"),
    "1e999": (step_text('{"tool_name": "wait", "seconds": 1e999}'), "out of range"),
    "1e308 coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": 1e308, "y": 1}'),
        "schema mismatch",
    ),
    "negative zero float coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": -0.0, "y": 1}'),
        "schema mismatch",
    ),
    "bool coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": true, "y": 1}'),
        "schema mismatch",
    ),
    "string coordinate": (
        step_text('{"tool_name": "click", "element": "OK", "x": "5", "y": 1}'),
        "schema mismatch",
    ),
    "a list": ("[1, 2, 3]", "expected an object"),
    "a number": ("12", "expected an object"),
    "a string": ('"click"', "expected an object"),
    "null": ("null", "expected an object"),
    "true": ("true", "expected an object"),
    "two objects": (json.dumps(VALID) + json.dumps(VALID), "invalid JSON"),
    "BOM first": ("\ufeff" + json.dumps(VALID), "invalid JSON"),
    "NUL byte outside a string": (json.dumps(VALID)[:-1] + "\x00}", "invalid JSON"),
    "only whitespace": (" \n\t ", "empty output"),
    "None": (None, "empty output"),
    "bytes": (json.dumps(VALID).encode(), "expected text"),
    "an int": (5, "expected text"),
    "a dict": (VALID, "expected text"),
    "a list of parts": ([{"type": "text", "text": json.dumps(VALID)}], "expected text"),
    "unknown tool": (step_text('{"tool_name": "teleport"}'), "schema mismatch"),
    "tool_call a list": (step_text("[1, 2]"), "schema mismatch"),
    "extra field": (json.dumps({**VALID, "score": 1.0}), "schema mismatch"),
    "run_code without code actions": (
        step_text('{"tool_name": "run_code", "language": "bash", "code": "id"}'),
        "schema mismatch",
    ),
}


@pytest.mark.parametrize("name", list(BOMBS))
def test_a_hostile_output_is_malformed_with_a_reason(name: str) -> None:
    text, said = BOMBS[name]
    reason = malformed(text)
    assert said in reason, reason


def test_a_step_at_the_length_limit_parses_and_one_past_it_does_not() -> None:
    pad = MAX_OUTPUT_CHARS - len(json.dumps(VALID))
    text = json.dumps(VALID)[:-1] + " " * pad + "}"
    assert len(text) == MAX_OUTPUT_CHARS
    assert isinstance(outcome(text), Step)
    assert "too long" in malformed(text + " ")


def test_valid_unicode_passes() -> None:
    """A surrogate pair's escape is one real character, and non-ASCII text is fine."""
    text = step_text('{"tool_name": "write", "content": "caf\u00e9 \\ud83d\\ude00 \u4e2d"}')
    step = outcome(text)
    assert isinstance(step, Step)
    assert step.tool_call.model_dump()["content"] == "caf\u00e9 \U0001f600 \u4e2d"


def test_a_bomb_is_malformed_in_code_step_parsing_too() -> None:
    for name in ("5001-digit coordinate", "200,000 arrays open", "lone surrogate escape", "NaN"):
        malformed(BOMBS[name][0], code_actions=True)
    code = step_text('{"tool_name": "run_code", "language": "bash", "code": "' + "x" * 20001 + '"}')
    assert "schema mismatch" in malformed(code, code_actions=True)


# -- generated outputs ------------------------------------------------------------------------

ANY_CHAR = st.characters(exclude_categories=())  # lone surrogates included
HOSTILE_TEXT = st.text(ANY_CHAR, max_size=300)
NUMBER_LITERALS = st.one_of(
    st.integers().map(str),
    st.integers(min_value=10**100, max_value=10**4000).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(json.dumps),
    st.sampled_from(
        [
            "1" * 5001,
            "-" + "9" * 4400,
            "1e999",
            "-1e999",
            "NaN",
            "Infinity",
            "1" + "0" * 5000 + ".0",
            "0.000001e-400",
            "1E+2147483648",
            "-0",
            "1.0",
        ]
    ),
)
"""Numbers written as JSON text (or what a model may write for one)."""
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | HOSTILE_TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(HOSTILE_TEXT, inner, max_size=5),
    max_leaves=40,
)
FRAGMENTS = st.one_of(
    JSON_VALUES.map(json.dumps),
    JSON_VALUES.map(lambda v: json.dumps(v, ensure_ascii=False)),
    NUMBER_LITERALS,
)
"""JSON text of any value: lone surrogates as escapes or as themselves, hostile numbers."""
FIELDS = [
    "note",
    "thought",
    "tool_call",
    "tool_call.tool_name",
    "tool_call.element",
    "tool_call.x",
    "tool_call.y",
    "extra",
]


@FUZZ
@given(HOSTILE_TEXT)
def test_any_text_is_a_step_or_malformed(text: str) -> None:
    assert_sound(outcome(text))


@FUZZ
@given(JSON_VALUES)
def test_any_json_value_is_a_step_or_malformed(value: Any) -> None:
    assert_sound(outcome(json.dumps(value, ensure_ascii=False)))
    assert_sound(outcome(json.dumps(value)))  # lone surrogates as escapes


@FUZZ
@given(st.sampled_from(FIELDS), FRAGMENTS)
def test_a_step_with_one_hostile_field_is_a_step_or_malformed(field: str, fragment: str) -> None:
    data: dict[str, Any] = json.loads(json.dumps(VALID))
    target, key = (data["tool_call"], field.split(".")[1]) if "." in field else (data, field)
    target[key] = "__HOSTILE__"
    assert_sound(outcome(json.dumps(data).replace('"__HOSTILE__"', fragment)))


@FUZZ
@given(
    st.integers(min_value=0, max_value=200), st.integers(min_value=0, max_value=200), HOSTILE_TEXT
)
def test_a_step_cut_or_spliced_is_a_step_or_malformed(at: int, cut: int, insert: str) -> None:
    text = json.dumps(VALID)
    at = min(at, len(text))
    assert_sound(outcome(text[:at] + insert + text[at + cut :]))


@FUZZ
@given(st.integers(min_value=1, max_value=5000), st.sampled_from("[{"))
def test_any_nesting_depth_is_a_step_or_malformed(depth: int, bracket: str) -> None:
    opener = "[" if bracket == "[" else '{"a":'
    closer = "]" if bracket == "[" else "}"
    inner = opener * depth + "1" + closer * depth
    assert_sound(outcome(step_text('{"tool_name": "answer", "content": ' + inner + "}")))
    assert_sound(outcome(inner))


@FUZZ
@given(NUMBER_LITERALS)
def test_any_number_as_a_coordinate_or_a_wait_is_a_step_or_malformed(literal: str) -> None:
    assert_sound(
        outcome(step_text('{"tool_name": "click", "element": "OK", "x": ' + literal + ', "y": 1}'))
    )
    wait = outcome(step_text('{"tool_name": "wait", "seconds": ' + literal + "}"))
    assert_sound(wait)
    if isinstance(wait, Step):
        seconds = wait.tool_call.model_dump()["seconds"]
        assert math.isfinite(seconds) and 0 <= seconds <= 60
