"""RealtimeGym games as pytest cases: game x load (E/M/H) x seed (0-7), ids like freeway/H/seed3.

The agent plays through the screen (rendered frame + control panel). Narrow with --games,
--loads, --seeds; choose --pacing turn|realtime. Every case skips with one clear reason when
RealtimeGym is not installed.
"""


def test_realtimegym(game_run):
    game_run.run()
