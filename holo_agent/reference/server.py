"""``ReferenceEndpoint``: an OpenAI-compatible server that plays scripted Holo Steps.

It is a harness check, not a model: ``/v1/models`` reports ``reference-policy`` with metadata
``{"harness_check": true}``. For each ``POST /v1/chat/completions`` it

1. checks the request against the agent-loop conventions (:mod:`.conformance`); a broken rule
   is answered HTTP 400 naming the rule; an unknown model name is answered 404;
2. applies injected faults (:mod:`.faults`);
3. answers the task's next scripted step (:mod:`.script`: the task from the ``<task>`` block,
   the step index from the assistant turns, a policy's step first, ``answer("DONE")`` past the
   solution's end); a re-ask gets the same step again, now without the injected fault. A task
   it has no solution for is answered HTTP 404 ``no_solution``, never a made-up DONE.

``POST /admin/faults`` with ``{"spec": "..."}`` sets faults from another process.
A connection over this host's loopback is answered only when a socket of this host user made it
(:func:`computer_env.same_user`): another user cannot read the scripted solutions or set faults.
``requests_seen`` keeps the last ``keep_requests`` chat request bodies (oldest first) and
``headers_seen`` their HTTP headers; ``request_count`` counts them all.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from computer_env import is_loopback, same_user
from holo_agent.reference.conformance import check_request
from holo_agent.reference.faults import FaultPlan
from holo_agent.reference.judge import JUDGE_MODEL, judge_completion
from holo_agent.reference.script import (
    DONE_STEP,
    NoSolution,
    Policy,
    completion_payload,
    is_raw,
    next_step,
    validate_solutions,
)
from holo_agent.reference.usage import prompt_tokens

__all__ = ["DONE_STEP", "NoSolution", "Policy", "ReferenceEndpoint"]

log = logging.getLogger(__name__)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def verify_request(self, request: Any, client_address: Any) -> bool:
        """Loopback connections: this host user's sockets only. Others reach the endpoint only
        when it was bound to another address on purpose (``--host``)."""
        if is_loopback(str(client_address[0])):
            return same_user(request, client_address, what="reference endpoint")
        return True


class ReferenceEndpoint:
    """The reference-policy endpoint; ``start()`` returns the base URL (ending in ``/v1``)."""

    def __init__(
        self,
        solutions: dict[str, list[dict[str, Any]]] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        policy: Policy | None = None,
        faults: str | None = None,
        model_name: str = "reference-policy",
        image_budget: int = 3,
        require_api_key: str | None = None,
        keep_requests: int = 64,
        extra_models: list[str] | None = None,
    ) -> None:
        self.solutions = dict(solutions or {})
        validate_solutions(self.solutions)
        self.host, self.port = host, port
        self.policy = policy
        self.model_name = model_name
        self.extra_models = list(extra_models or [])  # more names the policy answers to
        self.image_budget = image_budget
        self._api_key = require_api_key
        self._faults = FaultPlan.parse(faults)
        self._lock = threading.Lock()
        # Bounded: requests carry screenshots; a long run must not hold them all.
        self.requests_seen: deque[dict[str, Any]] = deque(maxlen=keep_requests)
        self.headers_seen: deque[dict[str, str]] = deque(maxlen=keep_requests)
        self.responses_sent: deque[dict[str, Any]] = deque(maxlen=keep_requests)
        self.request_count = 0
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        where = self.url if self._server is not None else "not started"
        return f"ReferenceEndpoint({where})"

    @property
    def url(self) -> str:
        """Base URL (``http://host:port/v1``); valid after ``start()``."""
        if self._server is None:
            raise RuntimeError("ReferenceEndpoint is not started")
        host, port = self._server.server_address[:2]
        if isinstance(
            host, (bytes, bytearray)
        ):  # the socket API's type; an AF_INET server's is str
            host = host.decode()
        return f"http://{host}:{port}/v1"

    def set_faults(self, spec: str | None) -> None:
        """Replace the pending faults with a new spec."""
        plan = FaultPlan.parse(spec)
        with self._lock:
            self._faults = plan

    def start(self) -> str:
        """Bind and serve in a background thread; return the base URL."""
        if self._server is None:
            handler = type("Handler", (_Handler,), {"endpoint": self})
            self._server = _Server((self.host, self.port), handler)
            self._thread = threading.Thread(
                target=self._server.serve_forever, name="reference-endpoint", daemon=True
            )
            self._thread.start()
            log.info("reference endpoint serving at %s", self.url)
        return self.url

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._server = None

    def __enter__(self) -> ReferenceEndpoint:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def models_payload(self) -> dict[str, Any]:
        """The ``/v1/models`` answer."""
        return {
            "object": "list",
            "data": [
                {
                    "id": self.model_name,
                    "object": "model",
                    "owned_by": "holo-bench",
                    "metadata": {
                        "harness_check": True,
                        "kind": "reference-policy",
                        "description": "Plays scripted reference solutions; a harness check, "
                        "not a model score.",
                    },
                },
                *(
                    {
                        "id": name,
                        "object": "model",
                        "owned_by": "holo-bench",
                        "metadata": {"harness_check": True, "kind": "exploit-policy"},
                    }
                    for name in self.extra_models
                ),
                {
                    "id": JUDGE_MODEL,
                    "object": "model",
                    "owned_by": "holo-bench",
                    "metadata": {
                        "harness_check": True,
                        "kind": "reference-judge",
                        "description": "Judges an episode by comparing its actions with the "
                        "scripted solution; a harness check.",
                    },
                },
            ],
        }

    def next_step(self, body: dict[str, Any]) -> tuple[dict[str, Any], int, str]:
        """(Step dict, step index, instruction) for a conforming request."""
        return next_step(body, self.solutions, self.policy)

    def completion(self, body: dict[str, Any], content_fault: str | None) -> dict[str, Any]:
        """Build the chat completion for a conforming request."""
        step, index, instruction = self.next_step(body)
        log.info(
            "request %d: conforms; task %r step %d -> %s%s",
            self.request_count,
            instruction[:60],
            index,
            "raw text" if is_raw(step) else step.get("tool_call", {}).get("tool_name"),
            f" (injected fault: {content_fault})" if content_fault else "",
        )
        return completion_payload(
            body,
            step,
            index,
            model_name=self.model_name,
            request_id=self.request_count,
            content_fault=content_fault,
        )


class _Handler(BaseHTTPRequestHandler):
    endpoint: ReferenceEndpoint
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:
        log.debug("reference endpoint: " + fmt, *args)

    def _send(
        self, code: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str, **extra: Any) -> None:
        self._send(code, {"error": {"message": message, "code": code, **extra}})

    def _body(self) -> dict[str, Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        try:
            data = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError as exc:
            self._error(400, f"request body is not JSON: {exc.msg}")
            return None
        if not isinstance(data, dict):
            self._error(400, "request body must be a JSON object")
            return None
        return data

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, self.endpoint.models_payload())
        elif self.path.rstrip("/") in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:  # noqa: N802
        ep = self.endpoint
        body = self._body()
        if body is None:
            return
        if self.path.rstrip("/") == "/admin/faults":
            try:
                ep.set_faults(body.get("spec"))
            except ValueError as exc:
                self._error(400, str(exc))
                return
            self._send(200, {"ok": True, "spec": body.get("spec")})
            return
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._error(404, f"no route {self.path}")
            return
        if ep._api_key is not None and self.headers.get("Authorization") != f"Bearer {ep._api_key}":
            self._error(401, "missing or wrong API key")
            return
        with ep._lock:
            ep.requests_seen.append(body)
            ep.headers_seen.append({k.lower(): v for k, v in self.headers.items()})
            ep.request_count += 1
            decision = ep._faults.next()
        if decision.delay:
            time.sleep(decision.delay)
        if decision.drop:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if decision.bad_body:
            self._send(200, {"object": "error", "message": "injected fault: not a completion"})
            return
        if decision.status:
            headers = {}
            if decision.retry_after is not None:
                headers["Retry-After"] = f"{decision.retry_after:g}"
            self._send(
                decision.status,
                {"error": {"message": "injected fault", "code": decision.status}},
                headers,
            )
            return
        if body.get("model") == JUDGE_MODEL:  # judge mode (holo_agent.reference.judge)
            try:
                payload = judge_completion(body, ep.solutions, ep.request_count)
            except ValueError as exc:
                self._error(400, str(exc), type="BadRequestError")
                return
            self._send(200, payload)
            return
        if body.get("model") != ep.model_name and body.get("model") not in ep.extra_models:
            self._error(
                404,
                f"The model `{body.get('model')}` does not exist; this endpoint "
                f"serves {ep.model_name!r}.",
            )
            return
        violation = check_request(body, ep.image_budget)
        if violation is not None:
            log.warning(
                "request %d: does not conform (rule %s): %s",
                ep.request_count,
                violation.rule,
                violation,
            )
            self._error(400, str(violation), rule=violation.rule, type="BadRequestError")
            return
        limit = ep._faults.context_tokens
        if limit is not None and (length := prompt_tokens(body.get("messages") or [])) > limit:
            self._error(
                400,
                f"Input length ({length}) exceeds model's maximum context length ({limit}).",
                type="BadRequestError",
            )  # vLLM's words
            return
        try:
            payload = ep.completion(body, decision.content)
        except NoSolution as exc:
            log.warning(
                "request %d: conforms, but no solution for this task: %s", ep.request_count, exc
            )
            self._error(404, str(exc), type="no_solution")
            return
        with ep._lock:
            ep.responses_sent.append(payload)
        self._send(200, payload)
