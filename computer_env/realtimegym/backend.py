"""Game backends: the one-turn-at-a-time game the env drives (RealtimeGym, or a test game).

RealtimeGym is imported lazily, only when a :class:`RealtimeGymBackend` is built, so the rest of
the package imports (and its tests run) without it.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import logging
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from PIL import Image

from computer_env.errors import ConfigurationError
from computer_env.realtimegym.games import MAX_TURNS, check_load, game_spec

log = logging.getLogger(__name__)
_STDOUT_LOCK = threading.Lock()

_REQUIRED_MODULES = ("realtimegym", "pygame", "numpy", "pandas", "scipy", "gym", "IPython",
                     "ipywidgets", "imageio", "tqdm")

_REQUIRED_ASSETS = (
    "render/assets/freeway/chicken.png",
    "render/assets/snake/apple.png",
    "overcooked_new/src/overcooked_ai_py/data/layouts/cc_easy.layout",
    "overcooked_new/src/overcooked_ai_py/data/graphics/chefs.png",
)


@runtime_checkable
class GameBackend(Protocol):
    """One episode of a turn-based game; the env decides when a turn happens."""

    turn: int
    """Turns played so far."""
    terminal: bool
    score: float
    raw: Any
    """The underlying game object (the reference player reads its state)."""

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
                f"RealtimeGym is not usable: importing {name!r} failed ({exc}). Install it from "
                "its git repository (wenyl22/RealtimeGym) with `pip install --no-deps -e <clone>` "
                "plus pygame numpy pandas scipy gym tqdm imageio ipython ipywidgets."
            )
    import realtimegym  # noqa: PLC0415 - imported above, so this is only a lookup

    root = Path(realtimegym.__file__).parent / "environments"
    for asset in _REQUIRED_ASSETS:
        if not (root / asset).is_file():
            return False, (
                f"RealtimeGym is installed without its game assets ({root / asset} is missing): "
                "a non-editable install leaves out its sprites and layouts; install it with "
                "`pip install --no-deps -e <clone of wenyl22/RealtimeGym>`."
            )
    return True, "RealtimeGym is installed"


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

        self.game, self.load, self.seed = spec.name, load, seed
        with self._quiet():
            # Overcooked's setup creates ./vislogs/... relative to the working directory.
            before = Path("vislogs").exists()
            self.raw, self.real_seed, self._renderer = realtimegym.make(
                spec.env_id(load), seed=seed, render=True)
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
        """Play one turn."""
        self.raw.step(action)
        self.turn = int(self.raw.game_turn)
        self.terminal = bool(self.raw.terminal) or self.turn >= MAX_TURNS

    def render(self) -> Image.Image:
        """The renderer's pygame surface as a PIL image."""
        import pygame  # noqa: PLC0415

        surface = self._renderer.render(self.raw)
        return Image.frombytes("RGB", surface.get_size(), pygame.image.tostring(surface, "RGB"))

    def close(self) -> None:
        """Remove the scratch directory."""
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)


def _remove_empty_tree(path: Path) -> None:
    """Remove ``path`` if it holds only empty directories."""
    for sub in sorted(path.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if sub.is_dir() and not any(sub.iterdir()):
            sub.rmdir()
    if path.is_dir() and not any(path.iterdir()):
        path.rmdir()


def make_realtimegym_backend(game: str, load: str, seed: int) -> GameBackend:
    """The default ``game_factory``."""
    return RealtimeGymBackend(game, load, seed)
