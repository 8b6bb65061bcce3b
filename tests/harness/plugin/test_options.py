"""The suite's command-line options: documented in ``pytest --help``, bad values refused with the
option named, environment twins, ``--samples`` and ``--live`` on real child suite runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.helpers.parsed_settings import settings_of
from tests.harness.helpers.polling import wait_for
from tests.harness.helpers.suite import (
    ROOT,
    first_smoke_tasks,
    kill_group,
    run_suite,
    start_suite,
    task_list_file,
)

ISSUE_OPTIONS = (
    "--provider",
    "--vm-url",
    "--base-url",
    "--model",
    "--api-key",
    "--serve",
    "--gpus",
    "--serve-arg",
    "--vm-proxy",
    "--net-gate",
    "--net-probe-url",
    "--net-wait",
    "--max-steps",
    "--temperature",
    "--prompt",
    "--image-budget",
    "--samples",
    "--results-dir",
    "--run",
    "--resume",
    "--pass-threshold",
    "--live",
)

SETTINGS_PROBE = """
import json, os
from fixtures.run.stash import SETTINGS


def test_dump_settings(request):
    s = request.config.stash[SETTINGS]
    out = {"vm_proxy": s.network.vm_proxy, "net_gate": s.network.gate,
           "osworld_root": str(s.tasks.osworld_root) if s.tasks.osworld_root else None,
           "provider": s.desktops.provider, "screen": list(s.desktops.screen),
           "samples": s.tasks.samples}
    with open(os.environ["SETTINGS_OUT"], "w") as f:
        json.dump(out, f)
"""


def _pytest(
    *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )


def _settings(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    """The plugin's ``Settings`` for these options/environment, from a real pytest process."""
    probe = tmp_path / "test_probe_settings.py"
    probe.write_text(SETTINGS_PROBE)
    out = tmp_path / "settings.json"
    proc = _pytest(
        str(probe),
        "-p",
        "fixtures.run.plugin",
        "-q",
        "--rootdir",
        str(tmp_path),
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
        "--results-dir",
        str(tmp_path / "results"),
        *args,
        cwd=tmp_path,
        env={"SETTINGS_OUT": str(out), **(env or {})},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return json.loads(out.read_text())


# -- help ------------------------------------------------------------------------------------
def test_help_documents_every_option_of_the_suite() -> None:
    proc = _pytest("--help")
    assert proc.returncode == 0, proc.stderr[-2000:]
    text = proc.stdout
    section = text[text.index("holo-bench: computer-use benchmark suite") :].split("\n\n", 1)[0]
    for option in ISSUE_OPTIONS:
        match = re.search(
            rf"^\s+{re.escape(option)}(?=[=\s])[^\n]*\n?(?:\s{{20,}}\S[^\n]*\n)*", section, re.M
        )
        assert match, f"{option} is not documented under the suite's options"
        described = " ".join(match.group(0).split()[1:])
        assert len(described) > 15, f"{option} has no real description: {match.group(0)!r}"
    for twin in (
        "HOLO_BASE_URLS",
        "HOLO_API_KEY",
        "HOLO_VM_PROXY",
        "HOLO_NET_GATE",
        "OSWORLD_ROOT",
    ):
        assert twin in section, f"the environment twin {twin} is not mentioned in --help"


# -- bad values ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("--screen", "12"), "--screen"),
        (("--screen", "0x600"), "--screen"),
        (("--pacing", "fast"), "--pacing"),
        (("--provider", "nope"), "--provider"),
        (("--provider", "remote"), "--vm-url"),
        (("--samples", "0"), "--samples"),
        (("--max-steps", "0"), "--max-steps"),
        (("--image-budget", "0"), "--image-budget"),
        (("--pass-threshold", "1.5"), "--pass-threshold"),
        (("--vm-proxy", "127.0.0.1:3128"), "--vm-proxy"),
        (("--net-wait", "-1"), "--net-wait"),
        (("--seeds", "a-b"), "--seeds"),
    ],
)
def test_bad_value_fails_naming_the_option(args: tuple[str, ...], option: str) -> None:
    """Through the suite's real option parser and ``Settings``, in process; that such an error
    stops a real run at start-up, before any task, is
    ``test_option_bounds.test_the_run_stops_at_start_up_with_the_usage_error``."""
    with pytest.raises(pytest.UsageError) as error:
        settings_of(*args)
    assert option in str(error.value), str(error.value)


def test_remote_provider_wants_a_vm_url_from_option_or_environment(tmp_path: Path) -> None:
    s = _settings(tmp_path, "--provider", "remote", env={"HOLO_VM_URLS": "http://10.0.0.9:5000"})
    assert s["provider"] == "remote"


# -- environment twins -----------------------------------------------------------------------
def test_environment_twins(tmp_path: Path) -> None:
    root = tmp_path / "osworld"
    root.mkdir()
    env = {
        "HOLO_VM_PROXY": "http://127.0.0.1:3128",
        "HOLO_NET_GATE": "1",
        "OSWORLD_ROOT": str(root),
    }
    s = _settings(tmp_path, env=env)
    assert s["vm_proxy"] == "http://127.0.0.1:3128"
    assert s["net_gate"] is True
    assert s["osworld_root"] == str(root.resolve())
    # the option wins over its twin
    s = _settings(tmp_path, "--vm-proxy", "http://127.0.0.1:9999", env=env)
    assert s["vm_proxy"] == "http://127.0.0.1:9999"
    assert _settings(tmp_path, env={"HOLO_NET_GATE": "0"})["net_gate"] is False
    assert _settings(tmp_path)["net_gate"] is False


def test_osworld_root_twin_selects_tasks_from_that_checkout(tmp_path: Path) -> None:
    """OSWORLD_ROOT alone points collection at another ``evaluation_examples`` tree (built here
    from two built-in task files)."""
    from computer_env.osworld.builtin import BUILTIN_ROOT

    tasks = first_smoke_tasks(2, exclude_domains=("chrome",))
    examples = tmp_path / "OSWorld" / "evaluation_examples"
    for domain, ids in tasks.items():
        (examples / "examples" / domain).mkdir(parents=True)
        for task_id in ids:
            src = BUILTIN_ROOT / "examples" / domain / f"{task_id}.json"
            (examples / "examples" / domain / src.name).write_text(src.read_text())
    (examples / "test_all.json").write_text(json.dumps(tasks))
    proc = _pytest(
        "tests/osworld",
        "--collect-only",
        "-q",
        "--results-dir",
        str(tmp_path),
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
        env={"OSWORLD_ROOT": str(tmp_path / "OSWorld")},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    collected = re.findall(r"test_osworld\[([^\]]+)\]", proc.stdout)
    assert sorted(collected) == sorted(f"{d}/{i}" for d, ids in tasks.items() for i in ids)


# -- samples and live output (real runs) -----------------------------------------------------
@pytest.mark.desktop
def test_samples_give_one_case_and_folder_per_sample_and_pass_at_k(tmp_path: Path) -> None:
    tasks = first_smoke_tasks(1, exclude_domains=("chrome",))
    ((domain, (task_id,)),) = tasks.items()
    run = run_suite(
        tmp_path,
        "samples",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "--samples",
        "2",
        "-n0",
        "--infra-reruns",
        "1",
        "--infra-rerun-delay",
        "0",
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
    )
    assert run.rc == 0, run.output[-3000:]
    for k in (0, 1):
        assert f"test_osworld[{domain}/{task_id}/sample-{k}]" in run.output
        folder = run.run_dir / "reference-policy" / domain / task_id / f"sample-{k}"
        result = json.loads((folder / "result.json").read_text())
        assert result["sample"] == k and result["outcome"] == "passed"
        assert (folder / "result.txt").is_file()
    summary = run.summary
    assert summary["samples"] == 2 and summary["cases"] == 1
    assert summary["pass_at_k"] == 1.0 and summary["mean_at_k"] == 1.0
    assert "pass@2" in run.output


@pytest.mark.desktop
@pytest.mark.parametrize(
    "capture", [pytest.param((), id="default-capture"), pytest.param(("-s",), id="no-capture")]
)
def test_live_prints_each_step_as_it_happens(tmp_path: Path, capture: tuple[str, ...]) -> None:
    from computer_env.osworld.builtin import load_solutions

    tasks = first_smoke_tasks(1, exclude_domains=("chrome",))
    ((_, (task_id,)),) = tasks.items()
    solution = load_solutions()[task_id]
    log = tmp_path / "child.log"
    # each model answer takes 1.5 s, so a step printed "as it happens" shows before the case ends
    child = start_suite(
        tmp_path,
        "live",
        "--task-list",
        str(task_list_file(tmp_path, tasks)),
        "-n0",
        "--live",
        "--reference-faults",
        "delay=1.5",
        *capture,
        "-o",
        f"cache_dir={tmp_path / 'pytest-cache'}",
        log=log,
    )
    try:
        wait_for(lambda: "step 0:" in log.read_text(), "the first live step line", 120)
        assert not list((tmp_path / "live").rglob("result.json")), "printed only at the end"
        assert child.wait(timeout=180) == 0, log.read_text()[-3000:]
    finally:
        kill_group(child)
    text = log.read_text()
    for index, step in enumerate(solution):
        line = next((ln for ln in text.splitlines() if f"step {index}:" in ln), None)
        assert line is not None, f"step {index} not printed:\n{text[-3000:]}"
        assert step["tool_call"]["tool_name"] in line  # the action
        assert re.search(r"\| model latency \d+\.\d\d s$", line), line  # labelled latency
        assert float(line.rsplit("latency", 1)[1].strip().rstrip("s")) >= 1.4
        assert f"thought: {step['thought']}" in text
    case = f"{next(iter(tasks))}/{task_id}"
    for phase in ("setup", "settle", "agent", "scoring"):  # said when each phase starts
        assert f"[{case}] {phase} starts" in text, text[-3000:]
    assert re.search(
        rf"^{re.escape(case)}  PASSED  score 1\.00  steps \d+  [\d.]+ s$", text, re.M
    ), text[-3000:]  # the case's result line
    assert "[progress 1/1] | passed 1, failed 0, unscored 0 | mean 100.0%" in text
