"""The VM pool's start policy and the provider registry.

The pool tests use a test double of a provider: what is under test is how the pool treats what a
provider's ``start()`` raises (a harness bug, an infrastructure failure, a configuration error),
and no real provider can be made to fail in each of those ways on demand. The registry tests
build the real provider classes (construction starts nothing).
"""

from __future__ import annotations

import pytest

from computer_env.desktop.providers.base import DesktopHandle, DesktopProvider
from computer_env.desktop.providers.docker.provider import DockerProvider
from computer_env.desktop.providers.local.provider import LocalSandboxProvider
from computer_env.desktop.providers.osworld_cloud import OSWorldCloudProvider
from computer_env.desktop.providers.registry import ProviderOptions, make_provider, preflight
from computer_env.desktop.providers.remote import RemoteProvider
from computer_env.errors import ConfigurationError, VMStartError
from fixtures.cases.desktops.pool import VMPool


class _FailingProvider(DesktopProvider):
    """Test double: ``start()`` raises the given exception; records what the pool did."""

    name = "failing"

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.closed = 0
        self.ports: list[int] = []

    def start(self) -> DesktopHandle:
        raise self.error

    def reset(self) -> DesktopHandle:
        raise AssertionError("never started")

    def is_alive(self) -> bool:
        return False

    def close(self) -> None:
        self.closed += 1

    def allow_host_port(self, port: int) -> None:
        self.ports.append(port)


@pytest.mark.parametrize(
    "error",
    [
        KeyError("a harness bug"),
        VMStartError("the desktop never answered"),
        ConfigurationError("bubblewrap is missing"),
    ],
    ids=["bug", "infra", "configuration"],
)
def test_start_failure_propagates_unchanged_after_closing(error: BaseException) -> None:
    """A harness bug is not turned into an infrastructure failure (it must fail loudly); an
    ``InfraError`` and a ``ConfigurationError`` go up as they are. The half-started provider is
    closed every time, and the pool can start again."""
    made: list[_FailingProvider] = []

    def factory() -> DesktopProvider:
        made.append(_FailingProvider(error))
        return made[-1]

    pool = VMPool(factory)
    pool.allow_host_port(8123)
    try:
        for _ in range(2):
            with pytest.raises(type(error)) as info:
                pool.acquire()
            assert info.value is error
            assert pool.provider is None
        assert [(p.closed, p.ports) for p in made] == [(1, [8123]), (1, [8123])]
    finally:
        pool.close()


def test_registry_builds_each_provider_from_the_options() -> None:
    opts = ProviderOptions(
        worker_index=1,
        screen=(800, 600),
        vm_urls=("http://a:5000#t", "http://b:5000"),
        docker_image="holo-bench/x:1",
        run_id="r",
        worker_id="gw1",
        controller_pid=4242,
    )
    local = make_provider("local", opts)
    assert isinstance(local, LocalSandboxProvider) and (local.width, local.height) == (800, 600)
    local.close()
    remote = make_provider("remote", opts)
    assert isinstance(remote, RemoteProvider) and remote.url == "http://b:5000"
    docker = make_provider("docker", opts)
    assert isinstance(docker, DockerProvider)
    assert (docker.image, docker.run_id, docker.worker, docker.controller_pid, docker.screen) == (
        "holo-bench/x:1",
        "r",
        "gw1",
        4242,
        (800, 600),
    )
    cloud = make_provider("osworld:aws", opts)
    assert isinstance(cloud, OSWorldCloudProvider) and cloud.name == "osworld:aws"


@pytest.mark.parametrize("name", ["nope", "osworld", "osworld:", "local:x", ""])
def test_unknown_provider_names_the_option_and_the_known_ones(name: str) -> None:
    for call in (
        lambda: make_provider(name, ProviderOptions()),
        lambda: preflight(name, ProviderOptions()),
    ):
        with pytest.raises(ConfigurationError) as info:
            call()
        assert "--provider" in str(info.value)
        assert "local, docker, remote, ray, osworld:<name>" in str(info.value)


def test_preflight_of_providers_without_checks_is_empty() -> None:
    for name in ("local", "remote", "osworld:aws"):
        assert preflight(name, ProviderOptions()) == []
