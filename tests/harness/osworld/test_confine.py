"""Nothing from a task file touches the host outside its cache folder (issue 11, item 4).

Pure checks plus the real loader and the setup-step check that runs before OSWorld's
controller sees a step, each refusing before any file is read or written or any URL fetched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from computer_env.osworld.catalog.tasks import SetupStep, load_tasks
from computer_env.osworld.context import TaskContext
from computer_env.osworld.errors import TaskLoadError
from computer_env.osworld.guards.confine import (
    ConfinementError,
    asset_hosts,
    check_download_url,
    check_task,
    confined,
)
from computer_env.osworld.prepare.setup import confine_step


@pytest.mark.parametrize(
    "rel", ["../x", "a/../../x", "/etc/passwd", "~/x", "", "a\x00b", "..", "C:\\x", "..\\x"]
)
def test_confined_refuses_paths_that_leave_the_folder(tmp_path: Path, rel: str) -> None:
    with pytest.raises(ConfinementError):
        confined(tmp_path, rel)


def test_confined_accepts_names_and_refuses_symlinks_out(tmp_path: Path) -> None:
    assert confined(tmp_path, "gold file.xlsx") == (tmp_path / "gold file.xlsx").resolve()
    assert confined(tmp_path, "sub/out.txt") == (tmp_path / "sub" / "out.txt").resolve()
    os.symlink("/etc", tmp_path / "link")
    with pytest.raises(ConfinementError, match="outside"):
        confined(tmp_path, "link/shadow")


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://[::1]/x",
        "http://10.0.0.5/x",
        "http://192.168.1.1/x",
        "http://169.254.169.254/latest/meta-data",
        "http://0.0.0.0/x",
        "file:///etc/shadow",
        "ftp://example.com/x",
        "http://user:pw@example.com/x",
        "http://[::ffff:127.0.0.1]/x",
        "http://172.16.0.1/x",
    ],
)
def test_downloads_from_host_local_or_private_addresses_are_refused(url: str) -> None:
    with pytest.raises(ConfinementError):
        check_download_url(url, resolve=False)


def test_public_and_asset_server_downloads_pass() -> None:
    check_download_url("https://93.184.216.34/file.xlsx", resolve=False)
    check_download_url("https://huggingface.co/datasets/x/resolve/main/a.xlsx", resolve=False)
    check_download_url("{ASSET_URL}/calc/roster.xlsx")
    hosts = asset_hosts({"ASSET_URL": "http://127.0.0.1:4567"})
    assert hosts == {"127.0.0.1:4567"}
    check_download_url("http://127.0.0.1:4567/calc/roster.xlsx", allow_hosts=hosts)
    with pytest.raises(ConfinementError):  # the same host on another port is not the server
        check_download_url("http://127.0.0.1:4568/calc/roster.xlsx", allow_hosts=hosts)


def _task(**evaluator: object) -> dict[str, object]:
    return {
        "id": "t1",
        "instruction": "do it",
        "config": [],
        "evaluator": {"func": "exact_match", **evaluator},
    }


@pytest.mark.parametrize(
    "task, field",
    [
        (
            _task(result={"type": "vm_file", "path": "/home/user/a.txt", "dest": "../../root/x"}),
            "evaluator.result.dest",
        ),
        (
            _task(result={"type": "vm_file", "path": "/home/user/a.txt", "dest": "/etc/cron.d/x"}),
            "evaluator.result.dest",
        ),
        (
            _task(
                result={
                    "type": "vm_file",
                    "multi": True,
                    "path": ["/a", "/b"],
                    "dest": ["ok.txt", "../bad.txt"],
                }
            ),
            "evaluator.result.dest[1]",
        ),
        (
            _task(expected={"type": "cache_file", "path": "../../../etc/shadow"}),
            "evaluator.expected.path",
        ),
        (
            _task(expected={"type": "cloud_file", "path": "http://127.0.0.1:22/x", "dest": "x"}),
            "evaluator.expected.path",
        ),
        (
            {
                **_task(),
                "config": [
                    {
                        "type": "upload_file",
                        "parameters": {
                            "files": [{"local_path": "/etc/shadow", "path": "/home/user/shadow"}]
                        },
                    }
                ],
            },
            "config[0].parameters.files[0].local_path",
        ),
        (
            {
                **_task(),
                "config": [
                    {
                        "type": "download",
                        "parameters": {
                            "files": [
                                {"url": "http://127.0.0.1:5000/secret", "path": "/home/user/x"}
                            ]
                        },
                    }
                ],
            },
            "config[0].parameters.files[0].url",
        ),
        (
            _task(
                postconfig=[
                    {
                        "type": "download",
                        "parameters": {"files": [{"url": "http://10.1.2.3/x", "path": "/tmp/x"}]},
                    }
                ]
            ),
            "evaluator.postconfig[0].parameters.files[0].url",
        ),
    ],
)
def test_check_task_names_the_offending_field(task: dict[str, object], field: str) -> None:
    with pytest.raises(ConfinementError) as info:
        check_task(task)
    assert str(info.value).startswith(field + ":"), info.value


def _root(tmp_path: Path, listing: dict[str, list[str]], tasks: dict[str, dict]) -> Path:
    root = tmp_path / "evaluation_examples"
    for case, data in tasks.items():
        domain, tid = case.split("/")
        (root / "examples" / domain).mkdir(parents=True, exist_ok=True)
        (root / "examples" / domain / f"{tid}.json").write_text(json.dumps({**data, "id": tid}))
    (root / "test_all.json").write_text(json.dumps(listing))
    return root


def test_the_loader_refuses_a_task_that_writes_outside_its_cache(tmp_path: Path) -> None:
    bad = _task(result={"type": "vm_file", "path": "/home/user/a", "dest": "../../etc/x"})
    root = _root(tmp_path, {"os": ["t1"]}, {"os/t1": bad})
    with pytest.raises(TaskLoadError) as info:
        load_tasks(root)
    assert "t1.json" in str(info.value) and "evaluator.result.dest" in str(info.value)


@pytest.mark.parametrize(
    "domain, tid", [("../../outside", "t1"), ("os", "../../t1"), ("/etc", "passwd")]
)
def test_task_list_domains_and_ids_cannot_leave_examples(
    tmp_path: Path, domain: str, tid: str
) -> None:
    root = _root(tmp_path, {domain: [tid]}, {"os/t1": _task()})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "t1.json").write_text(json.dumps({**_task(), "id": "t1"}))
    with pytest.raises(TaskLoadError, match="plain name"):
        load_tasks(root)


def test_real_osworld_and_builtin_tasks_all_pass(tmp_path: Path) -> None:
    from computer_env.osworld.catalog.tasks import load_builtin_tasks

    assert len(load_builtin_tasks()) >= 20
    shared = Path(__file__).resolve().parents[4] / "shared" / "osworld"
    if shared.is_dir():
        assert len(load_tasks(shared)) > 300


def _ctx(tmp_path: Path) -> TaskContext:
    """A context without a desktop: every check below refuses before the desktop is used."""
    return TaskContext(
        client=None,
        handle=None,
        cache_dir=tmp_path,  # type: ignore[arg-type]
        vars={"ASSET_URL": "http://127.0.0.1:4567"},
        task_id="t1",
    )


def _step(kind: str, **item: str) -> SetupStep:
    return SetupStep(type=kind, parameters={"files": [item]})


def test_setup_steps_refuse_ssrf_and_host_files_before_running(tmp_path: Path) -> None:
    ctx = _ctx(tmp_path)
    for url in ("http://127.0.0.1:22/", "file:///etc/shadow", "http://169.254.169.254/"):
        with pytest.raises(ConfinementError):
            confine_step(ctx, _step("download", url=url, path="/home/user/x"))
    confine_step(ctx, _step("download", url="http://127.0.0.1:4567/calc/a.xlsx", path="/x"))
    for local in ("/etc/shadow", "../../etc/shadow"):
        with pytest.raises(ConfinementError):
            confine_step(ctx, _step("upload_file", local_path=local, path="/home/user/s"))
    ok = _step("upload_file", local_path="notes.txt", path="/home/user/n")
    confine_step(ctx, ok)
    assert Path(ok.parameters["files"][0]["local_path"]).parent == ctx.task_cache_dir.resolve()
