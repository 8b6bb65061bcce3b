"""The run's description crosses from the controller to the xdist workers as one typed model
(``fixtures.run.run_start.RunDescription``): one JSON encoding in ``workerinput``, validated once
on the worker; a real child pytest run with a real xdist worker and a real attached endpoint."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fixtures.cases.models.endpoints import Endpoint
from fixtures.run.run_start import WORKER_INPUT_KEY, RunDescription
from holo_agent.reference import ReferenceEndpoint

PROBE = """
import json, os
from fixtures.run.stash import RUN


def test_dump_run(request, worker_state):
    config = request.config
    run = config.stash[RUN]
    out = {"worker": worker_state.worker_id, "type": type(run).__name__,
           "raw": config.workerinput["holo_run"], "name": run.name,
           "endpoints": [[type(e).__name__, e.url, e.model, e.kind]
                         for e in worker_state.endpoints],
           "run_dir": str(worker_state.run_dir)}
    with open(os.environ["RUN_OUT"], "w") as f:
        json.dump(out, f)
"""


@pytest.fixture
def endpoint() -> Iterator[ReferenceEndpoint]:
    ep = ReferenceEndpoint({}, model_name="holo-run-description")
    ep.start()
    yield ep
    ep.stop()


def test_worker_gets_the_run_description_encoded_once(
    tmp_path: Path, endpoint: ReferenceEndpoint
) -> None:
    probe = tmp_path / "test_probe_run.py"
    probe.write_text(PROBE)
    out = tmp_path / "run.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            str(probe),
            "-p",
            "fixtures.run.plugin",
            "-q",
            "-n",
            "1",
            "-p",
            "no:randomly",
            "--rootdir",
            str(tmp_path),
            "-o",
            f"cache_dir={tmp_path / 'pytest-cache'}",
            "--results-dir",
            str(tmp_path / "res"),
            "--run",
            "described",
            "--base-url",
            endpoint.url,
            "--model",
            "holo-run-description",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        start_new_session=True,
        env={**os.environ, "RUN_OUT": str(out)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    seen = json.loads(out.read_text())
    assert seen["worker"] == "gw0" and seen["type"] == "RunDescription"
    raw = json.loads(seen["raw"])  # one encoding: the endpoints are objects, not JSON strings
    assert raw["name"] == "described"
    assert raw["endpoints"] == [
        {"url": endpoint.url, "model": "holo-run-description", "kind": "attach"}
    ]
    assert seen["endpoints"] == [["Endpoint", endpoint.url, "holo-run-description", "attach"]]
    assert seen["run_dir"] == str(tmp_path / "res" / "described")


def test_run_description_round_trips_and_names_what_is_wrong() -> None:
    run = RunDescription(
        name="r1", endpoints=[Endpoint("http://h:1/v1", "m", "serve")], durations={"os/abc": 12.5}
    )
    back = RunDescription.from_worker_input({WORKER_INPUT_KEY: run.model_dump_json()})
    assert back == run and isinstance(back.endpoints[0], Endpoint)
    bad = json.dumps(
        {"name": "r1", "endpoints": [{"url": "http://h:1/v1", "model": "m", "kind": "rented"}]}
    )
    with pytest.raises(ValueError, match=r"(?s)workerinput\['holo_run'\].*endpoints\.0\.kind"):
        RunDescription.from_worker_input({WORKER_INPUT_KEY: bad})
    with pytest.raises(ValueError, match=r"workerinput\['holo_run'\]: expected"):
        RunDescription.from_worker_input({})
