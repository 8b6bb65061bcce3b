"""No answer within the desktop's reach: from inside a real local sandbox (as the agent's code
runs there) no task solution, oracle, synthesized example or verifier, none of the project's
tests, results or caches can be read, and the desktop still works. The Docker image gets the same
allow-list of code (``docker/build-image.sh``)."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from computer_env.desktop.client import DesktopClient
from computer_env.desktop.providers.local.bwrap import GUEST_SUBPACKAGES, guest_code, package_dir
from tests.harness.helpers.localdesk import guest_sh, local_desktop

PKG = package_dir()
ROOT = PKG.parent
HIDDEN_SUBPACKAGES = ("osworld", "synthetic", "realtimegym")
ANSWER_NAMES = (
    "synth-*.json",
    "solutions",
    "solutions_code",
    "oracles",
    "test_all.json",
    "test_smoke.json",
)
PROJECT_NAMES = (*ANSWER_NAMES, Path(__file__).name, "osworld_case.py")  # tests, fixtures


def _imports(path: Path) -> set[str]:
    """The ``computer_env.<name>`` modules a file imports (any depth, lazy imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = (
            [a.name for a in node.names]
            if isinstance(node, ast.Import)
            else [node.module or ""]
            if isinstance(node, ast.ImportFrom) and not node.level
            else []
        )
        for name in names:
            parts = name.split(".")
            if parts[0] == "computer_env" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_guest_code_is_self_contained() -> None:
    """Everything the guest's code imports of computer_env is in the guest's code: hiding the
    rest cannot break the desktop server (a lazy import included)."""
    allowed = {Path(n).stem for n in guest_code()}
    assert not set(HIDDEN_SUBPACKAGES) & allowed
    assert set(GUEST_SUBPACKAGES) <= allowed
    files = [PKG / n for n in guest_code() if n.endswith(".py")]
    files += [f for sub in GUEST_SUBPACKAGES for f in (PKG / sub).rglob("*.py")]
    missing = {
        f"{f.relative_to(ROOT)} imports computer_env.{m}"
        for f in files
        for m in _imports(f) - allowed
    }
    assert not missing, sorted(missing)


def test_docker_build_context_has_no_answers(tmp_path: Path) -> None:
    res = subprocess.run(
        ["bash", str(ROOT / "docker" / "build-image.sh"), "--code-only", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    copied = tmp_path / "computer_env"
    assert sorted(p.name for p in copied.iterdir()) == guest_code()
    for pattern in ANSWER_NAMES:
        assert not list(copied.rglob(pattern)), pattern
    assert (copied / "desktop" / "server" / "app.py").is_file()


@pytest.fixture()
def markers(tmp_path: Path) -> Iterator[list[Path]]:
    """Files standing for a run's scored/expected files: in the default results folder and its
    cache, and in a results folder on the host's /tmp (``--results-dir``)."""
    probe = ROOT / "results" / f".reach-probe-{os.getpid()}"
    tag = f"reach-probe-{os.getpid()}"
    made = [
        probe / f"expected-{tag}.json",
        probe / ".cache" / f"gold-{tag}.xlsx",
        tmp_path / "results" / f"result-{tag}.json",
    ]
    for path in made:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('{"expected": 42}')
    yield made
    shutil.rmtree(probe, ignore_errors=True)


@pytest.mark.desktop
@pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("bwrap"),
    reason="the local sandbox needs root and bubblewrap",
)
def test_no_answer_is_reachable_from_inside_the_desktop(markers: list[Path]) -> None:
    example = next((PKG / "synthetic" / "examples").glob("*.json"))
    reach = [PKG / sub for sub in HIDDEN_SUBPACKAGES] + [
        example,
        PKG / "osworld" / "builtin" / "solutions",
        PKG / "osworld" / "oracles",
        PKG / "osworld" / "builtin" / "solutions_code",
        ROOT / "tests",
        ROOT / "fixtures",
        ROOT / "holo_agent",
        ROOT / "results",
        *markers,
        *(m.parent for m in markers),
    ]
    assert all(p.exists() for p in reach[: len(HIDDEN_SUBPACKAGES) + 5])  # on the host, yes
    names = " -o ".join(f"-name '{n}'" for n in (*PROJECT_NAMES, *(m.name for m in markers)))
    script = (
        "for p in " + " ".join(f"'{p}'" for p in reach) + "; do "
        'if [ -e "$p" ] || [ -r "$p" ]; then echo "REACHABLE $p"; fi; done; '
        f"find / -path /proc -prune -o \\( {names} \\) -print 2>/dev/null "
        "| sed 's/^/FOUND /'; "
        "python -c 'import computer_env.desktop.server.app; print(\"SERVER IMPORTS\")'"
    )
    with local_desktop(width=640, height=480) as provider:
        handle = provider.handle
        assert handle is not None
        out = guest_sh(handle, script, timeout=300)["output"]
        leaks = [line for line in out.splitlines() if line.startswith(("REACHABLE", "FOUND"))]
        assert not leaks, "\n".join(leaks)
        assert "SERVER IMPORTS" in out, out
        client = DesktopClient.from_handle(handle)
        try:
            assert client.screenshot()[:8] == b"\x89PNG\r\n\x1a\n"  # the desktop still works
        finally:
            client.close()
