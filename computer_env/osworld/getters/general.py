"""General getters: ``rule``, ``vm_command_line``, ``vm_command_error``, ``vm_terminal_output``,
``accessibility_tree``, ``vm_screen_size``."""

from __future__ import annotations

from typing import Any

from computer_env.errors import EvaluatorInfraError, VMUnreachable


def get_rule(env: Any, config: dict[str, Any]) -> Any:
    """The ``rules`` of the config, as is."""
    return config["rules"]


def _run(env: Any, config: dict[str, Any]) -> Any:
    from computer_env.desktop.client import DesktopRequestError

    try:
        return env.client.execute(config["command"], shell=bool(config.get("shell", False)))
    except VMUnreachable as exc:
        raise EvaluatorInfraError(f"vm_command_line: desktop unreachable: {exc}") from exc
    except DesktopRequestError:
        env.controller._confirm_alive("run a command")
        return None


def get_vm_command_line(env: Any, config: dict[str, Any]) -> str | None:
    """A guest command's stdout (None when the server refused it)."""
    res = _run(env, config)
    return None if res is None else res.output


def get_vm_command_error(env: Any, config: dict[str, Any]) -> str | None:
    """A guest command's stderr."""
    res = _run(env, config)
    return None if res is None else res.error


def get_vm_terminal_output(env: Any, config: dict[str, Any]) -> str | None:
    """The text of the guest's terminal."""
    return env.controller.get_terminal_output()


def get_accessibility_tree(env: Any, config: dict[str, Any]) -> str | None:
    """The guest's accessibility tree (XML)."""
    return env.controller.get_accessibility_tree()


def get_vm_screen_size(env: Any, config: dict[str, Any]) -> dict[str, int] | None:
    """``{"width", "height"}`` of the guest screen."""
    return env.controller.get_vm_screen_size()
