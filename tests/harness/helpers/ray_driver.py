"""Short-lived Ray drivers for the ``--provider ray`` tests, run as a child process so that the
test process itself never joins Ray (:meth:`tests.harness.helpers.raycluster.TwoNodeCluster.query`).

``python -m tests.harness.helpers.ray_driver ADDRESS QUESTION [ARG]`` prints one line
``OUT<json>``; the questions:

- ``nodes``: the alive nodes (address, id, their ``desktop`` resource);
- ``actors``: the cluster's named actors;
- ``sweep RUN``: the run ``RUN``'s end sweep on every node (what it removed);
- ``host-lost``: a provider tells a killed actor (its host lost) from a live one;
- ``dying RUN``: starts a desktop of run ``RUN``, prints its actor's pid, exits at once (no
  teardown).
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from computer_env.desktop.providers.ray.provider import RayProvider


def _connect(address: str) -> None:
    import ray

    ray.init(address=address, namespace="holo-bench", log_to_driver=False)


def nodes(address: str) -> list[dict[str, Any]]:
    import ray

    _connect(address)
    return [
        {
            "ip": n["NodeManagerAddress"],
            "id": n["NodeID"],
            "desktop": n["Resources"].get("desktop", 0),
        }
        for n in ray.nodes()  # type: ignore[no-untyped-call]
        if n["Alive"]
    ]


def actors(address: str) -> list[str]:
    import ray

    _connect(address)
    return list(ray.util.list_named_actors())


def sweep(address: str, run: str) -> Any:
    from computer_env.desktop.providers.ray.cluster import sweep_nodes

    _connect(address)
    return sweep_nodes(address, run=run)


def _provider(address: str, run: str) -> RayProvider:
    from computer_env.desktop.providers.ray.provider import RayProvider
    from computer_env.desktop.providers.registry import ProviderOptions, make_provider

    p = make_provider("ray", ProviderOptions(ray_address=address, run_id=run, screen=(800, 600)))
    assert isinstance(p, RayProvider)
    return p


def host_lost(address: str) -> str:
    import ray

    p = _provider(address, "lost")
    p.start()
    assert not p.host_lost(), "a live actor counts as lost"
    ray.kill(p._actor)  # the provider's own actor: killed as a lost host would lose it
    deadline = time.monotonic() + 60
    while not p.host_lost():
        assert time.monotonic() < deadline, "a killed actor still answers"
        time.sleep(0.5)
    p.close()
    return "LOST-OK"


def dying(address: str, run: str) -> None:
    p = _provider(address, run)
    p.start()
    print("OUT" + json.dumps(p.where["pid"]), flush=True)
    os._exit(0)


def main(argv: list[str]) -> None:
    address, question, *args = argv
    answers: dict[str, Any] = {
        "nodes": nodes,
        "actors": actors,
        "sweep": sweep,
        "host-lost": host_lost,
        "dying": dying,
    }
    out = answers[question](address, *args)
    print("OUT" + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
