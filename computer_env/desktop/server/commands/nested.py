"""The server's child processes when the desktop has a nest (see :mod:`.nest`): every
command it runs for set-up, evaluation or the agent starts inside the nest."""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from computer_env.desktop.server.commands.nest import bounding_spec, enter_argv, maps_root
from computer_env.procs import ChildProcesses


def _argv(command: str | Sequence[str], shell: bool) -> list[str]:
    """``command`` as :class:`subprocess.Popen` would run it (``shell``: ``/bin/sh -c``)."""
    if shell:
        return (
            ["/bin/sh", "-c", command] if isinstance(command, str) else ["/bin/sh", "-c", *command]
        )
    return [command] if isinstance(command, str) else list(command)


def _check_program(program: str, env: dict[str, str] | None, cwd: str) -> None:
    """Raise as :class:`subprocess.Popen` would for a program that cannot be run (``nsenter``
    itself would start and exit 127 instead)."""
    if "/" in program:
        path = os.path.join(cwd, program)
        if not os.path.exists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    elif shutil.which(program, path=(env if env is not None else os.environ).get("PATH")) is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


class NestedProcesses(ChildProcesses):
    """:class:`ChildProcesses` whose every command runs inside the nest of init ``nest_pid``.

    ``Popen.pid`` is that of ``nsenter`` (this side), in the same process group as the command:
    ending the group (timeouts, ``kill``) ends both; ``nsenter`` exits with the command's
    status (or dies of its signal). A signal sent to ``Popen`` itself reaches only ``nsenter``.
    """

    def __init__(self, nest_pid: int, *, cwd: Path | None = None, **kwargs: Any) -> None:
        super().__init__(cwd=cwd, **kwargs)
        self.nest_pid = nest_pid
        self._bounding = bounding_spec() if maps_root(nest_pid) else None
        self._workdir = cwd

    def popen(
        self,
        command: str | Sequence[str],
        *,
        shell: bool = False,
        cwd: Path | str | None = None,
        env: dict[str, str] | None = None,
        **kwargs: Any,
    ) -> Any:
        argv = _argv(command, shell)
        workdir = str(cwd or self._workdir or os.getcwd())
        if not os.path.isdir(workdir):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), workdir)
        _check_program(argv[0], env, workdir)
        argv = enter_argv(self.nest_pid, argv, workdir, bounding=self._bounding)
        return super().popen(argv, cwd=workdir, env=env, **kwargs)
