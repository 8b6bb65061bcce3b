"""The OSWorld suite through ``--provider docker`` with the locally built guest-server image:
two xdist workers, each with its own container (on a network of its own) on Docker-assigned
ports; nothing left after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.harness.helpers.dockerd import docker_client  # noqa: F401 (fixture)
from tests.harness.helpers.suite import run_suite

pytestmark = [pytest.mark.docker, pytest.mark.desktop]


def test_smoke_suite_runs_on_docker_desktops(tmp_path: Path, docker_client: Any) -> None:  # noqa: F811
    run = run_suite(
        tmp_path, "dock", "-m", "smoke", "--provider", "docker", "-n", "2", timeout=1200
    )
    assert run.rc == 0, run.output[-4000:]
    results = run.results()
    assert len(results) >= 4
    assert all(r["outcome"] == "passed" for r in results.values()), results
    assert {r["versions"]["provider"] for r in results.values()} == {"docker"}
    assert run.summary["scored"] == len(results) and run.summary["unscored"] == 0
    # every container of the run is gone (labelled with the run id)
    left = docker_client.containers.list(
        all=True, filters={"label": "holo-bench.run=dock"}, ignore_removed=True
    )
    assert left == [], [c.name for c in left]
    nets = docker_client.networks.list(filters={"label": "holo-bench.run=dock"})
    assert nets == [], [n.name for n in nets]  # nor any desktop's own network
