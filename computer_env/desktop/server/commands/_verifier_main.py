"""The verifier runner's program: standard library only, run by :mod:`.verifier` as ``python -I``
on this file (``[NEST_PID]``) when the server starts, before any agent acts. Its protocol, one
JSON object a line:

- it writes ``{"ready": PID}`` once;
- for each request ``{"id", "code", "timeout", "env", "cwd"}`` on stdin it runs one verifier and
  answers ``{"id": <the request's>, ...}`` with one of ``result``, ``bad``, ``error``,
  ``timeout`` or ``died``.

The runner itself stays beside the server, out of the agent's sight and reach; each verifier
runs where the agent's processes run, and nowhere else:

- **inside the nest** (given its init's pid): a fork of the runner joins the nest's user, mount
  and pid namespaces, and its child makes a **fresh pid namespace** inside the nest, whose init
  is the verifier: it sees the agent's files, screen and processes, never the server, Xvfb or
  the sandbox's init; when it ends, the kernel ends everything it started there. It holds no
  capability (dropped before the task's code runs) and may gain none (``no_new_privs``);
- it is not dumpable (a ``fork`` of the runner, which made itself so first), so no process of
  the desktop's user can trace it or open its descriptors;
- it holds no descriptor but its result pipe (stdin, stdout and every other one closed), so it
  cannot write a line on the runner's answer channel;
- everything below the runner (the whole tree of a run, whatever it double-forked) is killed
  before the answer is written; without a nest the runner is a child subreaper, so orphans
  stay below it;
- every answer carries the id of the request it answers.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import time
import traceback
from typing import Any

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_RESULT_LIMIT = 1 << 20  # a verifier's answer is a number: a megabyte is far past any real one
_KILL_ROUNDS = 200
_PR_SET_NO_NEW_PRIVS = 38
_CAPABILITY_VERSION_3 = 0x20080522
_CLONE_NEWNS, _CLONE_NEWUSER, _CLONE_NEWPID = 0x00020000, 0x10000000, 0x20000000


def _max_fd() -> int:
    try:
        return int(os.sysconf("SC_OPEN_MAX"))
    except (ValueError, OSError):
        return 65536


def only_fd(keep: int, null: int) -> None:
    """Close every descriptor but ``keep``; 0, 1 and 2 become ``null`` (then it is closed)."""
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    low, high = 3, _max_fd()
    os.closerange(low, min(keep, high))
    os.closerange(keep + 1, high)


def answer_of(code: str) -> dict[str, Any]:
    """Run ``code`` (it defines ``verify()``) here and now: the answer object."""
    ns: dict[str, Any] = {"__name__": "verifier"}
    try:
        exec(compile(code, "verifier_code", "exec"), ns)  # noqa: S102 - the task's verifier
        r = ns["verify"]()
        if isinstance(r, (bool, int, float)):
            return {"result": r}
        return {"bad": repr(r)[:300]}
    except BaseException:  # noqa: BLE001 - a verifier's failure is its answer
        return {"error": traceback.format_exc()[-1500:]}


def _child(req: dict[str, Any], w: int) -> None:
    """The verifier's own set-up, then its run: a session of its own, nothing held but ``w``,
    no capability, a fixed environment."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    only_fd(w, null)
    drop_capabilities()
    os.environ.clear()
    os.environ.update(req["env"])
    try:
        os.chdir(req["cwd"])
    except OSError:
        os.chdir("/")
    data = json.dumps(answer_of(req["code"])).encode()
    while data:
        data = data[os.write(w, data) :]


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def drop_capabilities() -> None:
    """No capability left (those a join of the nest's user namespace gave), none to gain."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def join_nest(nest_pid: int) -> None:
    """Join the nest's user and mount namespaces, and its pid namespace for children."""
    libc = ctypes.CDLL(None, use_errno=True)
    kinds = (("user", _CLONE_NEWUSER), ("mnt", _CLONE_NEWNS), ("pid", _CLONE_NEWPID))
    # all opened first: once in the nest's mounts, /proc is the nest's (other pids)
    fds = [
        (os.open(f"/proc/{nest_pid}/ns/{name}", os.O_RDONLY), name, flag) for name, flag in kinds
    ]
    try:
        for fd, name, flag in fds:
            if libc.setns(fd, flag) != 0:
                raise OSError(ctypes.get_errno(), f"setns {name}")
    finally:
        for fd, _, _ in fds:
            os.close(fd)


def _exit_as(status: int) -> None:
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


def _entry(req: dict[str, Any], w: int, nest_pid: int | None) -> None:
    """The forked entry of one run: into the nest, a fresh pid namespace there, whose init runs
    the verifier (:func:`_child`); exits as the verifier did."""
    if nest_pid is None:
        _child(req, w)
        return
    join_nest(nest_pid)
    middle = os.fork()  # the first process in the nest's pid namespace
    if middle == 0:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.unshare(_CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "unshare pid")
        verifier = os.fork()  # pid 1 of its own namespace: all it starts ends with it
        if verifier == 0:
            try:
                _child(req, w)
            finally:
                os._exit(0)
        os.close(w)
        _exit_as(os.waitpid(verifier, 0)[1])
    os.close(w)
    _exit_as(os.waitpid(middle, 0)[1])


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from one reading of ``/proc``)."""
    kids: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1:
            kids.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root]
    while todo:
        for pid in kids.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def kill_all() -> int:
    """SIGKILL every process below this one until none is left (a killed parent's children are
    re-parented here or to their namespace's init, which dies too); the rounds it took."""
    me = os.getpid()
    for rounds in range(1, _KILL_ROUNDS + 1):
        pids = descendants(me)
        if not pids:
            return rounds
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:  # reap what was ours
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
    return _KILL_ROUNDS


def _read_answer(r: int, pid: int, timeout: float) -> tuple[bytes, int | None, bool]:
    """What the verifier wrote on ``r`` until it exited (or ``timeout``): the bytes, its wait
    status (None while running) and whether it timed out."""
    deadline = time.monotonic() + timeout
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), None, True
        ready, _, _ = select.select([r], [], [], min(left, 0.05))
        if ready:
            data = os.read(r, 65536)
            if data:
                size += len(data)
                if size > _RESULT_LIMIT:
                    return b"", None, False
                chunks.append(data)
                continue
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while True:  # what is left in the pipe
                ready, _, _ = select.select([r], [], [], 0)
                data = os.read(r, 65536) if ready else b""
                if not data or size > _RESULT_LIMIT:
                    break
                size += len(data)
                chunks.append(data)
            return b"".join(chunks), status, False


def run(req: dict[str, Any], nest_pid: int | None = None) -> dict[str, Any]:
    """One request: the verifier (in the nest when given), its answer, then everything it
    started ended."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _entry(req, w, nest_pid)
        except BaseException:  # noqa: BLE001 - told on the result pipe, as any failure
            data = json.dumps({"died": traceback.format_exc()[-800:]}).encode()
            os.write(w, data[:65536])
        finally:
            os._exit(0)
    os.close(w)
    try:
        raw, status, timed_out = _read_answer(r, pid, float(req["timeout"]))
    finally:
        kill_all()
        os.close(r)
    if timed_out:
        return {"timeout": True}
    if not raw:
        return {"died": f"the verifier exited without a result (status {status})"}
    try:
        answer = json.loads(raw)
    except ValueError:
        return {"died": "the verifier wrote an unreadable result"}
    return answer if isinstance(answer, dict) else {"died": "the verifier's result is no object"}


def main() -> None:
    """Serve requests on stdin until it closes (``argv[1]``: the nest's init, if any)."""
    nest_pid = int(sys.argv[1]) if len(sys.argv) > 1 else None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # before all else
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    out.write(json.dumps({"ready": os.getpid()}) + "\n")
    for line in sys.stdin:
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            answer = run(req, nest_pid)
        except BaseException:  # noqa: BLE001 - the runner must answer every request
            answer = {"died": traceback.format_exc()[-800:]}
        out.write(json.dumps({**answer, "id": rid}) + "\n")


if __name__ == "__main__":
    main()
