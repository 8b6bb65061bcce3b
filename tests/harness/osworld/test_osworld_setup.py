"""Setup steps run by OSWorld's own SetupController (through the desktop's gateway) against a
real local desktop (sandboxed Xvfb + guest server), real loopback HTTP servers for downloads and
pages, and a real Chromium for the tab steps; what OSWorld's controller only logs is a
SetupError here."""

from __future__ import annotations

import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.base import DesktopHandle
from computer_env.errors import SetupError, VMUnreachable
from computer_env.osworld import SetupUnsupported, TaskContext, default_vars, prefetch
from computer_env.osworld.catalog.download import cache_path
from computer_env.osworld.catalog.tasks import parse_task
from computer_env.osworld.prepare.setup import apply_proxy
from computer_env.osworld.prepare.setup import run_setup_in_process as run_setup
from computer_env.osworld.scoring.in_process import evaluate_in_process as evaluate
from tests.harness.helpers.localdesk import local_desktop
from tests.harness.helpers.polling import wait_for

pytestmark = [
    pytest.mark.desktop,
    pytest.mark.skipif(
        os.geteuid() != 0 or not shutil.which("bwrap"),
        reason="the local sandbox needs root and bubblewrap",
    ),
]


class _Server:
    """A static file server on a loopback address that counts requests per path."""

    def __init__(self, root: Path, host: str = "127.0.0.1") -> None:
        self.root, self.hits = root, dict[str, int]()
        owner = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a: Any, **kw: Any) -> None:
                super().__init__(*a, directory=str(owner.root), **kw)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.startswith("http://"):  # asked as a forward proxy
                    self.path = "/" + self.path.split("/", 3)[3]
                owner.hits[self.path] = owner.hits.get(self.path, 0) + 1
                super().do_GET()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.httpd.server_address[1]}"
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def desktop() -> Iterator[Any]:
    with local_desktop(width=1280, height=720) as provider:
        yield provider


@pytest.fixture
def ctx(desktop: Any, tmp_path: Path) -> TaskContext:
    handle: DesktopHandle = desktop.handle
    client = DesktopClient.from_handle(handle)
    return TaskContext(
        client=client,
        handle=handle,
        cache_dir=tmp_path / "cache",
        vars=default_vars((1280, 720)),
        screen=(1280, 720),
    )


@pytest.fixture
def www(tmp_path: Path, ctx: TaskContext) -> Iterator[_Server]:
    """A download server on a loopback address. Task downloads must come from public hosts;
    the hosts of the context's asset URLs are the allowed exception, so it is named as the
    GUEST_ASSET_URL (not ASSET_URL: downloads from it are cached like any public file)."""
    root = tmp_path / "www"
    root.mkdir()
    server = _Server(root, host="127.0.0.2")
    ctx.vars["GUEST_ASSET_URL"] = server.url
    yield server
    server.close()


def sh(ctx: TaskContext, command: str) -> str:
    res = ctx.client.execute(command, shell=True)
    return res.output


def test_download_is_cached_on_the_host_and_uploaded(ctx: TaskContext, www: _Server) -> None:
    (www.root / "data.bin").write_bytes(b"\x00\x01payload\xff")
    step = {
        "type": "download",
        "parameters": {"files": [{"url": f"{www.url}/data.bin", "path": "/tmp/dl/data.bin"}]},
    }
    report = run_setup([step], ctx)
    assert report.steps[0].type == "download" and report.steps[0].seconds >= 0
    assert ctx.client.read_file("/tmp/dl/data.bin") == b"\x00\x01payload\xff"
    assert cache_path(ctx.download_cache_dir, f"{www.url}/data.bin").is_file()
    run_setup([step], ctx)
    assert www.hits["/data.bin"] == 1  # the second run came from the cache


def test_asset_server_downloads_bypass_the_cache(ctx: TaskContext, tmp_path: Path) -> None:
    root = tmp_path / "assets"
    root.mkdir()
    (root / "in.txt").write_text("asset\n")
    assets = _Server(root)
    try:
        ctx.vars["ASSET_URL"] = assets.url
        step = {
            "type": "download",
            "parameters": {"files": [{"url": "{ASSET_URL}/in.txt", "path": "/tmp/asset-in.txt"}]},
        }
        run_setup([step], ctx)
        run_setup([step], ctx)  # OSWorld's controller reuses its per-task copy
        assert ctx.client.read_file("/tmp/asset-in.txt") == b"asset\n"
        assert assets.hits["/in.txt"] == 1
        other = TaskContext(
            client=ctx.client,
            handle=ctx.handle,
            cache_dir=ctx.cache_dir,
            vars=dict(ctx.vars),
            screen=ctx.screen,
            task_id="another",
        )
        run_setup([step], other)  # another task fetches it again: never in the shared cache
        assert assets.hits["/in.txt"] == 2
        assert not any(p.is_file() for p in ctx.download_cache_dir.rglob("*"))
    finally:
        assets.close()


def test_failed_download_names_step_index_and_type(ctx: TaskContext, www: _Server) -> None:
    steps = [
        {"type": "execute", "parameters": {"command": ["true"]}},
        {
            "type": "download",
            "parameters": {
                "files": [{"url": f"{www.url}/missing.bin", "path": "/tmp/missing.bin"}]
            },
        },
    ]
    with pytest.raises(SetupError, match=r"config step 1 \(download\) failed"):
        run_setup(steps, ctx)


def test_prefetch_fills_the_cache_and_cli(ctx: TaskContext, www: _Server, tmp_path: Path) -> None:
    """``prefetch`` on a "machine with internet" (a public-looking host name, served by a local
    HTTP server acting as the proxy) fills the shared cache with the setup downloads AND the
    evaluator's cloud_file; the run then needs no network: setup and OSWorld's cloud_file getter
    are served from the cache."""
    public = "http://files.holo-bench.test"  # task files may only name public hosts
    (www.root / "a.txt").write_text("A")
    (www.root / "b.txt").write_text("B")
    tasks_root = tmp_path / "evaluation_examples"
    (www.root / "gold.txt").write_text("A")
    (tasks_root / "examples" / "demo").mkdir(parents=True)
    task: dict[str, Any] = {
        "id": "t1",
        "instruction": "x",
        "evaluator": {
            "func": "compare_text_file",
            "result": {"type": "vm_file", "path": "/tmp/pf/a.txt", "dest": "a.txt"},
            "expected": {"type": "cloud_file", "path": f"{public}/gold.txt", "dest": "gold.txt"},
        },
        "config": [
            {
                "type": "download",
                "parameters": {
                    "files": [
                        {"url": f"{public}/a.txt", "path": "/tmp/pf/a.txt"},
                        {"url": f"{public}/b.txt", "path": "/tmp/pf/b.txt"},
                    ]
                },
            }
        ],
    }
    (tasks_root / "examples" / "demo" / "t1.json").write_text(json.dumps(task))
    (tasks_root / "test_all.json").write_text(json.dumps({"demo": ["t1"]}))
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[3]),
        "HTTP_PROXY": www.url,
        "http_proxy": www.url,
        "NO_PROXY": "",
        "no_proxy": "",
    }
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "computer_env.osworld",
            "prefetch",
            "--osworld-root",
            str(tasks_root),
            "--task-list",
            "test_all",
            "--cache",
            str(ctx.cache_dir),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "[3/3]" in out.stdout and "3 fetched" in out.stdout  # setup files + the gold file
    assert www.hits == {"/a.txt": 1, "/b.txt": 1, "/gold.txt": 1}
    result = prefetch([parse_task(task, domain="demo")], ctx.download_cache_dir)
    assert result.cached == 3 and result.fetched == 0
    www.close()  # from here on only the cache can serve the files (an offline machine)
    run_setup(task["config"], ctx)
    assert ctx.client.read_file("/tmp/pf/b.txt") == b"B"
    res = evaluate(parse_task(task, domain="demo"), ctx)  # OSWorld's cloud_file, from the cache
    assert res.score == 1.0, res.detail


def test_upload_execute_command_until_and_stdout(ctx: TaskContext, tmp_path: Path) -> None:
    (ctx.task_cache_dir / "local.txt").write_text("from the host")  # sources: the task's folder
    steps = [
        {
            "type": "upload_file",
            "parameters": {"files": [{"local_path": "local.txt", "path": "/tmp/up/local.txt"}]},
        },
        {
            "type": "execute",
            "parameters": {
                "command": "cat /tmp/up/local.txt; echo err >&2",
                "shell": True,
                "stdout": "out.txt",
                "stderr": "err.txt",
            },
        },
        {
            "type": "launch",
            "parameters": {"command": "sleep 1; touch /tmp/ready-flag", "shell": True},
        },
        {
            "type": "command",
            "parameters": {
                "command": ["test", "-f", "/tmp/ready-flag"],
                "until": {"returncode": 0},
            },
        },
        {
            "type": "execute",
            "parameters": {
                "command": [
                    "python",
                    "-c",
                    "open('/tmp/half.txt','w').write('{SCREEN_WIDTH_HALF}')",
                ]
            },
        },
        {"type": "sleep", "parameters": {"seconds": 0.1}},
    ]
    report = run_setup(steps, ctx)
    assert [s.type for s in report.steps] == [s["type"] for s in steps]
    assert (ctx.task_cache_dir / "out.txt").read_text() == "from the host"
    assert (ctx.task_cache_dir / "err.txt").read_text().strip() == "err"
    assert report.steps[3].seconds >= 0.3  # it waited for the launched program
    assert ctx.client.read_file("/tmp/half.txt") == b"640"


def test_windows_launch_activate_close_and_open(ctx: TaskContext) -> None:
    run_setup([{"type": "launch", "parameters": {"command": ["xterm", "-T", "setup-term"]}}], ctx)
    wait_for(lambda: "setup-term" in sh(ctx, "wmctrl -l"), "the xterm window")
    run_setup([{"type": "activate_window", "parameters": {"window_name": "setup-term"}}], ctx)
    active = sh(ctx, "xdotool getactivewindow getwindowname")
    assert "setup-term" in active
    missing = {"type": "activate_window", "parameters": {"window_name": "no-such-window"}}
    with pytest.raises(SetupError, match="no-such-window not found"):
        run_setup([missing], ctx)  # OSWorld's controller would only log it
    report = run_setup([missing], ctx, phase="postconfig")  # after the agent: as OSWorld
    assert "not found" in (report.steps[0].problem or "")
    with pytest.raises(SetupError, match="exited 3"):
        run_setup([{"type": "execute", "parameters": {"command": "exit 3", "shell": True}}], ctx)
    run_setup([{"type": "close_window", "parameters": {"window_name": "setup-term"}}], ctx)
    wait_for(lambda: "setup-term" not in sh(ctx, "wmctrl -l"), "the xterm to close")

    ctx.client.upload_file("/tmp/notes-open.txt", b"hello")
    run_setup([{"type": "open", "parameters": {"path": "/tmp/notes-open.txt"}}], ctx)
    assert "notes-open.txt" in sh(ctx, "wmctrl -l")
    sh(ctx, "wmctrl -c notes-open.txt")


def test_proxy_reaches_commands_and_browser_flags(ctx: TaskContext) -> None:
    ctx.proxy = "http://10.9.9.9:3128"
    fake = (
        '#!/bin/sh\necho "$@" > /tmp/fakechrome.args\necho "$http_proxy" >> /tmp/fakechrome.args\n'
    )
    ctx.client.upload_file("/tmp/fakebin/chromium", fake.encode())
    sh(ctx, "chmod +x /tmp/fakebin/chromium")
    run_setup(
        [
            {
                "type": "execute",
                "parameters": {"command": "echo $http_proxy $https_proxy > /tmp/p1", "shell": True},
            },
            {
                "type": "execute",
                "parameters": {"command": ["sh", "-c", "echo $HTTPS_PROXY > /tmp/p2"]},
            },
            {
                "type": "launch",
                "parameters": {"command": ["/tmp/fakebin/chromium", "--no-first-run"]},
            },
        ],
        ctx,
    )
    assert ctx.client.read_file("/tmp/p1") == b"http://10.9.9.9:3128 http://10.9.9.9:3128\n"
    assert ctx.client.read_file("/tmp/p2") == b"http://10.9.9.9:3128\n"
    args = wait_for(lambda: ctx.client.read_file("/tmp/fakechrome.args"), "the fake browser")
    assert args.decode().splitlines() == [
        "--no-first-run --proxy-server=http://10.9.9.9:3128",
        "http://10.9.9.9:3128",
    ]
    assert apply_proxy("sleep", {"seconds": 1}, "http://p:1") == {"seconds": 1}


def test_unsupported_step_is_refused_before_anything_runs(ctx: TaskContext) -> None:
    steps = [
        {
            "type": "execute",
            "parameters": {"command": "touch /tmp/should-not-exist", "shell": True},
        },
        {"type": "googledrive", "parameters": {"settings_file": "x", "operation": []}},
    ]
    with pytest.raises(SetupUnsupported) as info:
        run_setup(steps, ctx)
    assert info.value.step_type == "googledrive"
    assert ctx.client.read_file("/tmp/should-not-exist") is None


def test_unreachable_desktop_is_vm_unreachable(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    handle = DesktopHandle(url=f"http://127.0.0.1:{port}", token="t")
    ctx = TaskContext(
        client=DesktopClient(handle.url, "t", retries=1, timeout=2),
        handle=handle,
        cache_dir=tmp_path,
    )
    with pytest.raises(VMUnreachable):
        run_setup([{"type": "execute", "parameters": {"command": ["true"]}}], ctx)


@pytest.mark.skipif(not shutil.which("chromium"), reason="chromium is not installed")
def test_chrome_tabs_setup_and_getters(desktop: Any, ctx: TaskContext, tmp_path: Path) -> None:
    """chrome_open_tabs / chrome_close_tabs and the tab getters + URL metrics on real Chromium,
    pages served by the host to the sandbox (through the guest-visible host address)."""
    root = tmp_path / "pages"
    root.mkdir()
    for name in ("one", "two", "three"):
        (root / f"{name}.html").write_text(f"<html><title>{name}</title><body>{name}</body></html>")
    pages = _Server(root, host=ctx.handle.guest_host)
    desktop.allow_host_port(pages.port)
    ctx.vars["GUEST_ASSET_URL"] = pages.url
    try:
        steps = [
            {
                "type": "launch",
                "parameters": {
                    "command": [
                        "chromium",
                        "--remote-debugging-port=1337",
                        "--no-first-run",
                        "--no-default-browser-check",
                        "--disable-background-networking",
                        "--disable-component-update",
                        "--disable-sync",
                        "--password-store=basic",
                        "--user-data-dir=/tmp/chromium-task",
                    ]
                },
            },
            {
                "type": "launch",
                "parameters": {
                    "command": [  # OSWorld's layout: socat to 9222
                        "socat",
                        "tcp-listen:9222,fork",
                        "tcp:localhost:1337",
                    ]
                },
            },
            {
                "type": "chrome_open_tabs",
                "parameters": {
                    "urls_to_open": [
                        "{GUEST_ASSET_URL}/one.html",
                        "{GUEST_ASSET_URL}/two.html",
                        "{GUEST_ASSET_URL}/three.html",
                    ]
                },
            },
            {
                "type": "chrome_close_tabs",
                "parameters": {"urls_to_close": ["{GUEST_ASSET_URL}/two.html"]},
            },
        ]
        run_setup(steps, ctx)
        task = parse_task(
            {
                "id": "tabs",
                "instruction": "x",
                "evaluator": {
                    "func": "is_expected_tabs",
                    "result": {"type": "open_tabs_info"},
                    "expected": {
                        "type": "rule",
                        "rules": {
                            "type": "url",
                            "urls": ["{GUEST_ASSET_URL}/one.html", "{GUEST_ASSET_URL}/three.html"],
                        },
                    },
                },
            },
            domain="demo",
        )
        res = evaluate(task, ctx)  # OSWorld's getter over CDP, through the gateway
        assert res.score == 1.0, res.detail
        assert "three" in (res.detail[0].result or "")
    finally:
        sh(ctx, "pkill -f chromium-task; pkill socat; true")
        pages.close()
