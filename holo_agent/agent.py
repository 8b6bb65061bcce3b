"""``HoloComputerAgent``: the Holo3.1 structured-output agent loop over a ``ComputerEnv``.

Each step: observe, send the conversation (system prompt with ``<output_format>``, task,
observations with at most ``image_budget`` screenshots, parsed Step JSON as assistant turns,
tool outputs as user turns), parse the Step, apply its tool call as an ``InputEvent`` scaled to
the env's pixels, append the tool output. Malformed output is re-asked at most ``max_reasks``
times per step, then the episode ends as ``malformed`` (a model failure). ``answer`` ends it
(``INFEASIBLE...`` answers call ``env.finish(..., infeasible=True)``). See
:mod:`holo_agent.conversation` for the exact layout.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from computer_env.base import ComputerEnv
from holo_agent.client import ChatClient, ChatResponse, split_credentials
from holo_agent.code_tool import DEFAULT_TIMEOUT_S, run_code_action
from holo_agent.conversation import Conversation
from holo_agent.errors import ContextOverflow
from holo_agent.images import SentImage, prepare_image, qwen_image_tokens
from holo_agent.prompt import build_system_prompt
from holo_agent.recorder import Recorder
from holo_agent.records import StepRecord, Trajectory, TurnTimes, kept_reasoning
from holo_agent.tools import (
    AnswerTool,
    CodeStep,
    RunCodeTool,
    Step,
    StepParseError,
    is_infeasible,
    parse_step,
    step_json_schema,
    to_input_event,
)
from holo_agent.usage import check_usage

log = logging.getLogger(__name__)


def _pixels(event: dict[str, Any]) -> dict[str, int | None] | None:
    keys = [k for k in ("x", "y", "x1", "y1", "x2", "y2") if k in event]
    return {k: event[k] for k in keys} or None


def _split_action_time(times: TurnTimes, took_s: float, info: dict[str, Any]) -> None:
    """``env.step`` took ``took_s``; the env's ``info['settle_s']`` of it was the settle."""
    settle = info.get("settle_s") if isinstance(info, dict) else None
    settle = float(settle) if isinstance(settle, (int, float)) else 0.0
    times.settle_s = min(max(0.0, settle), took_s)
    times.action_s = took_s - times.settle_s


class HoloComputerAgent:
    """Runs Holo3.1 (or any OpenAI-compatible model speaking the Step format) on a ``ComputerEnv``.

    Model calls go through ``openai.OpenAI`` (:mod:`holo_agent.client`): ``max_retries``
    retries of endpoint trouble, ``request_timeout`` seconds a request, a retry delay of
    ``min(backoff_max, backoff_base * 2**retry)`` seconds (or the server's Retry-After, if
    longer). ``before_action(records)`` runs after the model answered and before its action is
    applied, with every model turn of the step: the re-asked malformed ones, then the accepted
    one (their token counts and latencies are what a game's time budget charges); it is given at
    construction (the attribute may also be set later). Satisfies :class:`holo_agent.Agent`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.8,
        reasoning_effort: str = "medium",
        image_budget: int = 3,
        max_image_width: int | None = None,
        max_reasks: int = 2,
        prompt: str = "default-v1",
        request_timeout: float = 300,
        max_retries: int = 4,
        recorder: Recorder | None = None,
        on_step: Callable[[StepRecord], None] | None = None,
        before_action: Callable[[list[StepRecord]], None] | None = None,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        code_actions: bool = False,
        code_timeout: float = DEFAULT_TIMEOUT_S,
        image_size: tuple[int, int] | None = None,
    ) -> None:
        self.base_url = split_credentials(base_url)[0]  # shown and recorded: no credentials
        self.model = model
        self.temperature = temperature
        self.reasoning_effort = reasoning_effort
        self.image_budget = image_budget
        self.max_image_width = max_image_width
        self.max_reasks = max_reasks
        self.prompt_name = prompt
        self.code_actions = code_actions  # the run_code tool (hybrid GUI + code protocol)
        self.code_timeout = code_timeout
        self.image_size = image_size  # send screenshots resized to exactly this size
        self.system_prompt = build_system_prompt(prompt, code_actions=code_actions)
        # vLLM's structured outputs (``structured_outputs.json``); None sends none
        self.schema: dict[str, Any] | None = step_json_schema(code_actions)
        self.task_key: str | None = None  # the played task's id (ComputerEnv.task_key)
        self.recorder = recorder
        self.on_step = on_step
        self.before_action = before_action
        self._client = ChatClient(
            base_url,
            api_key=api_key,
            timeout=request_timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
        )

    def __repr__(self) -> str:
        return f"HoloComputerAgent(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        """Release the HTTP client."""
        self._client.close()

    def settings(self) -> dict[str, Any]:
        """The agent settings recorded with each task (no secrets)."""
        return {
            "model": self.model,
            "base_url": self.base_url,
            "prompt": self.prompt_name,
            "temperature": self.temperature,
            "reasoning_effort": self.reasoning_effort,
            "image_budget": self.image_budget,
            "max_image_width": self.max_image_width,
            "max_reasks": self.max_reasks,
            "code_actions": self.code_actions,
            "image_size": list(self.image_size) if self.image_size else None,
        }

    def request_body(self, conv: Conversation) -> dict[str, Any]:
        """The chat-completions body for the next turn."""
        body: dict[str, Any] = {
            "model": self.model,
            "messages": conv.messages(),
            "temperature": self.temperature,
            "reasoning_effort": self.reasoning_effort,
            "structured_outputs": {"json": self.schema},
            "chat_template_kwargs": {"enable_thinking": True},
        }
        if self.schema is None:  # the schema only in the prompt (a server without them)
            del body["structured_outputs"]
        if self.task_key:  # OpenAI's end-user id: ignored by model servers; the reference
            body["user"] = self.task_key  # endpoint picks the task's solution by it
        return body

    def _record(self, traj: Trajectory, rec: StepRecord) -> None:
        traj.add(rec)
        if self.recorder is not None:
            # the record stays as written: the file reads back as the records the agent made
            # (so record_s counts saving the screenshot, not writing this line itself)
            self.recorder.record_step(rec)
        if self.on_step is not None:
            self.on_step(rec)

    def _new_record(
        self,
        traj: Trajectory,
        step_i: int,
        reask: int,
        resp: ChatResponse,
        img: SentImage,
        shot: str | None,
    ) -> StepRecord:
        usage = check_usage(resp.usage)  # an unbelievable count is flagged, never summed
        if usage.flag:
            log.warning("model endpoint %s: %s", self.base_url, usage.flag)
        return StepRecord(
            index=len(traj.steps),
            step=step_i,
            reask=reask,
            time=time.time(),
            latency_s=resp.latency_s,
            attempts=resp.attempts,
            prompt_tokens=usage.prompt,
            completion_tokens=usage.completion,
            reasoning_tokens=usage.reasoning,
            usage_flag=usage.flag,
            screenshot=shot,
            image_size=(img.width, img.height),
            env_size=(img.env_width, img.env_height),
            reasoning=kept_reasoning(resp.reasoning),
        )

    def run(self, env: ComputerEnv, max_steps: int) -> Trajectory:
        """Run one episode until an answer, ``max_steps`` Steps, malformed output or env end.

        Raises ``ModelEndpointError`` (endpoint trouble after retries), ``HarnessRequestError``
        (the endpoint rejected a request as malformed), and whatever the env raises
        (``InfraError`` subclasses); the partial episode is recorded with ``end`` null, and
        each model turn reached ``on_step`` as it happened (that is how a caller keeps it).
        """
        instruction = env.instruction
        self.task_key = env.task_key  # sent as the request's ``user`` (see request_body)
        traj = Trajectory(instruction=instruction)
        conv = Conversation(self.system_prompt, instruction, self.image_budget)
        if self.recorder is not None:
            self.recorder.start(instruction, self.system_prompt, self.settings())
        try:
            self._loop(env, max_steps, conv, traj)
        except BaseException as exc:
            traj.error = f"{type(exc).__name__}: {exc}"  # recorded; the error propagates
            raise
        finally:
            if self.recorder is not None:
                self.recorder.finish(traj)
        return traj

    def _ask(
        self, conv: Conversation, traj: Trajectory, step_i: int, img: SentImage, shot: str | None
    ) -> tuple[Step | CodeStep | None, list[StepRecord]]:
        """Request a Step, re-asking on malformed output; the step's records (re-asks first),
        with None for the Step after too many."""
        reask = 0
        asked: list[StepRecord] = []
        while True:
            t0 = time.perf_counter()
            image_tokens = conv.images_sent() * qwen_image_tokens(img.width, img.height)
            try:
                resp = self._client.complete(self.request_body(conv))
            except ContextOverflow as exc:  # the model's context is full: its episode ends
                rec = StepRecord(
                    index=len(traj.steps),
                    step=step_i,
                    reask=reask,
                    time=time.time(),
                    latency_s=time.perf_counter() - t0,
                    attempts=1,
                    screenshot=shot,
                    image_size=(img.width, img.height),
                    env_size=(img.env_width, img.env_height),
                    image_tokens_est=image_tokens,
                    error=f"context overflow: {exc.server_message}",
                )
                asked.append(rec)
                self._record(traj, rec)
                traj.end, traj.error = "context_overflow", str(exc)
                return None, asked
            rec = self._new_record(traj, step_i, reask, resp, img, shot)
            rec.image_tokens_est = image_tokens
            asked.append(rec)
            try:  # whatever the output, a Step or StepParseError (holo_agent.tools)
                step = parse_step(resp.content, self.code_actions)
            except StepParseError as exc:
                rec.error = f"malformed output: {exc.reason}"
                if isinstance(resp.content, str):  # kept capped, with its size and hash
                    rec.keep_raw_output(resp.content)
                if resp.finish_reason == "length":
                    rec.error += " (finish_reason=length)"
                self._record(traj, rec)
                if reask >= self.max_reasks:
                    return None, asked
                reask += 1
                conv.add_reask(exc.reason)
                continue
            rec.note, rec.thought = step.note, step.thought
            rec.tool_call = step.tool_call.model_dump(mode="json")
            return step, asked

    def _loop(self, env: ComputerEnv, max_steps: int, conv: Conversation, traj: Trajectory) -> None:
        for step_i in range(max_steps):
            t0 = time.perf_counter()
            obs = env.observe()
            img = prepare_image(obs, self.max_image_width, size=self.image_size)
            t1 = time.perf_counter()
            shot = None
            if self.recorder is not None:
                shot = self.recorder.save_screenshot(step_i, img.data, img.mime)
            times = TurnTimes(observe_s=t1 - t0, record_s=time.perf_counter() - t1)
            conv.add_observation(img.data, img.mime)
            step, asked = self._ask(conv, traj, step_i, img, shot)
            rec = asked[-1]
            rec.harness = times
            rec.env_notice = obs.notice
            if step is None:
                if traj.end is None:
                    traj.end = "malformed"
                    traj.error = f"{rec.error} (after {self.max_reasks} re-asks)"
                log.info("episode ended: %s", traj.error)
                return
            conv.add_step(step)
            call = step.tool_call
            if isinstance(call, AnswerTool):
                infeasible = is_infeasible(call.content)
                self._record(traj, rec)
                env.finish(call.content, infeasible=infeasible)
                traj.end = "infeasible" if infeasible else "answered"
                traj.answer = call.content
                return
            if isinstance(call, RunCodeTool):
                if self.before_action is not None:
                    self.before_action(asked)
                t0 = time.perf_counter()
                text, rec.code = run_code_action(env, call.language, call.code, self.code_timeout)
                times.action_s = time.perf_counter() - t0
                rec.tool_output = text
                self._record(traj, rec)
                conv.add_tool_output(call.tool_name, text)
                continue
            event = to_input_event(call, img.env_width, img.env_height)
            rec.event = event.model_dump(mode="json")
            rec.pixel = _pixels(rec.event)
            if self.before_action is not None:  # e.g. a game's time budget
                self.before_action(asked)
            t0 = time.perf_counter()
            try:
                result = env.step(event)
            except Exception as exc:
                rec.error = f"env error: {type(exc).__name__}: {exc}"
                self._record(traj, rec)
                raise
            _split_action_time(times, time.perf_counter() - t0, result.info)
            rec.tool_output = result.output
            self._record(traj, rec)
            conv.add_tool_output(call.tool_name, result.output)
            if result.done:
                traj.end = "env_done"
                return
        traj.end = "max_steps"
