"""The Ray side of ``--provider ray``: connecting, the resource check, the run's actor names,
and Ray's failures classified as ours.

It is imported only with ``--provider ray`` (by :mod:`.provider`, and lazily by the
controller's preflight and end of run), so the embedded default never imports Ray; import-linter
keeps every other module off ``ray``.
"""

from __future__ import annotations

import atexit
import logging
import signal
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from computer_env import errors
from computer_env.errors import ConfigurationError, DesktopNodeLost, VMStartError

log = logging.getLogger(__name__)

NAMESPACE = "holo-bench"
"""The Ray namespace of every desktop actor (named actors are looked up in it)."""
ACTOR_PREFIX = "holo-desktop"
_connect_lock = threading.Lock()


def ray_module() -> Any:
    """``import ray``, or a ``ConfigurationError`` that says how to install it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigurationError(
            "--provider ray needs Ray: pip install -e '.[ray]' (make setup installs it)"
        ) from exc
    return ray


def connect(address: str, *, during_run: bool = False) -> Any:
    """Join the cluster at ``address`` (``auto``: the one this host's ``ray start`` made) as a
    driver in :data:`NAMESPACE`, once per process; the ``ray`` module. A cluster that does not
    answer is the user's ``ConfigurationError`` before the run, and the environment's
    ``VMStartError`` ``during_run`` (the preflight found it: it went away since).

    ``ray.init`` replaces the SIGTERM handler with a plain ``sys.exit``: the run's own (SIGTERM
    ends the run like Ctrl-C, so the pool's teardown stops every desktop on its node) is put
    back. Ray's exit hook disconnects the driver, which makes Ray SIGKILL its actors: a hook
    registered after it (so run before it) closes the desktops still open first
    (:func:`on_exit`)."""
    ray = ray_module()
    with _connect_lock:
        if not ray.is_initialized():
            main = threading.current_thread() is threading.main_thread()
            previous = signal.getsignal(signal.SIGTERM) if main else None
            try:
                ray.init(
                    address=address,
                    namespace=NAMESPACE,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as exc:
                cls = VMStartError if during_run else ConfigurationError
                raise cls(
                    f"--ray-address {address}: no Ray cluster answers there "
                    f"({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
                ) from None
            finally:
                if previous is not None:
                    signal.signal(signal.SIGTERM, previous)
            atexit.register(_close_at_exit)
    return ray


_at_exit: list[weakref.WeakMethod[Callable[[], None]]] = []


def on_exit(close: Callable[[], None]) -> None:
    """Call the bound method ``close`` at interpreter exit, before Ray disconnects this driver
    (held weakly: a provider that is gone needs no closing)."""
    _at_exit.append(weakref.WeakMethod(close))  # type: ignore[arg-type]


def _close_at_exit() -> None:
    for ref in reversed(_at_exit):
        if (close := ref()) is None:
            continue
        try:
            close()
        except Exception:  # noqa: BLE001 - exit must go on
            log.exception("closing a desktop at exit failed")


def actor_prefix(run_id: str | None, controller_pid: int) -> str:
    """The name every desktop actor of run ``run_id`` (its controller: ``controller_pid``)
    starts with."""
    return f"{ACTOR_PREFIX}-{run_id or 'run'}-{controller_pid}-"


def per_node(ray: Any, resource: str) -> dict[str, float]:
    """``{node address: amount}`` of ``resource`` on the cluster's live nodes."""
    out: dict[str, float] = {}
    for node in ray.nodes():
        if node.get("Alive") and (amount := node.get("Resources", {}).get(resource)):
            key = str(node.get("NodeManagerAddress", "?"))
            out[key] = out.get(key, 0.0) + float(amount)
    return out


def describe(nodes: dict[str, float]) -> str:
    """``2 (127.0.0.1: 1, 10.0.0.7: 1)``, or ``none (no live node has it)``."""
    if not nodes:
        return "none (no live node has it)"
    total = sum(nodes.values())
    return f"{total:g} ({', '.join(f'{ip}: {n:g}' for ip, n in sorted(nodes.items()))})"


def check_resources(address: str, resource: str, amount: float, desktops: int, why: str) -> None:
    """``ConfigurationError`` (one line) when the cluster's live nodes together hold less of
    ``resource`` than ``desktops`` desktops of ``amount`` each; ``why`` says where the count
    comes from."""
    ray = connect(address)
    nodes = per_node(ray, resource)
    need = amount * desktops
    if sum(nodes.values()) + 1e-9 < need:
        raise ConfigurationError(
            f"--provider ray: the run needs {need:g} of Ray resource {resource!r} ({why}, "
            f"{amount:g} each) but the cluster at {address} has {describe(nodes)}; start nodes "
            f"with --resources='{{\"{resource}\": N}}', or lower -n / --spare-desktop"
        )


def kill_run_actors(
    address: str, run_id: str | None, controller_pid: int, wait_s: float = 20.0
) -> list[str]:
    """Stop (bounded), then kill every desktop actor of run ``run_id`` still alive on the
    cluster, and wait (at most ``wait_s``) until they are gone (the controller's last sweep: a
    worker that died took its own with it, as their owner); the names killed."""
    ray = connect(address)
    prefix, killed = actor_prefix(run_id, controller_pid), []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        name = entry["name"] if isinstance(entry, dict) else str(entry)
        space = entry.get("namespace", NAMESPACE) if isinstance(entry, dict) else NAMESPACE
        if space != NAMESPACE or not name.startswith(prefix):
            continue
        try:
            actor = ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:  # gone in the meantime
            continue
        try:
            ray.get(actor.close.remote(), timeout=10)
        except Exception as exc:  # noqa: BLE001 - it is killed next whatever happened
            log.info("closing desktop actor %s: %s", name, type(exc).__name__)
        ray.kill(actor, no_restart=True)
        killed.append(name)
    deadline = time.monotonic() + wait_s
    for name in killed:
        while time.monotonic() < deadline:
            try:
                ray.get_actor(name, namespace=NAMESPACE)
            except ValueError:
                break
            time.sleep(0.2)
        else:
            log.warning("desktop actor %s still listed %.0f s after it was killed", name, wait_s)
    return killed


def _sweep_here(run: str | None) -> dict[str, Any]:
    """On one node: remove what local desktops of dead processes left there, as part of run
    ``run`` (:meth:`~computer_env.desktop.providers.local.ownership.Run.encode`; None: as this
    task's own)."""
    import socket

    from computer_env.desktop.providers.local import ownership
    from computer_env.desktop.providers.local.cleanup import sweep_leftovers

    owner = ownership.Run.decode(run) if run else None
    swept = sweep_leftovers(ownership.Sweeper(owner) if owner else None)
    return {
        "host": socket.gethostname(),
        "slots": swept.slots,
        "cgroups": [str(c) for c in swept.cgroups],
    }


def sweep_nodes(
    address: str, timeout: float = 60.0, run: str | None = None
) -> dict[str, dict[str, Any]]:
    """Run :func:`~.local_cleanup.sweep_leftovers` on every live node (a zero-CPU task pinned
    to each) as part of run ``run`` (an encoded run; default: this process's), so that each
    node removes that run's leftovers and those of runs that ended, never another live run's;
    ``{node id: what it swept}``; a node that does not answer within ``timeout`` is left to its
    next desktop's own sweep (logged)."""
    from computer_env.desktop.providers.local import ownership

    run = run or ownership.current_run().encode()
    ray = connect(address)
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(_sweep_here)
    refs = {
        node["NodeID"]: task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)
        ).remote(run)
        for node in ray.nodes()
        if node.get("Alive")
    }
    out: dict[str, dict[str, Any]] = {}
    for node_id, ref in refs.items():
        try:
            out[node_id] = ray.get(ref, timeout=timeout)
        except Exception as exc:  # noqa: BLE001 - cleanup must not mask the run's outcome
            log.warning("sweeping node %s: %s", node_id[:12], type(exc).__name__)
    return out


def raise_answer(answer: Any) -> dict[str, Any]:
    """The actor's answer, or its error raised again as the :mod:`computer_env.errors` class
    it names (``VMStartError`` when it names none)."""
    if not isinstance(answer, dict):
        raise VMStartError(f"the desktop actor answered {answer!r}")
    err = answer.get("error")
    if not err:
        return answer
    cls = getattr(errors, str(err.get("cls")), None)
    message = f"{err.get('message')} (on the Ray node)"
    if err.get("kind") == "config":
        raise ConfigurationError(message)
    if not (isinstance(cls, type) and issubclass(cls, errors.InfraError)):
        cls = VMStartError
    raise cls(message, detail=err.get("detail"))


@contextmanager
def ray_faults(what: str, resource: str, address: str) -> Iterator[None]:
    """Ray's failures while ``what``: a dead actor or node is :class:`DesktopNodeLost`, a call
    past its time (no node with a free ``resource``, a desktop that never came up) is
    :class:`VMStartError` saying what the cluster has."""
    import ray
    from ray import exceptions as rx

    try:
        yield
    except (
        rx.RayActorError,
        rx.ActorUnavailableError,
        rx.NodeDiedError,
        rx.ObjectLostError,
        rx.OwnerDiedError,
        rx.RaySystemError,
    ) as exc:
        raise DesktopNodeLost(
            f"{what}: the desktop's Ray actor or node died ({type(exc).__name__})", detail=str(exc)
        ) from exc
    except rx.GetTimeoutError as exc:
        try:
            has = describe(per_node(ray, resource))
        except Exception:  # noqa: BLE001 - the timeout is the error to report
            has = "unknown (the cluster did not answer)"
        raise VMStartError(
            f"{what}: timed out (the cluster at {address} has {resource!r}: "
            f"{has}; all in use, or the desktop did not come up)"
        ) from exc


__all__ = [
    "ACTOR_PREFIX",
    "NAMESPACE",
    "actor_prefix",
    "check_resources",
    "connect",
    "describe",
    "kill_run_actors",
    "on_exit",
    "per_node",
    "raise_answer",
    "ray_faults",
    "ray_module",
    "sweep_nodes",
]
