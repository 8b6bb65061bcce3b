"""The places in a desktop where code hooks into later commands (Python start-up files, user-site
packages that shadow installed ones, commands that shadow system ones, shell start-up files,
autostart entries, preloads), run INSIDE the desktop by its system python3 (standard library
only, no project imports) as ``python3 -I -S -`` with this file on stdin and a clean
environment (only PATH and HOME).

Prints one line, ``@@TAMPER@@`` followed by a JSON object ``{path: {"kind", "digest",
"detail"}}`` (``digest``: the first 16 hex digits of the file's SHA-256, ``size=N mtime=T`` for
a file over 1 MiB, ``dir``, or ``unreadable:ERROR``). The kinds are those of
``computer_env.osworld.guards.tamper.HookKind``.
"""

import hashlib
import json
import os
from typing import Dict, List, Set

__all__ = ["MARK", "digest", "package_key", "scan"]

MARK = "@@TAMPER@@"

SHELL_FILES = (
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".profile",
    ".bash_logout",
    ".bash_aliases",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".xprofile",
    ".xsessionrc",
    ".xinitrc",
    ".inputrc",
)
SYSTEM_SHELL_FILES = ("/etc/profile", "/etc/bash.bashrc", "/etc/environment", "/etc/zsh/zshenv")
SYSTEM_BIN = ("/usr/sbin", "/usr/bin", "/sbin", "/bin")


def digest(path: str) -> str:
    """A file's fingerprint (see the module's docstring)."""
    try:
        st = os.stat(path)
        if st.st_size > 1 << 20:
            return "size=%d mtime=%d" % (st.st_size, st.st_mtime)
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError as e:
        return "unreadable:" + type(e).__name__


def package_key(name: str) -> str:
    """The package a site-packages entry is for (``numpy-1.2.dist-info`` -> ``numpy``)."""
    return name.split(".")[0].split("-")[0].lower()


def _entries(d: str) -> List[str]:
    try:
        return sorted(os.listdir(d))
    except OSError:
        return []


def _runs_code(pth: str) -> bool:
    try:
        with open(pth, errors="replace") as f:
            return any(line.lstrip().startswith("import") for line in f)
    except OSError:
        return True


def scan(home: str) -> Dict[str, Dict[str, str]]:
    """Every hook found, by path (``home``: the desktop user's home)."""
    out: Dict[str, Dict[str, str]] = {}

    def add(kind: str, path: str, detail: str = "") -> None:
        out[path] = {
            "kind": kind,
            "digest": digest(path) if os.path.isfile(path) else "dir",
            "detail": detail,
        }

    user_sites: List[str] = []
    system_sites: List[str] = []
    for base in ("/usr/lib", "/usr/local/lib"):
        for name in _entries(base):
            if name.startswith("python3"):
                for sub in ("site-packages", "dist-packages"):
                    system_sites.append(os.path.join(base, name, sub))
    system_sites.append("/usr/lib/python3/dist-packages")
    for name in _entries(os.path.join(home, ".local/lib")):
        if name.startswith("python"):
            user_sites.append(os.path.join(home, ".local/lib", name, "site-packages"))
    installed: Set[str] = set()
    for d in system_sites:
        installed.update(package_key(n) for n in _entries(d))
    for d in system_sites + user_sites:
        for name in _entries(d):
            p = os.path.join(d, name)
            if name.endswith(".pth"):
                if _runs_code(p):
                    add("python_startup", p, "a .pth file that runs code at Python start-up")
            elif name.split(".")[0] in ("sitecustomize", "usercustomize"):
                add("python_startup", p, "runs at every Python start-up")
            elif (
                d in user_sites
                and package_key(name) in installed
                and not name.endswith((".dist-info", ".egg-info"))
            ):
                add("python_shadow", p, "a user-site package that shadows an installed one")
    system_cmds: Set[str] = set()
    for d in SYSTEM_BIN:
        system_cmds.update(_entries(d))
    for d in (
        os.path.join(home, "bin"),
        os.path.join(home, ".local/bin"),
        "/usr/local/bin",
        "/usr/local/sbin",
    ):
        for name in _entries(d):
            if name in system_cmds:
                add("command_shadow", os.path.join(d, name), "shadows the system command " + name)
    for name in SHELL_FILES:
        p = os.path.join(home, name)
        if os.path.isfile(p):
            add("shell_rc", p, "read by every new shell or session")
    for p in SYSTEM_SHELL_FILES:
        if os.path.isfile(p):
            add("shell_rc", p, "read by every new shell or session")
    for name in _entries("/etc/profile.d"):
        add("shell_rc", os.path.join("/etc/profile.d", name), "read by every login shell")
    for d in (
        os.path.join(home, ".config/autostart"),
        os.path.join(home, ".config/environment.d"),
        os.path.join(home, ".config/openbox"),
    ):
        for name in _entries(d):
            add("autostart", os.path.join(d, name), "started with the session")
    for root, _dirs, files in os.walk(os.path.join(home, ".config/systemd/user")):
        for name in files:
            add("autostart", os.path.join(root, name), "a systemd user unit")
    for p in ("/etc/ld.so.preload", os.path.join(home, ".pam_environment")):
        if os.path.isfile(p):
            add("preload", p, "loaded into every process or session")
    return out


if __name__ == "__main__":
    print(MARK + json.dumps(scan(os.path.expanduser("~"))))
