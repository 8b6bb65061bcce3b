"""A total deadline for each HTTP request of a model client, not a timeout for each read.

httpx2 (and so openai) times each socket operation: a read waits at most ``read`` seconds, but a
server that trickles one byte a second answers every read in time and holds a request as long
as it likes (one held a case 100 s at ``--request-timeout 10``). :class:`RequestDeadline` bounds
the whole exchange instead: a request hook starts the clock when a request is sent (each retry
is a new request with its own deadline), and every connect, write and read of the client's
connections waits at most what is left of it; past it the operation raises httpcore2's own
``ConnectTimeout``/``WriteTimeout``/``ReadTimeout``, which reach openai as a timeout (retried,
then the endpoint's failure, like any other timeout).

The connections are bounded through the network backend of each of the client's connection
pools (httpcore2's ``NetworkBackend`` is public; httpx2 builds the pools without a way to pass
one, so :meth:`RequestDeadline.install` sets it on the pools the client built, and fails loudly
if httpx2 ever stops keeping them where it does today; ``tests/harness/model/
test_model_limits.py`` covers both).
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Iterable
from typing import Any

import httpcore2
import httpx2


class RequestDeadline:
    """The deadline of the request the current thread is sending (``seconds`` from its start)."""

    def __init__(self, seconds: float) -> None:
        if seconds <= 0:
            raise ValueError(f"a request deadline must be positive, not {seconds!r}")
        self.seconds = seconds
        self._local = threading.local()

    def __repr__(self) -> str:
        return f"RequestDeadline({self.seconds:g} s)"

    def start(self, request: httpx2.Request | None = None) -> None:
        """Start the clock for the request being sent (an httpx2 request hook)."""
        self._local.at = time.monotonic() + self.seconds

    def remaining(self) -> float | None:
        """Seconds left to the current request (None before any request of this thread)."""
        at = getattr(self._local, "at", None)
        return None if at is None else at - time.monotonic()

    def bound(self, timeout: float | None, error: type[httpcore2.TimeoutException]) -> float | None:
        """``timeout`` shortened to what is left of the deadline; ``error`` when nothing is."""
        left = self.remaining()
        if left is None:
            return timeout
        if left <= 0:
            raise error(f"the request passed its total deadline of {self.seconds:g} s")
        return left if timeout is None else min(timeout, left)

    def install(self, client: httpx2.Client) -> None:
        """Bound every connection of ``client`` (its transport and its proxy mounts) by this
        deadline, and start it with each request the client sends."""
        transports = [client._transport, *client._mounts.values()]
        for transport in transports:
            if transport is None:
                continue
            pool = getattr(transport, "_pool", None)
            backend = getattr(pool, "_network_backend", None)
            if pool is None or not isinstance(backend, httpcore2.NetworkBackend):
                raise RuntimeError(
                    f"cannot bound the requests of {type(transport).__name__}: "
                    "httpx2 no longer keeps its pool's network backend where "
                    "this module expects it (holo_agent.deadline)"
                )
            if not isinstance(backend, _DeadlineBackend):
                pool._network_backend = _DeadlineBackend(backend, self)
        hooks = client.event_hooks
        hooks["request"] = [self.start, *hooks.get("request", [])]
        client.event_hooks = hooks


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every operation waits at most what is left of the deadline."""

    def __init__(self, inner: httpcore2.NetworkStream, deadline: RequestDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, self._deadline.bound(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._deadline.bound(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore2.NetworkStream:
        inner = self._inner.start_tls(
            ssl_context, server_hostname, self._deadline.bound(timeout, httpcore2.ConnectTimeout)
        )
        return _DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """A network backend whose connections are :class:`_DeadlineStream` s."""

    def __init__(self, inner: httpcore2.NetworkBackend, deadline: RequestDeadline) -> None:
        self._inner = inner
        self._deadline = deadline

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        stream = self._inner.connect_tcp(
            host,
            port,
            self._deadline.bound(timeout, httpcore2.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._deadline)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore2.SOCKET_OPTION] | None = None,
    ) -> httpcore2.NetworkStream:
        stream = self._inner.connect_unix_socket(
            path,
            self._deadline.bound(timeout, httpcore2.ConnectTimeout),
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._deadline)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


__all__ = ["RequestDeadline"]
