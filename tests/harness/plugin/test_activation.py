"""The plugin's activation gate (``fixtures.run.activation``): loaded in every pytest session of
the environment by its ``pytest11`` entry point, the plugin acts only in a benchmark session.

Inner sessions run in this process (``pytester``), in a folder outside the checkout, so only the
entry point loads the plugin there. What the plugin would start on the host (the run's
ownership, the provider's preflight, the network sweep at the end, signal handlers) is replaced
by recorders: the tests see whether it was called, nothing is started.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fixtures.run.plugin as plugin
from fixtures.run.activation import PLUGIN, benchmark_session
from fixtures.run.run_start import WORKER_INPUT_KEY
from fixtures.run.stash import SETTINGS

pytest_plugins = ["pytester"]

PLAIN = """
def test_plain():
    assert True
"""

CASE = """
def test_osworld(osworld_case):
    osworld_case.run()
"""

WORKER_PROBE = """
import json, os


def test_worker_sees(request):
    config = request.config
    out = {"worker": hasattr(config, "workerinput"),
           "run": "holo_run" in getattr(config, "workerinput", {}),
           "plugin": config.pluginmanager.get_plugin("fixtures.run.plugin") is not None}
    with open(os.environ["WORKER_OUT"], "w") as f:
        json.dump(out, f)
"""

ACTIONS = ("start_run", "preflight", "end_of_run", "install_termination_handlers")
"""What an active plugin does to the host (names in ``fixtures.run.plugin``)."""


@pytest.fixture
def actions(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Calls of the plugin's host actions in the inner sessions (recorded, never run)."""
    calls = dict.fromkeys(ACTIONS, 0)

    def recorder(name: str) -> Callable[..., Any]:
        def record(*args: object, **kwargs: object) -> Any:
            calls[name] += 1
            return [] if name == "preflight" else None

        return record

    for name in ACTIONS:
        monkeypatch.setattr(plugin, name, recorder(name))
    return calls


class Seen:
    """An inner session's view of the plugin, taken at its end."""

    def __init__(self) -> None:
        self.state: dict[str, Any] = {}

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        pm = config.pluginmanager
        self.state = {
            "registered": pm.get_plugin(PLUGIN) is plugin,
            "from_entry_point": any(p is plugin for p, _ in pm.list_plugin_distinfo()),
            "active": benchmark_session(config),
            "settings": SETTINGS in config.stash,
            "added": [n for n in ("holo-report", "holo-unscored-lf") if pm.has_plugin(n)],
        }


def test_a_session_without_benchmarks_leaves_the_plugin_dormant(
    pytester: pytest.Pytester, actions: dict[str, int]
) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    seen = Seen()
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly", plugins=[seen])
    # no warning either (PYTEST_DONT_REWRITE in the packages' docstrings: fixtures/__init__.py)
    result.assert_outcomes(passed=1, warnings=0)
    assert seen.state == {
        "registered": True,
        "from_entry_point": True,  # no conftest names it here: the entry point loaded it
        "active": False,
        "settings": False,
        "added": [],
    }
    assert actions == dict.fromkeys(ACTIONS, 0)
    text = result.stdout.str()
    assert "holo-bench:" not in text and "reference endpoint" not in text, text
    assert "benchmark summary" not in text, text


def test_a_dormant_session_still_declares_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*holo-bench: computer-use benchmark suite*", "*--base-url*"])


def test_dormant_xdist_workers_get_no_run_and_stay_dormant(
    pytester: pytest.Pytester, actions: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = pytester.path / "worker.json"
    monkeypatch.setenv("WORKER_OUT", str(out))
    pytester.makepyfile(test_worker=WORKER_PROBE)
    result = pytester.runpytest("-n", "1", "-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert out.read_text() == '{"worker": true, "run": false, "plugin": true}'
    assert actions == dict.fromkeys(ACTIONS, 0)
    assert "holo-bench:" not in result.stdout.str()


def test_a_benchmark_case_in_a_dormant_session_says_how_to_run_it(
    pytester: pytest.Pytester, actions: dict[str, int]
) -> None:
    pytester.makepyfile(test_copy=CASE)
    result = pytester.runpytest("--co", "-p", "no:cacheprovider", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*test_osworld is a benchmark case (it takes 'osworld_task')*-p fixtures.run.plugin*"]
    )
    assert actions == dict.fromkeys(ACTIONS, 0)


def test_a_benchmark_suite_activates_the_plugin(
    pytester: pytest.Pytester, actions: dict[str, int]
) -> None:
    """A benchmark suite's folder (``tests/osworld`` below the rootdir) activates the plugin; it
    collects the built-in tasks as cases (collection only: nothing plays)."""
    suite = pytester.mkdir("tests") / "osworld"
    suite.mkdir()
    (suite / "test_osworld.py").write_text(CASE)
    seen = Seen()
    args = ("--co", "-q", "-p", "no:cacheprovider", "-p", "no:randomly")
    result = pytester.runpytest(
        "tests/osworld", *args, "--results-dir", str(pytester.path / "res"), plugins=[seen]
    )
    assert result.ret == 0, result.stdout.str()
    assert seen.state["active"] and seen.state["settings"], seen.state
    assert seen.state["added"] == ["holo-report", "holo-unscored-lf"]
    assert actions["start_run"] == 1
    assert any("test_osworld.py::test_osworld[" in line for line in result.outlines)


def test_asking_for_the_plugin_by_name_activates_it(
    pytester: pytest.Pytester, actions: dict[str, int]
) -> None:
    pytester.makepyfile(test_plain=PLAIN)
    seen = Seen()
    result = pytester.runpytest(
        "-p",
        PLUGIN,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--results-dir",
        str(pytester.path / "res"),
        plugins=[seen],
    )
    result.assert_outcomes(passed=1)
    assert seen.state["active"] and seen.state["registered"], seen.state
    assert seen.state["added"] == ["holo-report", "holo-unscored-lf"]
    assert actions["start_run"] == actions["preflight"] == actions["end_of_run"] == 1
    result.stdout.fnmatch_lines(["holo-bench: built-in tasks; provider local*"])


# -- the rule, on parsed command lines -------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "active"),
    [
        ((), True),  # no argument: the rootdir, which holds tests/osworld
        (("tests",), True),  # contains the suites
        (("tests/osworld",), True),
        (("tests/realtimegym/test_game.py::test_game",), True),
        (("tests/harness",), False),
        (("tests/harness", "tests/synthetic"), True),
        (("elsewhere",), False),
        (("-p", PLUGIN, "tests/harness"), True),
        ((f"-p{PLUGIN}", "elsewhere"), True),
    ],
)
def test_the_rule_reads_the_command_line(
    pytester: pytest.Pytester, args: tuple[str, ...], active: bool
) -> None:
    for name in ("osworld", "realtimegym", "synthetic", "harness"):
        (pytester.path / "tests" / name).mkdir(parents=True)
    (pytester.path / "elsewhere").mkdir()
    config = pytester.parseconfig(*args)
    assert benchmark_session(config) is active


def test_a_suite_must_exist_to_be_reached(pytester: pytest.Pytester) -> None:
    """A rootdir without benchmark suites (pytester's own, another project's) is not one."""
    assert benchmark_session(pytester.parseconfig()) is False
    assert benchmark_session(pytester.parseconfig(str(pytester.path.parent))) is False


def test_the_environment_can_ask_for_the_plugin(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", f"-p {PLUGIN}")
    assert benchmark_session(pytester.parseconfig()) is True
    monkeypatch.delenv("PYTEST_ADDOPTS")
    monkeypatch.setenv("PYTEST_PLUGINS", PLUGIN)
    assert benchmark_session(pytester.parseconfig()) is True


@pytest.mark.parametrize(
    ("worker_input", "active"), [({}, False), ({WORKER_INPUT_KEY: "{}"}, True)]
)
def test_a_worker_follows_its_controller(
    pytester: pytest.Pytester, worker_input: dict[str, str], active: bool
) -> None:
    """A worker acts when its controller handed it the run, whatever its command line says."""
    config = pytester.parseconfig("-p", PLUGIN)
    config.workerinput = {"workerid": "gw0", **worker_input}  # type: ignore[attr-defined]
    assert benchmark_session(config) is active


def test_the_decision_is_taken_once(pytester: pytest.Pytester) -> None:
    (pytester.path / "tests" / "osworld").mkdir(parents=True)
    config = pytester.parseconfig()
    assert benchmark_session(config) is True
    (pytester.path / "tests" / "osworld").rmdir()
    assert benchmark_session(config) is True


def test_the_root_conftest_and_the_entry_point_name_one_plugin() -> None:
    """The entry point is named as the module, so the root conftest's ``pytest_plugins`` (and
    ``-p fixtures.run.plugin``) find it registered: pluggy refuses one module under two names."""
    from importlib.metadata import entry_points

    (ep,) = [ep for ep in entry_points(group="pytest11") if ep.value == PLUGIN]
    assert ep.name == PLUGIN
    root = Path(__file__).resolve().parents[3]
    assert f'pytest_plugins = ["{PLUGIN}"]' in (root / "conftest.py").read_text()
