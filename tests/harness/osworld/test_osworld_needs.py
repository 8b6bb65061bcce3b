"""Know before running: task needs read from OSWorld's real task files, checked against a real
local desktop; the ``plan`` command; cases skipped with ``needs: <what>`` (never rerun) and the
reference endpoint's no-solution skip, end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from computer_env.osworld.catalog.tasks import load_tasks, parse_task
from computer_env.osworld.planning.needs import python_imports, shell_programs, task_needs
from computer_env.osworld.planning.needs_check import (
    DesktopInventory,
    DesktopNeedsChecker,
    host_unmet,
    parse_probe,
    probe_script,
)
from computer_env.osworld.planning.plan import classify, make_plan
from tests.harness.helpers.suite import OSWORLD_DATA, ROOT, run_suite

DATA = OSWORLD_DATA
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason="OSWorld task data not present")


def _task(domain: str, prefix: str):
    (task,) = [t for t in load_tasks(DATA, "test_all", [domain]) if t.id.startswith(prefix)]
    return task


# -- reading needs from task JSON ----------------------------------------------------------------
def test_shell_programs_take_command_positions_only() -> None:
    script = (
        "export A=1\nTEXT=$(timeout 10 gsettings get a.b c 2>/dev/null | grep -oE '[0-9]+'); "
        "echo {CLIENT_PASSWORD} | sudo -S apt-get install -y jq && ./local.sh; "
        "cd /tmp && awk '{print $1; if (i<=NF) x}' f | sed 's/a/b/' > out"
    )
    assert shell_programs(script) == [
        "timeout",
        "gsettings",
        "grep",
        "sudo",
        "apt-get",
        "awk",
        "sed",
    ]
    assert shell_programs("history -c && echo > ~/.bash_history && sleep 3") == ["sleep"]


def test_python_imports() -> None:
    code = (
        "import pyautogui; import time\nfrom PIL import Image, ImageDraw; import os.path as p, sys"
    )
    assert python_imports(code) == ["pyautogui", "time", "PIL", "os", "sys"]


@needs_data
def test_needs_of_real_tasks() -> None:
    volume = task_needs(_task("os", "28cc3b7e"))  # the evaluator runs pulseaudio and pactl
    assert {"pulseaudio", "pactl", "python"} <= set(volume.programs)
    assert volume.python_modules == ["pyautogui", "time"] and not volume.network
    favs = task_needs(_task("os", "ec4e3f68"))
    assert favs.schemas == ["org.gnome.shell"]
    rename = task_needs(_task("os", "e0df059f"))  # `echo pw | sudo -S mkdir`
    assert "sudo" in rename.programs
    chrome = task_needs(_task("chrome", "bb5e4c0d"))
    assert {"google-chrome", "socat"} <= set(chrome.programs) and not chrome.network
    calc = task_needs(_task("libreoffice_calc", "0bf05a7d"))
    assert calc.files and all(u.startswith("https://") for u in calc.files)
    assert not calc.network
    spotify = task_needs(_task("os", "94d95f96"))
    assert spotify.network == ["the agent installs software from the internet"]
    # an evaluator's python import is what the agent must install, not a need
    embed = task_needs(_task("multi_apps", "69acbb55"))
    assert "InstructorEmbedding" not in embed.python_modules
    gdrive = [
        t
        for t in load_tasks(DATA, "test_all", ["multi_apps"])
        if any(s.type == "googledrive" for s in t.config)
    ]
    assert gdrive and all(task_needs(t).unsupported for t in gdrive)


@needs_data
def test_setup_that_installs_a_program_does_not_need_it() -> None:
    jq = task_needs(_task("chrome", "3299584d"))  # setup: sudo apt install jq; then uses jq
    assert "jq" not in jq.programs and any("jq" in n for n in jq.network)


# -- the desktop inventory -------------------------------------------------------------------
def test_probe_answer_is_parsed_and_unanswered_counts_missing() -> None:
    inv = DesktopInventory()
    script = probe_script(["bash", "nope"], [("python3", "json")], True)
    assert "command -v -- bash" in script and "gsettings list-schemas" in script
    parse_probe(
        "P:bash\nI:python3\nM:json\nS:org.gnome.shell\nS-END\n",
        inv,
        ["bash", "nope"],
        [("python3", "json"), ("python3", "absent")],
        True,
    )
    assert inv.programs == {"bash": True, "nope": False}
    assert inv.modules == {("python3", "json"): True, ("python3", "absent"): False}
    assert inv.schemas == {"org.gnome.shell"}
    task = parse_task(
        {
            "id": "x",
            "instruction": "do",
            "evaluator": {"func": "exact_match"},
            "config": [
                {"type": "execute", "parameters": {"command": ["/usr/bin/nope", "--flag"]}},
                {
                    "type": "execute",
                    "parameters": {
                        "command": "gsettings set org.gnome.desktop.x key 1",
                        "shell": True,
                    },
                },
            ],
        },
        domain="os",
    )
    needs = task_needs(task)
    inv.programs["/usr/bin/nope"] = False
    inv.programs["gsettings"] = True
    assert inv.missing(needs) == ["nope", "gsettings schema org.gnome.desktop.x"]

    # an answer without its last line is no answer; a broken program alone is an answer
    class Answers:
        """A desktop answering the probe with fixed text: a real one cannot be made to cut its
        answer short on demand."""

        def __init__(self, output: str) -> None:
            self.output, self.error = output, ""

        def execute(self, command, *, shell=False, timeout=None):
            return self

    from computer_env.errors import SetupError

    with pytest.raises(SetupError, match="did not answer"):
        DesktopNeedsChecker().missing(Answers("P:bash\n"), "d", needs)
    broken = DesktopNeedsChecker().missing(
        Answers("b:/usr/bin/nope\nb:gsettings\nS-END\nEND:needs-probe\n"), "d", needs
    )
    assert broken[0] == "nope (installed, but it does not work in this desktop)"
    # installed but not working (no systemd here): its own reason
    assert "bash -c 'timedatectl status'" in probe_script(["timedatectl"], [], False)
    parse_probe("b:timedatectl\n", inv, ["timedatectl"], [], False)
    tz = parse_task(
        {
            "id": "tz",
            "instruction": "UTC",
            "evaluator": {
                "func": "is_utc_0",
                "result": {
                    "type": "vm_command_line",
                    "command": "timedatectl status",
                    "shell": True,
                },
            },
        },
        domain="os",
    )
    assert inv.missing(task_needs(tz)) == [
        "timedatectl (installed, but it does not work in this desktop)"
    ]


def test_host_unmet_files_and_network(tmp_path: Path) -> None:
    task = parse_task(
        {
            "id": "x",
            "instruction": "Open https://example.org/page for me",
            "evaluator": {"func": "exact_match"},
            "config": [
                {
                    "type": "download",
                    "parameters": {
                        "files": [
                            {"url": "https://files.example/a.xlsx", "path": "/home/user/a.xlsx"}
                        ]
                    },
                }
            ],
        },
        domain="os",
    )
    needs = task_needs(task)
    assert needs.files == ["https://files.example/a.xlsx"]
    offline = host_unmet(needs, tmp_path, lambda: False)
    assert offline[0].startswith("cached file https://files.example/a.xlsx")
    assert offline[1].startswith(
        "the internet while it runs (the instruction points at example.org"
    )
    assert host_unmet(needs, tmp_path, lambda: True) == []
    from computer_env.osworld.catalog.download import cache_path

    path = cache_path(tmp_path, "https://files.example/a.xlsx")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x")
    assert len(host_unmet(needs, tmp_path, lambda: False)) == 1  # cached: only the network left


@pytest.mark.desktop
def test_a_real_desktop_reports_what_it_has() -> None:
    from computer_env.desktop.client import DesktopClient
    from computer_env.desktop.providers.local.provider import LocalSandboxProvider

    task = parse_task(
        {
            "id": "x",
            "instruction": "do",
            "evaluator": {"func": "exact_match"},
            "config": [
                {"type": "launch", "parameters": {"command": ["holo-no-such-program", "--x"]}},
                {
                    "type": "execute",
                    "parameters": {
                        "command": ["python3", "-c", "import json; import holo_no_such_module"]
                    },
                },
                {"type": "execute", "parameters": {"command": "ls /", "shell": True}},
            ],
        },
        domain="os",
    )
    needs = task_needs(task)
    with LocalSandboxProvider(width=1024, height=768) as provider:
        handle = provider.start()
        with DesktopClient.from_handle(handle) as client:
            checker = DesktopNeedsChecker()
            missing = checker.missing(client, handle.url, needs)
            assert missing == [
                "holo-no-such-program",
                "python module holo_no_such_module (for python3)",
            ]
            inv = checker.inventory(handle.url)
            assert inv.programs["ls"] and inv.programs["python3"]
            assert inv.modules[("python3", "json")]


# -- plan ------------------------------------------------------------------------------------
@needs_data
def test_plan_buckets_add_up(tmp_path: Path) -> None:
    tasks = load_tasks(DATA, "test_nogdrive")
    everything = DesktopInventory()

    def inventory_for(needs):  # a desktop that has everything but VS Code
        for n in needs:
            for p in n.programs:
                everything.programs[p] = p != "code"
            for m in n.python_modules:
                for interp in ("python", "python3"):
                    everything.modules[(interp, m)] = True
        everything.schemas = {s for n in needs for s in n.schemas}
        return everything

    offline = make_plan(tasks, inventory_for, download_cache=tmp_path, online=False).to_json()
    assert offline["total"] == 361
    assert (
        offline["runnable"]
        + offline["needs_cache"]
        + sum(offline["missing_app"].values())
        + sum(offline["unsupported"].values())
    ) == 361
    assert offline["missing_app"] == {"code": offline["missing_app"]["code"]}
    assert 15 <= offline["missing_app"]["code"] <= 30  # vs_code and multi_apps
    assert offline["runnable"] + offline["needs_cache"] >= 250
    assert list(offline["unsupported"]) == ["the internet while the task runs (offline here)"]
    assert sum(d["total"] for d in offline["by_domain"].values()) == 361
    online = make_plan(tasks, inventory_for, download_cache=tmp_path, online=True).to_json()
    assert online["needs_cache"] == 0 and online["unsupported"] == {}
    assert online["runnable"] >= 300
    task = tasks[0]
    verdict = classify(
        task, task_needs(task), DesktopInventory(), cached=lambda u: False, online=True
    )
    assert verdict.bucket == "missing_app"


@needs_data
@pytest.mark.desktop
def test_plan_command_prints_a_table_and_json(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "computer_env.osworld",
            "plan",
            "--osworld-root",
            str(DATA),
            "--task-list",
            "test_nogdrive",
            "--offline",
            "--cache-dir",
            str(tmp_path),
            "--json",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    data = json.loads(lines[-1])
    assert list(data) == [
        "total",
        "runnable",
        "needs_cache",
        "missing_app",
        "unsupported",
        "by_domain",
    ]
    assert data["total"] == 361 and set(data["by_domain"]) >= {"os", "chrome", "vs_code"}
    assert data["by_domain"]["os"]["total"] == 24
    assert lines[0].split()[:2] == ["domain", "total"]
    assert any(line.startswith("TOTAL") for line in lines)
    bad = subprocess.run(
        [sys.executable, "-m", "computer_env.osworld", "plan", "--osworld-root", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2 and "no examples/ directory" in bad.stderr


# -- end to end: skipped before the agent, never rerun -----------------------------------------
def _root_with(tmp_path: Path, tasks: dict[str, dict]) -> Path:
    root = tmp_path / "evaluation_examples"
    (root / "examples" / "os").mkdir(parents=True)
    (root / "test_all.json").write_text(json.dumps({"os": list(tasks)}))
    for tid, data in tasks.items():
        (root / "examples" / "os" / f"{tid}.json").write_text(json.dumps({"id": tid, **data}))
    return root


@pytest.mark.desktop
def test_unmet_needs_skip_before_setup_and_are_not_rerun(tmp_path: Path) -> None:
    root = _root_with(
        tmp_path,
        {  # without the check, the launch would be a setup failure
            "missing-app": {
                "instruction": "Use the missing program.",
                "config": [{"type": "launch", "parameters": {"command": ["holo-no-such-program"]}}],
                "evaluator": {
                    "func": "exact_match",
                    "result": {"type": "vm_command_line", "command": "echo"},
                    "expected": {"type": "rule", "rules": {"expected": "x"}},
                },
            },
            "no-solution": {
                "instruction": "A real task the reference endpoint cannot play.",
                "config": [],
                "evaluator": {
                    "func": "exact_match",
                    "result": {"type": "vm_command_line", "command": "echo"},
                    "expected": {"type": "rule", "rules": {"expected": "x"}},
                },
            },
        },
    )
    run = run_suite(
        tmp_path,
        "needs",
        "--osworld-root",
        str(root),
        "-n0",
        "--check-evaluators",
        "--infra-reruns",
        "2",
        "--infra-rerun-delay",
        "0",
    )
    assert run.rc == 0, run.output[-3000:]
    results = run.results()
    missing = results["os/missing-app"]
    assert missing["outcome"] == "skipped" and missing["attempts"] == 1
    assert missing["message"] == "needs: holo-no-such-program"
    assert "cannot run here: needs: holo-no-such-program" in run.output
    assert "RERUN" not in run.output
    # no oracle, no solution: the leak check passed and that is all that is said
    leak_only = results["os/no-solution"]
    assert leak_only["outcome"] == "skipped" and leak_only["score"] is None
    assert leak_only["message"].startswith("leak check only")
    # the reference endpoint (no --base-url) has nothing to play: skipped, not a DONE scored 0
    run = run_suite(tmp_path, "nosol", "--osworld-root", str(root), "-n0", "-k", "no-solution")
    assert run.rc == 0, run.output[-3000:]
    nosol = run.results()["os/no-solution"]
    assert nosol["outcome"] == "skipped" and "no solution for this task" in nosol["message"]
    assert nosol["steps"] == 0 and nosol["score"] is None
