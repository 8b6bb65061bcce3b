"""What OSWorld's getters see as ``env``: the attributes of OSWorld's ``DesktopEnv`` they read,
pointed at the desktop's gateway (``osworld_url``), with infra-awareness around OSWorld's own
``PythonController``.

OSWorld's getters read ``env.controller`` (a ``PythonController``), ``env.vm_ip``,
``env.server_port``, ``env.chromium_port``, ``env.vlc_port``, ``env.cache_dir``,
``env.action_history``, ``env.setup_controller`` and a few more. Where OSWorld's controller
answers None (its way of saying "failed"), :class:`InfraAwareController` asks whether the
desktop server is alive: a dead desktop is an ``EvaluatorInfraError`` (unscored), a live one
keeps OSWorld's None (e.g. a file the agent never created).
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from typing import Any

import httpx

from computer_env.errors import EvaluatorCrash, EvaluatorInfraError
from computer_env.osworld.catalog.download import cached_fetch
from computer_env.osworld.catalog.tasks import Task
from computer_env.osworld.context import TaskContext
from computer_env.osworld.guards.confine import asset_hosts, check_download_url, confined
from computer_env.osworld.prepare.setup import upstream_setup_controller
from computer_env.osworld.upstream.loader import upstream_python_controller

logger = logging.getLogger(__name__)

CONTROLLER_RETRY_INTERVAL_S = 1.0
"""OSWorld's controller waits 5 s between its 3 tries; a missing file (a normal answer) then
costs 15 s per getter. Here 1 s: results are the same, a dead desktop is told apart by a ping."""


class InfraAwareController:
    """OSWorld's ``PythonController`` at the gateway; a None answer from a dead desktop raises
    ``EvaluatorInfraError``. Every attribute is OSWorld's."""

    def __init__(self, ctx: TaskContext) -> None:
        host, port = ctx.osworld_address
        self._ctx = ctx
        self._inner = upstream_python_controller()(vm_ip=host, server_port=port)
        self._inner.retry_interval = CONTROLLER_RETRY_INTERVAL_S

    def confirm_alive(self, what: str) -> None:
        """Raise ``EvaluatorInfraError`` unless the desktop server answers."""
        try:
            alive = bool(self._ctx.client.ping())
        except Exception:  # noqa: BLE001 - a failing ping means not alive
            alive = False
        if not alive:
            raise EvaluatorInfraError(
                f"evaluator could not {what}: the desktop server at "
                f"{self._ctx.handle.url} does not answer"
            )

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or name.startswith("_"):
            return value

        @functools.wraps(value)
        def call(*args: Any, **kwargs: Any) -> Any:
            result = value(*args, **kwargs)
            if result is None:
                self.confirm_alive(f"call the controller's {name}")
            return result

        return call


def seed_cloud_files(env: EvalEnv, spec: dict[str, Any]) -> None:
    """Put a ``cloud_file`` getter's files where OSWorld's getter looks first
    (``env.cache_dir/dest``), from the shared download cache (fetched into it when missing; a
    failure is a ``NetworkError``, unscored). URLs and names are confined first."""
    paths, dests = spec.get("path"), spec.get("dest")
    if not spec.get("multi", False):
        paths, dests = [paths], [dests]
    ctx = env.ctx
    for url, dest in zip(paths or [], dests or [], strict=False):
        if not isinstance(url, str) or not isinstance(dest, str):
            continue
        check_download_url(url, allow_hosts=asset_hosts(ctx.vars))
        local = confined(env.cache_dir, dest)
        if local.exists():
            continue
        src = cached_fetch(ctx.download_cache_dir, url, allow_hosts=asset_hosts(ctx.vars))
        try:
            os.link(src, local)
        except OSError:
            shutil.copyfile(src, local)


def _uses_cdp(getter: Any) -> bool:
    code = getattr(getter, "__code__", None)
    return code is not None and "chromium_port" in code.co_names


def desktop_processes(env: EvalEnv) -> list[tuple[str, str]]:
    """``(state, command line)`` of every process in the desktop (``ps``'s STAT column)."""
    res = env.ctx.client.execute(["ps", "-eo", "stat=,args="], timeout=15)
    return [
        (parts[0], parts[1] if len(parts) > 1 else "")
        for parts in (line.split(None, 1) for line in res.output.splitlines())
        if parts
    ]


def stopped_apps(env: EvalEnv) -> list[str]:
    """Command lines of the desktop's stopped processes (SIGSTOP: what the agent left; nothing
    of the environment stops a process)."""
    try:
        return [args for stat, args in desktop_processes(env) if stat.startswith(("T", "t"))]
    except Exception:  # noqa: BLE001 - a probe that cannot answer attributes nothing
        logger.exception("listing the desktop's processes failed")
        return []


def check_cdp(env: EvalEnv, getter: Any) -> None:
    """Before an OSWorld getter that connects to Chrome's DevTools: if the port does not answer
    while Chrome runs in the desktop, that is the environment's failure (OSWorld's getter would
    return an empty answer and score 0), unless Chrome is stopped (SIGSTOP): that is what the
    agent left, an :class:`EvaluatorCrash` (a scored 0 once the agent acted; ``--audit``'s
    ``hang-apps`` made it unscored before). Without Chrome running, OSWorld's getter runs as
    is."""
    if not _uses_cdp(getter):
        return
    url = f"http://{env.vm_ip}:{env.chromium_port}/json/version"
    try:
        if httpx.get(url, timeout=5.0).status_code == 200:
            return
    except httpx.HTTPError:
        pass
    procs = desktop_processes(env)
    states = [stat for stat, args in procs if "remote-debugging-port" in args]
    if any(stat.startswith(("T", "t")) for stat in states):
        raise EvaluatorCrash(
            f"Chrome is stopped (SIGSTOP) in the desktop: its DevTools port "
            f"does not answer at {url}"
        )
    if states:
        if _setup_forwards(env.task) and not any(_is_forward(args) for _, args in procs):
            raise EvaluatorCrash(
                f"the task's DevTools forward (socat, started by its setup, "
                f"whose DevTools answered before the agent's turn) is gone "
                f"from the desktop: nothing answers at {url}"
            )
        raise EvaluatorInfraError(
            "Chrome runs in the desktop but its DevTools port does not "
            f"answer at {url} (the task's socat forward is missing?)"
        )


def _is_forward(args: str) -> bool:
    return args.split(None, 1)[0].rsplit("/", 1)[-1] == "socat" if args.strip() else False


def _setup_forwards(task: Any) -> bool:
    """Does the task's own setup launch a socat forward (OSWorld's Chrome tasks forward 9222 to
    Chrome's DevTools port)? Then one missing at evaluation was killed during the agent's turn
    (the readiness wait checked the DevTools port through it before the agent's first action)."""
    return any(
        step.type in ("launch", "execute", "command")
        and _is_forward(
            " ".join(map(str, c))
            if isinstance(c := step.parameters.get("command", ""), list)
            else str(c)
        )
        for step in getattr(task, "config", [])
    )


class EvalEnv:
    """The ``env`` passed to OSWorld's getters."""

    def __init__(self, task: Task, ctx: TaskContext, **_: Any) -> None:
        self.ctx = ctx
        self.client = ctx.client
        self.task = task
        self.controller = InfraAwareController(ctx)
        self.vm_ip, self.server_port = ctx.osworld_address
        ports = ctx.osworld_ports
        self.chromium_port: int = ports.get("cdp", 9222)
        self.vlc_port: int = ports.get("vlc", 8080)
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

    @functools.cached_property
    def setup_controller(self) -> Any:
        """OSWorld's ``SetupController`` for this desktop (some getters call it)."""
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


__all__ = [
    "CONTROLLER_RETRY_INTERVAL_S",
    "EvalEnv",
    "InfraAwareController",
    "check_cdp",
    "desktop_processes",
    "stopped_apps",
    "seed_cloud_files",
]
