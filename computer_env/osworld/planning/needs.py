"""What a task needs from the desktop and the host, read from its JSON (no desktop involved).

``task_needs(task)`` lists the programs its setup launches or executes and its evaluator runs,
the Python modules its ``python -c`` steps import, the GNOME gsettings schemas it reads or sets,
the files that must be in the download cache (setup downloads, evaluator ``cloud_file`` /
``cache_file``), why it needs the internet while it runs (live web pages, a proxy, installers),
and what no desktop here can give it (a Google Drive account). :mod:`.needs_check` compares this
with what a desktop actually has.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from computer_env.osworld.catalog.tasks import SetupStep, Task, is_local_url

_SHELL_WORDS = frozenset(
    {
        "cd",
        "export",
        "echo",
        "set",
        "unset",
        "source",
        ".",
        "true",
        "false",
        "exit",
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        "[",
        "[[",
        "test",
        "read",
        "eval",
        "local",
        "return",
        "printf",
        "shift",
        "wait",
        "trap",
        "{",
        "}",
        "!",
        "function",
        "alias",
        "exec",
        "let",
        "declare",
        "type",
        "command",
        "break",
        "continue",
        ":",
        "history",
        "ulimit",
        "umask",
        "pushd",
        "popd",
    }
)
"""Shell builtins and keywords: never programs to look for."""

_WRAPPERS = frozenset({"sudo", "nohup", "env", "timeout", "nice", "setsid", "stdbuf", "xargs"})
"""Programs that run another program (both are needed)."""

_PROGRAM = re.compile(r"^(?:/[\w.+-]+)+$|^[A-Za-z0-9_][\w.+-]*$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_GSETTINGS = re.compile(
    r"\bgsettings\s+(?:get|set|reset|list-keys|range|writable)\s+"
    r"([A-Za-z][\w.-]*\.[\w.-]+)"
)
_INSTALLS = re.compile(r"\b(?:apt|apt-get|pip3?|conda|snap)\s+install\s+(?:-\S+\s+)*([\w.+-]+)")
_URL = re.compile(r"https?://[^\s\"'<>)\]]+")

GETTER_PROGRAMS: dict[str, tuple[str, ...]] = {
    "vlc_config": ("vlc",),
    "vlc_playing_info": ("vlc",),
    "gimp_config_file": ("gimp",),
    "vscode_config": ("code",),
    "vm_terminal_output": ("gnome-terminal",),
    "default_video_player": ("xdg-mime",),
    "vm_window_size": ("wmctrl",),
}
"""Evaluator getters that read a program's state or run a program, by getter type."""

CHROME_GETTERS = frozenset(
    {
        "default_search_engine",
        "cookie_data",
        "history",
        "enabled_experiments",
        "profile_name",
        "chrome_language",
        "chrome_font_size",
        "bookmarks",
        "extensions_installed_from_shop",
        "open_tabs_info",
        "active_tab_info",
        "active_tab_html_parse",
        "active_tab_url_parse",
        "active_url_from_accessTree",
        "chrome_saved_address",
        "shortcuts_on_desktop",
        "number_of_search_results",
        "enable_do_not_track",
        "enable_enhanced_safety_browsing",
        "enable_safe_browsing",
        "new_startup_page",
        "find_unpacked_extension_path",
        "find_installed_extension_name",
        "data_delete_automacally",
        "chrome_appearance_mode_ui",
        "page_info",
        "pdf_from_url",
        "url_dashPart",
        "url_path_parse",
        "macys_product_url_parse",
        "gotoRecreationPage_and_get_html_content",
        "info_from_website",
    }
)
"""Getters that read Chrome's profile or talk to it over its debugging port."""

WEB_GETTERS = frozenset({"gotoRecreationPage_and_get_html_content", "number_of_search_results"})
"""Getters that load a fixed live web page when scoring (others do when their config names a
remote URL; those reading the active tab load whatever the browser shows)."""

CACHE_GETTERS = frozenset({"cloud_file"})
"""Getters whose files come from the web (the download cache when offline); ``cache_file``
reads what a postconfig step wrote, not a download."""

AGENT_WEB: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"^(?!.*\blocal\b).*\binstall(?:ing)?\b", re.I | re.S),
        "the agent installs software from the internet",
    ),
    (
        re.compile(r"\bdownload (?:the|a|an) (?:\w+ )?(?:pdf|paper|image|logo|video)", re.I),
        "the agent downloads from the web",
    ),
    (
        re.compile(r"plug-?in store|web ?store|marketplace|gnome-look", re.I),
        "the agent browses an online store",
    ),
)
"""Instructions whose solution needs the internet while the agent works (non-infeasible)."""

_OTHER_BROWSERS = frozenset({"chromium", "chromium-browser"})
"""A task that launches one of these itself (the built-in tasks) reads that browser's state."""

GDRIVE = frozenset({"googledrive", "login"})


class TaskNeeds(BaseModel):
    """Everything a task needs beyond a desktop's basic server (see the module docstring)."""

    programs: list[str] = Field(default_factory=list)
    python_modules: list[str] = Field(default_factory=list)
    schemas: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)
    network: list[str] = Field(default_factory=list)
    unsupported: list[str] = Field(default_factory=list)

    @property
    def needs_network(self) -> bool:
        """Does the task need the internet while it runs (not just for cached files)?"""
        return bool(self.network)


def _add(seq: list[str], *items: str) -> None:
    for item in items:
        if item and item not in seq:
            seq.append(item)


def shell_programs(script: str) -> list[str]:
    """The programs a shell command line runs (words in command position), best effort:
    builtins, variable assignments, redirections and ``./local`` scripts are left out;
    ``sudo``/``nohup``/``env``/``timeout`` count along with the program they run."""
    lexer = shlex.shlex(
        script.replace("`", " ; ").replace("\n", " ; "), posix=True, punctuation_chars=True
    )
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes: fall back to whitespace
        tokens = script.split()
    found: list[str] = []
    expect = True  # the next word is in command position
    wrapped = False  # ... after a wrapper (sudo, timeout): flags and durations come first
    for tok in tokens:
        if tok and all(c in "();<>|&\n" for c in tok):
            expect, wrapped = tok not in ("<", ">", ">>", "<<", ">&", "<&"), False
            continue
        if not expect:
            continue
        if (
            _ASSIGNMENT.match(tok)
            or tok.startswith("-")
            or (wrapped and re.fullmatch(r"[\d.]+[smhd]?", tok))
        ):
            continue
        if tok in ("command", "exec", "then", "do", "else", "!", "{", "if", "while", "until"):
            continue
        expect = False
        if tok in _SHELL_WORDS or not _PROGRAM.match(tok) or "/home/" in tok:
            continue
        _add(found, tok)
        if tok in _WRAPPERS:
            expect = wrapped = True
    return found


def python_imports(code: str) -> list[str]:
    """Top-level module names a ``python -c`` snippet imports."""
    mods: list[str] = []
    for statement in re.split(r"[;\n]", code):
        words = statement.strip().split()
        if len(words) >= 2 and words[0] == "from":
            _add(mods, words[1].split(".")[0])
        elif len(words) >= 2 and words[0] == "import":
            names = " ".join(words[1:]).split(",")
            _add(mods, *(n.strip().split()[0].split(".")[0] for n in names if n.strip()))
    return [m for m in mods if m.isidentifier()]


def command_needs(command: Any, shell: bool, needs: TaskNeeds, *, modules: bool = True) -> None:
    """Add what running ``command`` (an ``execute``/``launch``/``command`` step or a
    ``vm_command_line`` getter) needs to ``needs``; ``modules=False`` for an evaluator's command,
    whose imports are what the agent was asked to install."""
    _command_network(command, needs)
    if isinstance(command, list) and command:
        words = [str(w) for w in command]
        prog = words[0]
        base = prog.rsplit("/", 1)[-1]
        if base.startswith("python") and "-c" in words[1:]:
            _add(needs.programs, prog)
            code = words[words.index("-c") + 1] if words.index("-c") + 1 < len(words) else ""
            if modules:
                _add(needs.python_modules, *python_imports(code))
            _schemas(code, needs)
            return
        if base in ("bash", "sh", "dash") and "-c" in words[1:]:
            _add(needs.programs, prog)
            script = words[words.index("-c") + 1] if words.index("-c") + 1 < len(words) else ""
            command_needs(script, True, needs, modules=modules)
            return
        if shell:
            command_needs(" ".join(shlex.quote(w) for w in words), True, needs, modules=modules)
            return
        for word in words:  # no shell: the first word runs (after a wrapper's flags)
            if word.startswith("-") or _ASSIGNMENT.match(word):
                continue
            if _PROGRAM.match(word):
                _add(needs.programs, word)
            if program_label(word) not in _WRAPPERS:
                break
        return
    elif isinstance(command, str):
        script = command
    else:
        return
    for prog in shell_programs(script):
        _add(needs.programs, prog)
    _schemas(script, needs)


def _command_network(command: Any, needs: TaskNeeds) -> None:
    """A command that installs packages or fetches a remote URL needs the internet."""
    text = " ".join(str(w) for w in command) if isinstance(command, list) else str(command or "")
    for package in _INSTALLS.findall(text):
        _add(needs.network, f"installs {package} from the internet")
    for url in _URL.findall(text):
        if not is_local_url(url):
            _add(needs.network, f"fetches {_host(url)}")


def _schemas(text: str, needs: TaskNeeds) -> None:
    _add(needs.schemas, *_GSETTINGS.findall(text))


def _step_needs(step: SetupStep, needs: TaskNeeds) -> None:
    p = step.parameters
    if step.type in ("launch", "execute", "command", "execute_with_verification"):
        command_needs(p.get("command"), bool(p.get("shell", False)), needs)
    elif step.type == "download":
        for item in p.get("files", []):
            url = str(item.get("url", "")) if isinstance(item, dict) else ""
            if url and not is_local_url(url):
                _add(needs.files, url)
    elif step.type in ("chrome_open_tabs", "chrome_close_tabs"):
        _add(needs.programs, "google-chrome")
        for url in p.get("urls_to_open", []):
            if not is_local_url(str(url)):
                _add(needs.network, f"opens {_host(str(url))} in the browser")
    elif step.type == "update_browse_history":
        _add(needs.programs, "google-chrome")
    elif step.type in GDRIVE:
        _add(needs.unsupported, "a Google Drive account (googledrive/login setup steps)")
        _add(needs.network, "Google Drive")
    elif step.type == "open":
        path = str(p.get("path", ""))
        if path.startswith(("http://", "https://")) and not is_local_url(path):
            _add(needs.network, f"opens {_host(path)}")


def _host(url: str) -> str:
    return urlsplit(url).hostname or url


def _getter_needs(spec: dict[str, Any], needs: TaskNeeds) -> None:
    kind = str(spec.get("type", ""))
    if kind in ("vm_command_line", "vm_command_error"):
        command_needs(spec.get("command"), bool(spec.get("shell", False)), needs, modules=False)
    _add(needs.programs, *GETTER_PROGRAMS.get(kind, ()))
    if kind in CHROME_GETTERS and not any(
        program_label(p) in _OTHER_BROWSERS for p in needs.programs
    ):
        _add(needs.programs, "google-chrome")
    remote = [u for u in _URL.findall(json.dumps(spec)) if not is_local_url(u)]
    if kind in WEB_GETTERS or (remote and kind not in CACHE_GETTERS):
        _add(needs.network, f"the evaluator loads a live web page ({kind})")
    if kind in CACHE_GETTERS:
        paths = spec.get("path")
        for url in paths if isinstance(paths, list) else [paths]:
            if (
                isinstance(url, str)
                and url.startswith(("http://", "https://"))
                and not is_local_url(url)
            ):
                _add(needs.files, url)
    if kind == "googledrive_file":
        _add(needs.unsupported, "a Google Drive account (googledrive_file getter)")
        _add(needs.network, "Google Drive")


def task_needs(task: Task) -> TaskNeeds:
    """What ``task`` needs (see the module docstring); pure, from the task JSON alone."""
    needs = TaskNeeds()
    for step in task.all_steps():
        _step_needs(step, needs)
    for spec in task.evaluator.getter_specs():
        _getter_needs(spec, needs)
    if task.proxy:
        _add(needs.network, 'a proxy to the live web ("proxy": true)')
    for url in _URL.findall(task.instruction):
        if not is_local_url(url):
            _add(needs.network, f"the instruction points at {_host(url)}")
    if not task.evaluator.is_infeasible:
        for pattern, why in AGENT_WEB:
            if pattern.search(task.instruction):
                _add(needs.network, why)
    installed = set(_INSTALLS.findall(task.model_dump_json()))
    needs.programs = [p for p in needs.programs if program_label(p) not in installed]
    return needs


def program_label(program: str) -> str:
    """How a program is named in reports: its base name (``/usr/bin/thunderbird`` -> ``thunderbird``)."""
    return program.rsplit("/", 1)[-1]


__all__ = [
    "CACHE_GETTERS",
    "CHROME_GETTERS",
    "GETTER_PROGRAMS",
    "TaskNeeds",
    "WEB_GETTERS",
    "command_needs",
    "program_label",
    "python_imports",
    "shell_programs",
    "task_needs",
]
