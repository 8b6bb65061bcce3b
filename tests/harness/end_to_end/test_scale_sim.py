"""Invariants of the scale simulation (scripts/simulate_scale.py) with fixed seeds."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "simulate_scale.py"


@pytest.fixture(scope="module")
def sim() -> ModuleType:
    spec = importlib.util.spec_from_file_location("simulate_scale", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["simulate_scale"] = module
    spec.loader.exec_module(module)
    return module


def test_task_durations_look_like_osworld(sim: ModuleType) -> None:
    tasks = sim.make_tasks(seed=1)
    minutes = sorted(t.base_duration(2.5) / 60 for t in tasks)
    assert len(tasks) == 369
    assert {t.domain for t in tasks} == set(sim.DOMAINS)
    assert all(5 <= t.steps <= 100 for t in tasks)
    assert 2 <= statistics.median(minutes) <= 8
    assert minutes[-1] <= 32  # long tail up to ~30 min (setup included)
    assert sum(2 <= m <= 8 for m in minutes) / len(minutes) > 0.6


@pytest.mark.parametrize("provider", ["docker-kvm", "docker-kvm+spare", "docker-tcg", "local"])
def test_makespan_never_beats_the_ideal(sim: ModuleType, provider: str) -> None:
    tasks = sim.make_tasks(seed=3)
    for schedule in sim.SCHEDULES:
        res = sim.simulate(
            tasks,
            workers=16,
            endpoints=2,
            schedule=schedule,
            provider=sim.PROVIDERS[provider],
            model=sim.Model(),
            seed=3,
        )
        assert res.makespan >= res.ideal and res.makespan >= res.longest
        assert 0 < res.efficiency <= 1


def test_longest_first_beats_random_order_on_average(sim: ModuleType) -> None:
    spans: dict[str, list[float]] = {"load": [], "longest-first": []}
    for seed in range(5):
        tasks = sim.make_tasks(seed=seed)
        for schedule in spans:
            res = sim.simulate(
                tasks,
                workers=32,
                endpoints=4,
                schedule=schedule,
                provider=sim.PROVIDERS["docker-kvm"],
                model=sim.Model(),
                seed=seed,
            )
            spans[schedule].append(res.makespan)
    assert statistics.mean(spans["longest-first"]) <= statistics.mean(spans["load"])


def test_same_seed_same_result_and_endpoints_matter(sim: ModuleType) -> None:
    tasks = sim.make_tasks(seed=5)
    kw = dict(
        workers=32,
        schedule="longest-first",
        provider=sim.PROVIDERS["docker-kvm"],
        model=sim.Model(saturation=4),
        seed=5,
    )
    one = sim.simulate(tasks, endpoints=1, **kw)
    assert sim.simulate(tasks, endpoints=1, **kw).makespan == one.makespan
    four = sim.simulate(tasks, endpoints=4, **kw)
    assert four.makespan < one.makespan  # one saturated endpoint is the bottleneck
    spare = sim.simulate(
        tasks, endpoints=4, **{**kw, "provider": sim.PROVIDERS["docker-kvm+spare"]}
    )
    assert spare.makespan < four.makespan  # the pre-warmed spare hides the 25 s boot


def test_cli_prints_a_table(sim: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert sim.main(["--workers", "8", "--endpoints", "1", "--reps", "1"]) == 0
    out = capsys.readouterr().out
    assert "longest-first" in out and "ideal" in out and "docker-kvm+spare" in out
