"""What getters see as ``env``: a small stand-in for OSWorld's ``DesktopEnv``.

OSWorld's getters read ``env.controller`` (a ``PythonController``), ``env.vm_ip``,
``env.server_port``, ``env.chromium_port``, ``env.vlc_port``, ``env.cache_dir``,
``env.action_history``, ``env.setup_controller`` and a few more; the built-in getters use the
same object (plus ``env.client`` and ``env.ctx``). Unlike upstream's controller, a controller
call that cannot reach the desktop raises ``EvaluatorInfraError`` instead of returning None
(which upstream turns into a false 0).
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from computer_env.errors import EvaluatorInfraError, VMUnreachable
from computer_env.osworld.context import TaskContext
from computer_env.osworld.tasks import Task

logger = logging.getLogger(__name__)

_PREFIX = "import pyautogui; import time; pyautogui.FAILSAFE = False; {command}"


def _infra(what: str, exc: Exception) -> EvaluatorInfraError:
    return EvaluatorInfraError(f"evaluator could not {what}: {exc}")


class ShimController:
    """The ``PythonController`` methods getters call, on a ``DesktopClient``."""

    def __init__(self, ctx: TaskContext) -> None:
        self._ctx = ctx
        self.vm_ip, self.server_port = ctx.guest_address
        self.http_server = ctx.handle.url.rstrip("/")
        self.pkgs_prefix = _PREFIX

    @property
    def _client(self) -> Any:
        return self._ctx.client

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from computer_env.desktop.client import DesktopRequestError

        try:
            return fn(*args, **kw)
        except VMUnreachable as exc:
            raise _infra(what, exc) from exc
        except DesktopRequestError as exc:
            self._confirm_alive(what)
            logger.warning("controller %s: server answered %s", what, exc)
            return None

    def _confirm_alive(self, what: str) -> None:
        """A negative answer (404, error) only counts when the desktop server is demonstrably
        alive: a dead VM's address may be answered by something else on the network."""
        if not self._client.ping():
            raise EvaluatorInfraError(f"evaluator could not {what}: the desktop server at "
                                      f"{self.http_server} does not answer")

    def get_file(self, file_path: str) -> bytes | None:
        """A guest file's bytes; None when it does not exist (on a live server)."""
        data = self._call(f"read {file_path}", self._client.read_file, file_path)
        if data is None:
            self._confirm_alive(f"read {file_path}")
        return data

    def get_screenshot(self) -> bytes | None:
        return self._call("take a screenshot", self._client.screenshot)

    def get_accessibility_tree(self) -> str | None:
        return self._call("read the accessibility tree", self._client.accessibility_tree)

    def get_terminal_output(self) -> str | None:
        return self._call("read the terminal", self._client.terminal_output)

    def get_vm_platform(self) -> str | None:
        return self._call("read the platform", self._client.platform)

    def get_vm_machine(self) -> str | None:
        res = self.execute_python_command("import platform; print(platform.machine())")
        return (res or {}).get("output", "").strip() or None

    def get_vm_screen_size(self) -> dict[str, int] | None:
        size = self._call("read the screen size", self._client.screen_size)
        return {"width": size[0], "height": size[1]} if size else None

    def get_vm_directory_tree(self, path: str) -> dict | None:
        return self._call(f"list {path}", self._client.list_directory, path)

    def get_vm_desktop_path(self) -> str | None:
        res = self._call("find the desktop path", self._client.execute,
                         "echo $HOME/Desktop", shell=True)
        return res.output.strip() if res is not None else None

    def execute_python_command(self, command: str) -> dict[str, Any] | None:
        res = self._call("run a python command", self._client.execute,
                         ["python3", "-c", self.pkgs_prefix.format(command=command)])
        return res.model_dump() if res is not None else None

    def run_python_script(self, script: str) -> dict[str, Any] | None:
        return self._call("run a python script", self._client.run_python, script)

    def run_bash_script(self, script: str, timeout: int = 30,
                        working_dir: str | None = None) -> dict[str, Any] | None:
        return self._call("run a bash script", self._client.run_bash_script, script,
                          timeout=timeout, working_dir=working_dir)


class EvalEnv:
    """The ``env`` passed to getters (upstream's and the built-in ones)."""

    def __init__(self, task: Task, ctx: TaskContext, *, upstream: bool) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.task = task
        self.controller = ShimController(ctx)
        self.vm_ip, self.server_port = ctx.guest_address
        self.chromium_port: int = ctx.handle.ports.get("cdp", 9222)
        self.vlc_port: int = ctx.handle.ports.get("vlc", 8080)
        self.vnc_port: int = ctx.handle.ports.get("vnc", 8006)
        self.cache_dir: str = str(ctx.task_cache_dir)
        self.cache_dir_base: str = str(ctx.cache_dir)
        self.action_history: list[str] = ctx.action_history
        self.screen_width, self.screen_height = ctx.screen
        self.client_password: str = ctx.vars.get("CLIENT_PASSWORD", "password")
        self.enable_proxy: bool = bool(ctx.proxy)
        self.current_use_proxy: bool = bool(ctx.proxy) and task.proxy
        self.task_id: str = task.id
        self.instruction: str = task.instruction
        self.config: list[dict[str, Any]] = [s.model_dump() for s in task.config]
        self.evaluator: dict[str, Any] = task.evaluator.model_dump(exclude_none=True)
        self.os_type: str = "Ubuntu"
        self._upstream = upstream

    @functools.cached_property
    def setup_controller(self) -> Any:
        """OSWorld's ``SetupController`` (upstream backend only; some getters call it)."""
        if not self._upstream:
            raise AttributeError("setup_controller exists only with OSWorld's desktop_env")
        from computer_env.osworld.setup import upstream_setup_controller

        return upstream_setup_controller(self.ctx)

    @property
    def vm_platform(self) -> str | None:
        return self.controller.get_vm_platform()

    @property
    def vm_machine(self) -> str | None:
        return self.controller.get_vm_machine()

    @property
    def vm_screen_size(self) -> dict[str, int] | None:
        return self.controller.get_vm_screen_size()


__all__ = ["EvalEnv", "ShimController"]
