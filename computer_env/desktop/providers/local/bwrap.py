"""The command line and start script of one desktop session (sandboxed with bubblewrap or not).

Inside the sandbox: ``/usr`` and ``/etc`` read-only, a tmpfs ``/home/user`` filled from the
template, uid/gid 1000 ("user"), no capabilities, its own pid/ipc/uts (and, through the
provider, network) namespaces, a size-capped tmpfs ``/tmp`` and ``/dev/shm``, the dpkg database visible read-only, and the programs of
:mod:`.guest_tools` first on ``PATH``. Of the host's Python only what the server needs is visible,
read-only: the virtual environment, its base interpreter and, of the ``computer_env`` package, only
what :func:`guest_code` allows (its top-level modules, ``desktop`` and ``procs``). Nothing that
bears an answer is there: not ``osworld`` (tasks, built-in solutions, oracles), not ``synthetic``
(verifiers, reference solutions), and nothing else of the project (tests, results, caches).

The server's bearer token is never in the sandbox's files or environment: it arrives on a pipe
(``DESKTOP_TOKEN_FD``) that only the server reads, once, and that the init script closes for
everything else it starts (Xvfb, the nest); each session gets a new one.

Only Xvfb and the guest server run at the sandbox's top level. Everything the agent can reach
(session bus, openbox, at-spi, apps, every command the server runs) runs one level down, in the
nest (:mod:`computer_env.desktop.server.commands.nest`): its own pid namespace and ``/proc``, where no
further user namespaces can be made; from there nothing can see or signal Xvfb or the server.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import computer_env
from computer_env import guest_programs
from computer_env.desktop.providers.guest import guest_chrome, guest_tools
from computer_env.errors import ConfigurationError

GUEST_UID = 1000
GUEST_HOME = "/home/user"
GUEST_RUN = "/run/desktop"  # the per-desktop state dir (init script, passwd), read-only
GUEST_TEMPLATE = "/opt/desktop/home-template"
GUEST_SERVER_PORT = 5000
#: The subpackages of ``computer_env`` a desktop sees (with the package's top-level modules, the
#: contract: base, errors, ...). Every other one is absent: ``osworld`` (tasks, built-in solutions,
#: oracles), ``synthetic`` (verifiers, reference solutions), ``realtimegym``, and any added later.
GUEST_SUBPACKAGES = ("desktop", "guest_programs", "procs")

# Sandboxed: everything the agent can reach (session bus, openbox, at-spi, apps, commands) runs
# in the nest (DESKTOP_NEST: computer_env/desktop/server/commands/nest.py), where no process can see or
# signal Xvfb or the server. Unsandboxed: all under one dbus-run-session, as one process tree.
INIT_SCRIPT = guest_programs.read("desktop_session.sh")
"""The desktop session's init script (``guest_programs/desktop_session.sh``), written into the
sandbox's state folder as ``init.sh``."""

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"user:x:{GUEST_UID}:{GUEST_UID}:user:{GUEST_HOME}:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nuser:x:{GUEST_UID}:\nnogroup:x:65534:\n"


def session_env(
    *,
    width: int,
    height: int,
    home: str,
    template: str,
    token_fd: int,
    scratch: str,
    host: str,
    port: int,
    display: str,
    guard: str = "",
    tools_bin: str = guest_tools.GUEST_TOOLS,
) -> dict[str, str]:
    """Environment of the session (the same keys sandboxed and unsandboxed)."""
    return {
        # The server's interpreter first: OSWorld runs actions as `python -c "import pyautogui"`;
        # then the desktop's own programs (google-chrome, sudo: see guest_tools).
        "PATH": (
            f"{Path(python_executable()).parent}:{tools_bin}:/usr/local/bin:/usr/bin:/bin:"
            "/usr/sbin:/sbin"
        ),
        "HOME": home,
        "USER": "user",
        "LOGNAME": "user",
        "SHELL": "/bin/bash",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TERM": "xterm-256color",
        "XDG_SESSION_TYPE": "x11",
        "XDG_CURRENT_DESKTOP": "openbox",
        "SAL_USE_VCLPLUGIN": "gtk3",
        "GTK_MODULES": "gail:atk-bridge",
        "GNOME_ACCESSIBILITY": "1",
        "QT_ACCESSIBILITY": "1",
        "ACCESSIBILITY_ENABLED": "1",
        "NO_AT_BRIDGE": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "DESKTOP_WIDTH": str(width),
        "DESKTOP_HEIGHT": str(height),
        "DESKTOP_HOME_TEMPLATE": template,
        "DESKTOP_TOKEN_FD": str(token_fd),
        "DESKTOP_SCRATCH": scratch,
        "DESKTOP_SERVER_HOST": host,
        "DESKTOP_SERVER_PORT": str(port),
        "DESKTOP_DISPLAY": display,
        "DESKTOP_PYTHON": python_executable(),
        "DESKTOP_GUARD": guard,
    }


def python_executable() -> str:
    """The interpreter that runs the guest server (this process's, venv path kept)."""
    return (
        str(Path(sys.prefix, "bin", "python")) if sys.prefix != sys.base_prefix else sys.executable
    )


def python_binds() -> list[Path]:
    """Host paths the server's Python needs: venv, base interpreter, the ``computer_env`` tree."""
    paths = {Path(sys.base_prefix).resolve(), Path(sys.prefix)}
    exe = Path(sys.executable).resolve()
    if not any(exe.is_relative_to(p) for p in paths):
        paths.add(exe.parent.parent)
    paths.add(package_dir())
    system = [Path(p) for p in ("/usr", "/etc")]
    return sorted(p for p in paths if not any(p.is_relative_to(s) for s in system))


def package_dir() -> Path:
    """The ``computer_env`` package folder on this host."""
    return Path(computer_env.__file__).resolve().parent


def guest_code(pkg: Path | None = None) -> list[str]:
    """What of the ``computer_env`` folder ``pkg`` a desktop may see (names inside it): its
    top-level modules and :data:`GUEST_SUBPACKAGES`. The local sandbox binds only these; the
    Docker image (``docker/build-image.sh``) copies only these."""
    pkg = pkg or package_dir()
    return sorted(
        p.name
        for p in pkg.iterdir()
        if (p.is_file() and p.suffix == ".py") or (p.is_dir() and p.name in GUEST_SUBPACKAGES)
    )


def find_bwrap(path: str | None = None) -> str:
    """The bubblewrap binary, or ConfigurationError explaining how to get one."""
    found = shutil.which("bwrap", path=path)
    if not found:
        raise ConfigurationError(
            "bubblewrap (`bwrap`) is not on PATH: the local desktop sandbox needs it "
            "(Debian/Ubuntu: apt-get install bubblewrap). To run the desktop WITHOUT a sandbox "
            "(the agent's actions then run on this host), pass "
            "LocalSandboxProvider(unsandboxed=True) explicitly."
        )
    return found


@dataclass(frozen=True)
class SandboxLayout:
    """Host paths bound into one sandbox."""

    state_dir: Path  # per desktop: passwd, group, init.sh (bound read-only at GUEST_RUN)
    template: Path  # the home template (read-only at GUEST_TEMPLATE)
    tools: Path  # guest_tools.ensure_tools(): bin/, applications/
    chrome: Path | None = None  # guest_chrome.ensure_chrome_dir(): Chromium named "chrome"
    tmp_bytes: int = 512 * 1024 * 1024  # size of /tmp and of /dev/shm


def write_state(state_dir: Path) -> None:
    """Populate ``state_dir`` with passwd/group, the session bus's configuration and the init
    script (no secret: the token travels on a pipe, :func:`token_pipe`)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / "passwd").write_text(PASSWD)
    (state_dir / "group").write_text(GROUP)
    (state_dir / "init.sh").write_text(INIT_SCRIPT)
    (state_dir / "session.conf").write_text(guest_tools.session_bus_config(GUEST_UID))


def token_pipe(token: str) -> int:
    """A pipe holding ``token`` (then end of file): its read end, for the session to inherit
    (the caller closes it once the session started). The server reads it once; nothing else in
    the session holds it, and a drained pipe tells nothing."""
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, token.encode())  # far below a pipe's buffer: never blocks
    finally:
        os.close(write_fd)
    return read_fd


def staged_python_binds(stage_root: Path) -> dict[Path, Path]:
    """Map each of :func:`python_binds` to an empty mount point under ``stage_root``.

    The session's launcher bind-mounts the real directory there in a private mount namespace
    (see ``computer_env.procs.spawn(binds=...)``), because the sandbox's unprivileged uid could
    not traverse e.g. ``/root`` to reach it; bwrap then binds the staged path to the original.
    """
    staged: dict[Path, Path] = {}
    for i, path in enumerate(python_binds()):
        point = stage_root / f"bind-{i}"
        point.mkdir(mode=0o755, parents=True, exist_ok=True)
        staged[path] = point
    return staged


def bwrap_argv(
    bwrap: str,
    layout: SandboxLayout,
    *,
    width: int,
    height: int,
    info_fd: int,
    token_fd: int,
    staged: dict[Path, Path],
) -> list[str]:
    """The full ``bwrap ... bash init.sh`` command line (``token_fd``: :func:`token_pipe`'s,
    inherited through bwrap by the init script)."""
    env = session_env(
        width=width,
        height=height,
        home=GUEST_HOME,
        template=GUEST_TEMPLATE,
        token_fd=token_fd,
        scratch="/tmp/.desktop",
        host="0.0.0.0",
        port=GUEST_SERVER_PORT,
        display=":0",
    )
    argv = [
        bwrap,
        "--unshare-user",
        "--uid",
        str(GUEST_UID),
        "--gid",
        str(GUEST_UID),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "desktop",
        "--die-with-parent",
        "--new-session",
        "--cap-drop",
        "ALL",
        "--info-fd",
        str(info_fd),
        "--ro-bind",
        "/usr",
        "/usr",
        "--ro-bind",
        "/etc",
        "/etc",
    ]
    for name in ("bin", "lib", "lib32", "lib64", "libx32", "sbin"):
        target = Path("/", name)
        if target.is_symlink():
            argv += ["--symlink", str(target.readlink()), f"/{name}"]
        elif target.is_dir():
            argv += ["--ro-bind", str(target), f"/{name}"]
    argv += [
        "--ro-bind",
        str(layout.state_dir / "passwd"),
        "/etc/passwd",
        "--ro-bind",
        str(layout.state_dir / "group"),
        "/etc/group",
        "--dev",
        "/dev",
        "--size",
        str(layout.tmp_bytes),
        "--tmpfs",
        "/dev/shm",
        "--proc",
        "/proc",
        "--size",
        str(layout.tmp_bytes),
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/run",
        "--tmpfs",
        "/var",
        "--dir",
        "/var/tmp",
        "--ro-bind-try",
        "/var/cache/fontconfig",
        "/var/cache/fontconfig",
        "--ro-bind-try",
        "/var/lib/dbus",
        "/var/lib/dbus",
        # the package database (`apt list --installed`, `dpkg -l`), read-only
        "--ro-bind-try",
        "/var/lib/dpkg",
        "/var/lib/dpkg",
        "--ro-bind-try",
        "/var/lib/apt",
        "/var/lib/apt",
        "--ro-bind-try",
        "/var/cache/apt",
        "/var/cache/apt",
        "--ro-bind",
        str(layout.tools / "bin"),
        guest_tools.GUEST_TOOLS,
        "--ro-bind",
        str(layout.tools / "applications"),
        "/usr/share/applications",
        "--ro-bind-try",
        str(layout.tools / "python"),
        guest_tools.GUEST_PYTHON_DIR,
        "--perms",
        "0700",
        "--dir",
        f"/run/user/{GUEST_UID}",
        "--tmpfs",
        "/home",
        "--dir",
        GUEST_HOME,
        "--ro-bind",
        str(layout.template),
        GUEST_TEMPLATE,
        "--ro-bind",
        str(layout.state_dir),
        GUEST_RUN,
    ]
    if layout.chrome is not None:
        argv += ["--ro-bind", str(layout.chrome), guest_chrome.GUEST_CHROME_DIR]
    pkg = package_dir()
    for path, point in staged.items():
        if path != pkg:
            argv += ["--ro-bind", str(point), str(path)]
    # an allow-list: an empty folder, then only the guest's part of the package (from its staged
    # mount point, or as it is where it lies under /usr)
    source = staged.get(pkg, pkg)
    argv += ["--tmpfs", str(pkg)]
    for name in guest_code(pkg):
        argv += ["--ro-bind", str(source / name), str(pkg / name)]
    argv += ["--clearenv"]
    env["XDG_RUNTIME_DIR"] = f"/run/user/{GUEST_UID}"
    # `pip install` as on Ubuntu: into the user's site-packages, importable (guest_tools)
    env["PYTHONPATH"] = guest_tools.GUEST_PYTHON_DIR
    env["PIP_TARGET"] = guest_tools.user_site(GUEST_HOME)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    # the nest (made by the init script) and its session bus, whose address the server knows
    env["DESKTOP_NEST"] = str(package_dir() / "desktop" / "server" / "commands" / "nest.py")
    env["DESKTOP_BUS_CONFIG"] = f"{GUEST_RUN}/session.conf"
    env["DBUS_SESSION_BUS_ADDRESS"] = f"unix:path=/run/user/{GUEST_UID}/bus"
    for key, value in env.items():
        argv += ["--setenv", key, value]
    argv += ["--chdir", GUEST_HOME, "/bin/bash", f"{GUEST_RUN}/init.sh"]
    return argv
