"""Everything one running guest server owns; created once, shared by the routes."""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from computer_env.procs import ChildProcesses

if TYPE_CHECKING:
    from computer_env.desktop.server.commands.verifier import VerifierRunner
    from computer_env.desktop.server.input.actions import ActionInterpreter
    from computer_env.desktop.server.screen.damage import DamageWatcher
    from computer_env.desktop.server.screen.recording import Recorder
    from computer_env.desktop.server.screen.screenshot import ScreenGrabber
    from computer_env.desktop.server.x11.windows import XQueries
    from computer_env.desktop.server.x11.xwatch import XWatch

logger = logging.getLogger(__name__)

VERSION = "1.0"


@dataclass
class ServerConfig:
    """How the server was started (see ``python -m computer_env.desktop.server --help``)."""

    token: str
    home: Path = field(default_factory=Path.home)
    display: str | None = None
    extras: bool = True  # /capabilities, /actions, /type; False mimics an upstream OSWorld VM
    recording_path: Path | None = None
    nest_pid: int | None = None  # the nest's init (see nest.py): commands run inside it


class ServerState:
    """The server's long-lived parts, built lazily so that start-up stays fast."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.procs: ChildProcesses
        """Every command run for set-up, evaluation or the agent (inside the nest if any)."""
        if config.nest_pid is not None:
            from computer_env.desktop.server.commands.nested import NestedProcesses

            self.procs = NestedProcesses(config.nest_pid, cwd=config.home)
        else:
            self.procs = ChildProcesses(cwd=config.home)
        self.own = ChildProcesses(cwd=config.home)
        """The server's own helpers (the screen recorder): outside the nest."""
        self._lock = threading.Lock()
        self._screen: ScreenGrabber | None = None
        self._actions: ActionInterpreter | None = None
        self._recorder: Recorder | None = None
        self._xq: XQueries | None = None
        self._damage: DamageWatcher | None = None
        self._damage_tried = False
        self.wallpaper: Path | None = None
        self.verifier: VerifierRunner | None = None
        """Started by the CLI when the server starts (before any agent acts), never later."""
        self.xwatch: XWatch | None = None
        """Finds and releases grabs of the X server (started by the CLI; see xwatch.py)."""

    @property
    def screen(self) -> ScreenGrabber:
        with self._lock:
            if self._screen is None:
                from computer_env.desktop.server.screen.screenshot import ScreenGrabber

                self._screen = ScreenGrabber(self.config.display)
            return self._screen

    @property
    def x(self) -> XQueries:
        with self._lock:
            if self._xq is None:
                from computer_env.desktop.server.x11.windows import XQueries

                self._xq = XQueries(self.config.display)
            return self._xq

    @property
    def damage(self) -> DamageWatcher | None:
        """The screen's damage watcher; None without DAMAGE (settling falls back to screenshots)."""
        with self._lock:
            if self._damage is not None and not self._damage.alive:
                self._damage, self._damage_tried = None, False  # the display went away
            if not self._damage_tried:
                from computer_env.desktop.server.screen.damage import (
                    DamageUnavailable,
                    DamageWatcher,
                )

                self._damage_tried = True
                try:
                    self._damage = DamageWatcher(self.config.display)
                except DamageUnavailable as exc:
                    logger.warning("settling falls back to screenshots: %s", exc)
            return self._damage

    def input_done(self, *, start: bool = True) -> None:
        """Input was just delivered (or a command that may draw ran): the settle grace period
        counts from now. ``start=False``: only when the damage watcher already runs."""
        watcher = self.damage if start else self._damage
        if watcher is not None:
            watcher.input_done()

    @property
    def actions(self) -> ActionInterpreter:
        with self._lock:
            if self._actions is None:
                from computer_env.desktop.server.input.actions import ActionInterpreter

                self._actions = ActionInterpreter(self.procs, cwd=self.config.home)
            return self._actions

    @property
    def recorder(self) -> Recorder:
        with self._lock:
            if self._recorder is None:
                from computer_env.desktop.server.screen.recording import Recorder

                path = self.config.recording_path or Path("/tmp/desktop-recording.mp4")
                self._recorder = Recorder(self.own, self.config.display, path)
            return self._recorder

    def close(self) -> None:
        """Stop the interpreter, the recording and every child process."""
        with self._lock:
            actions, recorder, screen, xq = self._actions, self._recorder, self._screen, self._xq
            damage, self._damage = self._damage, None
        if damage is not None:
            damage.close()
        if self.verifier is not None:
            self.verifier.close()
        if self.xwatch is not None:
            self.xwatch.close()
        if recorder is not None:
            recorder.abort()
        if actions is not None:
            actions.close()
        if screen is not None:
            screen.close()
        if xq is not None:
            xq.close()
        self.procs.close()
        self.own.close()


def state() -> ServerState:
    """The :class:`ServerState` of the app serving the current request."""
    from flask import current_app

    return current_app.extensions["desktop_server"]
