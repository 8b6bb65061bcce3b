"""Game backends: the one-turn-at-a-time game the env drives (RealtimeGym, or a test game).

RealtimeGym is imported lazily, only when a :class:`RealtimeGymBackend` is built, so the rest of
the package imports (and its tests run) without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import io
import logging
import os
import shutil
import sys
import tempfile
import threading
import types
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from computer_env.errors import ConfigurationError
from computer_env.realtimegym.draw import draw_freeway, draw_overcooked, draw_snake
from computer_env.realtimegym.games import MAX_TURNS, check_load, game_spec

log = logging.getLogger(__name__)
_STDOUT_LOCK = threading.Lock()

_REQUIRED_MODULES = (
    "realtimegym",
    "pygame",
    "numpy",
    "pandas",
    "scipy",
    "gym",
    "IPython",
    "ipywidgets",
    "imageio",
    "tqdm",
)

_REQUIRED_DATA = (
    "overcooked_new/src/overcooked_ai_py/data/layouts/cc_easy.layout",
    "overcooked_new/src/overcooked_ai_py/data/graphics/chefs.json",
)
"""Data files the games load (a non-editable install leaves them out). Sprites are not needed:
the suite draws the frames itself (:mod:`computer_env.realtimegym.draw`)."""


@runtime_checkable
class GameBackend(Protocol):
    """One episode of a turn-based game; the env decides when a turn happens."""

    turn: int
    """Turns played so far."""
    terminal: bool
    raw: Any
    """The underlying game object (the reference player reads its state)."""

    @property
    def score(self) -> float:
        """The episode's score so far."""

    def reset(self) -> None:
        """Start the episode."""

    def advance(self, action: str) -> None:
        """Play one turn with ``action`` (one of the game's action letters)."""

    def render(self) -> Image.Image:
        """The current frame."""


GameFactory = Callable[[str, str, int], GameBackend]
"""``(game, load, seed) -> GameBackend``; the env's ``game_factory`` hook."""


def realtimegym_available() -> tuple[bool, str]:
    """Whether RealtimeGym and the modules its games import can be loaded, and why not."""
    _quiet_sdl()
    for name in _REQUIRED_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - any import failure means "not usable"
            return False, (
                f"RealtimeGym is not usable: importing {name!r} failed ({exc}). `make setup` "
                "installs it from ../shared/realtimegym; elsewhere install it from its git "
                "repository (wenyl22/RealtimeGym) with `pip install --no-deps -e <clone>` plus "
                "`pip install -e '.[realtimegym]'`."
            )
    import realtimegym  # noqa: PLC0415 - imported above, so this is only a lookup

    root = Path(realtimegym.__file__).parent / "environments"
    for data in _REQUIRED_DATA:
        if not (root / data).is_file():
            return False, (
                f"RealtimeGym is installed without its game data ({root / data} is missing): "
                "a non-editable install leaves out its layouts; install it with "
                "`pip install --no-deps -e <copy of its source>` (`make setup` does)."
            )
    return True, "RealtimeGym is installed"


def _stand_in_overcooked_visualizer() -> None:
    """Let Overcooked import without its sprite sheets.

    RealtimeGym's Overcooked imports Overcooked-AI's ``StateVisualizer``, whose class body loads
    ``graphics/*.png``; a source snapshot without images cannot import it. The suite draws its
    own frames (and never stores Overcooked trajectories), so when the sheets are missing that
    module is replaced, in this process only, by one whose visualizer refuses to be built.
    """
    import realtimegym  # noqa: PLC0415

    name = (
        "realtimegym.environments.overcooked_new.src.overcooked_ai_py.visualization."
        "state_visualizer"
    )
    graphics = (
        Path(realtimegym.__file__).parent
        / "environments"
        / "overcooked_new"
        / "src"
        / "overcooked_ai_py"
        / "data"
        / "graphics"
        / "terrain.png"
    )
    if name in sys.modules or graphics.is_file():
        return
    module = types.ModuleType(name, "Stand-in: Overcooked-AI's sprite sheets are not installed")

    class StateVisualizer:  # noqa: D101 - mirrors the replaced class's name
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ConfigurationError(f"Overcooked-AI's StateVisualizer needs {graphics}")

    module.StateVisualizer = StateVisualizer  # type: ignore[attr-defined]
    sys.modules[name] = module


def _quiet_sdl() -> None:
    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
    os.environ.setdefault("SDL_AUDIODRIVER", "dummy")
    os.environ.setdefault("PYGAME_HIDE_SUPPORT_PROMPT", "1")


class RealtimeGymBackend:
    """A RealtimeGym game (``realtimegym.make(env_id, seed, render=True)``) as a backend."""

    def __init__(self, game: str, load: str, seed: int) -> None:
        _quiet_sdl()
        spec = game_spec(game)
        check_load(load)
        ok, reason = realtimegym_available()
        if not ok:
            raise ConfigurationError(reason)
        import realtimegym  # noqa: PLC0415 - optional dependency, imported lazily

        _stand_in_overcooked_visualizer()
        self.game, self.load, self.seed = spec.name, load, seed
        # Overcooked's set-up makes ./vislogs/... in the working directory, which the xdist
        # workers share: its making and its removal are one step between them
        with self._quiet(), dir_lock(Path(".")):
            before = Path("vislogs").exists()
            self.raw, self.real_seed, _ = realtimegym.make(
                spec.env_id(load), seed=seed, render=False
            )
            if not before and Path("vislogs").is_dir():
                _remove_empty_tree(Path("vislogs"))
        self._workdir: Path | None = None
        if hasattr(self.raw, "run_dir"):  # Overcooked: keep anything it writes out of the cwd
            self._workdir = Path(tempfile.mkdtemp(prefix="rtgym-"))
            weakref.finalize(self, shutil.rmtree, self._workdir, ignore_errors=True)
            self.raw.run_dir = self._workdir
        self.turn = 0
        self.terminal = False

    @staticmethod
    @contextlib.contextmanager
    def _quiet() -> Iterator[None]:
        """The game code prints progress lines; keep them off the harness's stdout.

        ``redirect_stdout`` swaps a process-wide object, so swaps are serialised by a lock.
        """
        with _STDOUT_LOCK, contextlib.redirect_stdout(io.StringIO()):
            yield

    @property
    def score(self) -> float:
        """The game's running reward (RealtimeGym's ``env.reward``)."""
        return float(self.raw.reward)

    def reset(self) -> None:
        """Reset the game (also seeds the global RNG some scripted partners use)."""
        import numpy as np  # noqa: PLC0415

        np.random.seed(self.real_seed)
        with self._quiet():
            self.raw.reset()
        self.turn = 0
        self.terminal = bool(self.raw.terminal)

    def advance(self, action: str) -> None:
        """Play one turn (a finished game is not stepped: RealtimeGym asserts on that)."""
        if self.terminal:
            raise RuntimeError(f"{self.game} is over; no turn can be played")
        self.raw.step(action)
        self.turn = int(self.raw.game_turn)
        self.terminal = bool(self.raw.terminal) or self.turn >= MAX_TURNS

    def render(self) -> Image.Image:
        """The current state drawn by :mod:`computer_env.realtimegym.draw`."""
        if self.game == "freeway":
            return draw_freeway(self.raw)
        if self.game == "snake":
            return draw_snake(self.raw)
        partner = self.raw.history[1]
        return draw_overcooked(self.raw, partner[-1] if partner else None)

    def close(self) -> None:
        """Remove the scratch directory."""
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


@contextlib.contextmanager
def dir_lock(folder: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``folder`` itself, between processes (each holder opens the
    folder anew, so threads of one process exclude each other too); no lock file is made."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _remove_empty_tree(path: Path) -> None:
    """Remove ``path`` if it holds only empty directories (deepest first); a directory that is
    gone or not empty is left as it is."""
    for dirpath, _dirs, _files in os.walk(path, topdown=False):  # walk errors: skipped
        with contextlib.suppress(OSError):  # gone, or not empty: rmdir removes only empty ones
            os.rmdir(dirpath)


def make_realtimegym_backend(game: str, load: str, seed: int) -> GameBackend:
    """The default ``game_factory``."""
    return RealtimeGymBackend(game, load, seed)
