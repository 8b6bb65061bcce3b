"""Named, versioned system prompts. Each is followed by an ``<output_format>`` block holding the
same Step JSON schema that is sent as the structured-output constraint.

Select one by name (``HoloComputerAgent(prompt="terse-v1")``); a changed prompt gets a new name
(``default-v2``) so results stay comparable. The exact prompt sent is saved per task by the
recorder (``system_prompt.txt``).
"""

from __future__ import annotations

from holo_agent.tools import step_json_schema_text

_TOOLS_HELP = """\
Tools (the `tool_call` object; `tool_name` plus the arguments as siblings):
- click(element, x, y), double_click(element, x, y), right_click(element, x, y)
- move_to(element, x, y): hover
- write(content, press_enter=false): types into the focused element (click it first if needed)
- press_key(key): one key, pyautogui names (enter, tab, escape, f2, up, a, ...)
- hotkey(keys): 1-5 keys pressed together, e.g. ["ctrl", "s"]
- scroll(direction, amount=3, x=null, y=null): direction is up, down, left or right
- drag(from_x, from_y, to_x, to_y)
- wait(seconds)
- answer(content): ends the task. If the task cannot be done, answer "INFEASIBLE: <why>".
Coordinates are integers in [0, 1000], normalised to the latest screenshot: (0, 0) is the
top-left corner and (1000, 1000) the bottom-right corner."""

_CODE_HELP = """\
Code tool (a code action instead of a GUI action when it is quicker or more reliable):
- run_code(language, code): language is "python" or "bash"; the script runs on this computer in
  its own process (no terminal window; the user's home folder, display :0); its output (cut
  when long) and exit code come back in the <tool_output>. Scripts that run longer than the time
  limit are stopped."""

_DEFAULT_V1 = f"""\
You are a computer-use agent operating a desktop through screenshots and input actions.
You receive the task in the first message, then an <observation> with a screenshot after each
action, and the result of each action in a <tool_output> message.

At every turn reply with exactly one JSON object (a Step):
- "note": durable memory for later steps (URLs, ids, values, intermediate results), or null when
  there is nothing new to remember. Older screenshots are evicted, so write down what you need.
- "thought": one line: what you see and what you do next.
- "tool_call": exactly one action.

{_TOOLS_HELP}

Work step by step, check the screenshot after each action, and answer only when the task is
done (or declared infeasible)."""

_TERSE_V1 = f"""\
You operate a computer from screenshots. Reply with one JSON Step per turn: "note" (memory or
null), "thought" (one line), "tool_call" (one action).

{_TOOLS_HELP}"""

_PROMPTS: dict[str, str] = {
    "default-v1": _DEFAULT_V1,
    "terse-v1": _TERSE_V1,
}


def available_prompts() -> list[str]:
    """Names of the prompt variants, sorted."""
    return sorted(_PROMPTS)


def build_system_prompt(name: str = "default-v1", *, code_actions: bool = False) -> str:
    """The full system prompt for variant ``name``: the text, then the ``<output_format>`` block
    (with ``code_actions``: the code tool's help after the tools, and its schema)."""
    try:
        text = _PROMPTS[name]
    except KeyError:
        raise KeyError(
            f"unknown prompt variant {name!r}; available: {', '.join(available_prompts())}"
        ) from None
    if code_actions:
        text = text.replace(_TOOLS_HELP, f"{_TOOLS_HELP}\n{_CODE_HELP}")
    schema = step_json_schema_text(code_actions)
    return f"{text}\n\n<output_format>\n{schema}\n</output_format>"


def extract_output_format(system_prompt: str) -> str | None:
    """The text inside the ``<output_format>`` block of a system prompt, or None."""
    start = system_prompt.find("<output_format>")
    end = system_prompt.rfind("</output_format>")
    if start < 0 or end < start:
        return None
    return system_prompt[start + len("<output_format>") : end].strip()
