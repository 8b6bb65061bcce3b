"""GameComputerEnv on the real RealtimeGym games, plus cases and score normalisation.

The end-to-end tests need RealtimeGym (installed from its git repository); without it they are
skipped with the reason :func:`realtimegym_available` gives. Everything else always runs.
"""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image, ImageChops

from computer_env.base import KeyPress
from computer_env.errors import ConfigurationError
from computer_env.realtimegym import (
    GAMES,
    PANEL_HEIGHT,
    GameCase,
    GameComputerEnv,
    ReferencePlayer,
    all_cases,
    normalize_score,
    realtimegym_available,
)
from computer_env.realtimegym.backend import _remove_empty_tree, dir_lock

log = logging.getLogger(__name__)
AVAILABLE, REASON = realtimegym_available()
needs_realtimegym = pytest.mark.skipif(not AVAILABLE, reason=REASON)
FRAME_SIZES = {"freeway": (540 + 270, 600), "snake": (24 + 384 + 270, 384 + 24)}
"""Board plus the side column (and number margins); Overcooked's depends on the layout."""


def test_all_cases_ids_and_filters() -> None:
    cases = all_cases()
    assert len(cases) == 2 * 3 * 8 + 3  # Overcooked's seeds are one game: collected once
    ids = [c.case_id for c in cases]
    assert len(set(ids)) == len(ids)
    assert "freeway/H/seed3" in ids and "overcooked/E/seed0" in ids and "snake/M/seed7" in ids
    assert "overcooked/E/seed1" not in ids
    some = all_cases(games=["Snake", "overcooked"], loads=["E", "H"], seeds=[5, 0])
    assert [c.case_id for c in some] == [
        "snake/E/seed0",
        "snake/E/seed5",
        "snake/H/seed0",
        "snake/H/seed5",
        "overcooked/E/seed0",
        "overcooked/H/seed0",
    ]  # Overcooked: one seed
    assert GameCase("freeway", "H", 3).case_id == "freeway/H/seed3"
    with pytest.raises(ValueError):
        all_cases(games=["pacman"])
    with pytest.raises(ValueError):
        all_cases(loads=["X"])
    with pytest.raises(ValueError):
        GameCase("snake", "E", 8)


def test_package_imports_without_realtimegym() -> None:
    code = (
        "import sys; sys.modules['realtimegym'] = None\n"
        "import computer_env.realtimegym as m\n"
        "ok, reason = m.realtimegym_available()\n"
        "assert not ok and 'realtimegym' in reason and 'git repository' in reason, reason\n"
        "try:\n    m.GameComputerEnv('snake', 'E', 0)\n"
        "except Exception as e:\n    print(type(e).__name__, e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ConfigurationError RealtimeGym is not usable")
    assert "make setup" in out.stdout


def test_unavailable_reason_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "realtimegym", None)  # as on a machine without it
    ok, reason = realtimegym_available()
    assert not ok and "'realtimegym'" in reason
    with pytest.raises(ConfigurationError, match="not usable"):
        GameComputerEnv("freeway", "E", 0)


def _assert_real_frame(env: GameComputerEnv) -> None:
    obs = env.observe()
    image = Image.open(io.BytesIO(obs.image)).convert("RGB")
    assert image.size == (obs.width, obs.height)
    game_h = obs.height - PANEL_HEIGHT
    if env.game in FRAME_SIZES:
        assert (obs.width, game_h) == FRAME_SIZES[env.game]
    frame = image.crop((0, 0, obs.width, game_h))
    colours = frame.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 20  # sprites, not a flat fill
    assert max(n for n, _ in colours) < 0.9 * obs.width * game_h


def _play(case: GameCase, pacing: str) -> GameComputerEnv:
    # 0.5 s a turn: the reference player's own thinking stays well inside a turn even on a
    # loaded 2-core machine, but turns still pass on their own whenever it is slower.
    env = GameComputerEnv(
        case.game,
        case.load,
        case.seed,
        pacing=pacing,  # type: ignore[arg-type]
        turn_seconds=0.5,
    )
    player = ReferencePlayer(env)
    try:
        _assert_real_frame(env)
        while not env.done:
            env.step(KeyPress(key=player.next_key()))
            env.observe()
        env.finish("")
    finally:
        env.close()
    return env


# wall-clock pacing plays each game in real time (100 turns of 0.5 s): the end-to-end tier
END_TO_END = [pytest.param(c, "turn", id=f"{c.case_id}-turn") for c in all_cases(seeds=[0])] + [
    pytest.param(c, "wallclock", id=f"{c.case_id}-wallclock", marks=pytest.mark.e2e)
    for c in all_cases(loads=["M"], seeds=[0])
]


@needs_realtimegym
@pytest.mark.parametrize(("case", "pacing"), END_TO_END)
def test_reference_policy_end_to_end(
    case: GameCase, pacing: str, record_property: Callable[[str, object], None]
) -> None:
    env = _play(case, pacing)
    norm = normalize_score(case.game, case.load, case.seed, env.score)
    record_property("score", env.score)
    record_property("normalized", norm)
    record_property("default_turns", env.default_turns)
    log.info(
        "%s %s: score %s (normalised %.3f), %d turns, %d default",
        case.case_id,
        pacing,
        env.score,
        norm,
        env.turns,
        env.default_turns,
    )
    assert env.done and 0 < env.turns <= 100 and 0.0 <= norm <= 1.0
    assert len(env.history) == env.turns
    assert norm > 0, "the reference policy should score on every game"
    if pacing == "turn":
        assert env.default_turns == 0 or case.game == "snake"  # snake: played out after a crash
    if case.game == "freeway":
        assert env.score > 0  # reached the top


@needs_realtimegym
def test_keys_move_the_real_games() -> None:
    env = GameComputerEnv("freeway", "E", 0)
    try:
        start = env.read_state(lambda raw: raw.pos)
        env.step(KeyPress(key="w"))
        assert env.read_state(lambda raw: raw.pos) in (start - 1, 9)  # up, or hit and sent back
        assert env.history[-1].action == "U"
    finally:
        env.close()
    oc = GameComputerEnv("overcooked", "E", 0)
    try:

        def chef(raw: object) -> tuple[int, int]:
            return tuple(raw.gym_env.base_env.state.players[0].position)  # type: ignore[attr-defined]

        x, y = oc.read_state(chef)
        oc.step(KeyPress(key="a"))  # the partner starts above, so move sideways first
        assert oc.history[-1].action == "L" and oc.read_state(chef) == (x - 1, y)
        oc.step(KeyPress(key="w"))  # the screen's up is the game's D (a row up on screen)
        assert oc.history[-1].action == "D" and oc.read_state(chef)[1] in (y - 1, y)
    finally:
        oc.close()


@needs_realtimegym
def test_overcooked_frame_shows_pots_and_partner_beside_the_kitchen() -> None:
    """Pot progress and the partner's last action are drawn outside the kitchen's cells."""
    from computer_env.realtimegym.draw import INFO_WIDTH, MARGIN, OC_CELL, draw_overcooked

    env = GameComputerEnv("overcooked", "E", 0)
    try:
        raw = env.read_state(lambda r: r)
        cols = len(raw.gym_env.base_mdp.terrain_mtx[0])
        still = draw_overcooked(raw, "S")
        moved = draw_overcooked(raw, "L")
        diff = ImageChops.difference(still, moved).getbbox()
        assert diff is not None and diff[0] >= cols * OC_CELL  # the side column only
        assert still.width == cols * OC_CELL + INFO_WIDTH
        player = ReferencePlayer(env)
        cooking = None
        while not env.done and cooking is None:
            env.step(KeyPress(key=player.next_key()))
            cooking = env.read_state(
                lambda r: next(
                    (
                        o
                        for o in r.gym_env.base_env.state.objects.values()
                        if o.name == "soup" and o.is_cooking
                    ),
                    None,
                )
            )
        assert cooking is not None, "the reference player never started a soup"
        from computer_env.realtimegym.draw import pot_status

        assert pot_status(cooking).startswith("cooking ")
        frame = env.read_state(lambda r: draw_overcooked(r, None))
        strip = frame.crop((0, 0, cols * OC_CELL, MARGIN))  # the bars above the pots
        assert (230, 150, 40) in {c for _, c in strip.getcolors(1 << 16)}
    finally:
        env.close()


@needs_realtimegym
@pytest.mark.parametrize("game", GAMES)
def test_reference_player_on_a_finished_game_answers_the_default(game: str) -> None:
    """A clock can end a game between the agent's look and its request: no crash, no step."""
    env = GameComputerEnv(game, "E", 0)
    try:
        player = ReferencePlayer(env)
        env.finish("")
        assert env.done
        assert player.next_action() == env.spec.default_action
        result = env.step(KeyPress(key=player.next_key()))
        assert result.done and "over" in result.output
    finally:
        env.close()


def test_the_vislogs_sweep_keeps_files_and_never_meets_another_workers_making(
    tmp_path: Path,
) -> None:
    """Overcooked's set-up makes ``./vislogs/...`` in the working directory, which the xdist
    workers share: the backend removes the tree when it is only empty folders and keeps any
    folder that holds a file; the making and the removal hold the folder's lock, so one
    worker's removal never meets another's making (a CI run failed on that:
    FileNotFoundError). Two threads stand for the two workers: each takes the lock on a
    descriptor of its own, as two processes do."""
    root = tmp_path / "vislogs"
    (root / "a" / "b").mkdir(parents=True)
    (root / "kept").mkdir()
    (root / "kept" / "frame.png").write_bytes(b"x")
    _remove_empty_tree(root)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "kept",
        "kept/frame.png",
    ]
    (root / "kept" / "frame.png").unlink()
    _remove_empty_tree(root)
    assert not root.exists()
    _remove_empty_tree(root)  # gone already: nothing to do

    errors: list[BaseException] = []

    def churn() -> None:
        try:
            for _ in range(300):
                with dir_lock(tmp_path):
                    (root / "overcooked-vislogs" / "run").mkdir(parents=True, exist_ok=True)
                with dir_lock(tmp_path):
                    _remove_empty_tree(root)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    workers = [threading.Thread(target=churn) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert errors == []
