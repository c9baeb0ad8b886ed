"""A fake Claude Code CLI: an SDK `Transport` that plays the CLI's side of the stream-json protocol.

`ClaudeDriver(transport_factory=...)` hands it to the real SDK, so the SDK's own control
protocol, hook and permission dispatch, MCP bridge and message parser all run on its frames,
offline and in-process. A script (an async generator) drives the fake: it yields stdout frames,
`Ask` for a control request (the SDK's answer is sent back into the script), `UseTool` for
the CLI's whole handling of one tool call, or `AwaitInterrupt` to stay mid-turn until stopped.
The frame shapes are the ones logged from the real CLI (stack-findings §2, KEY EXPERIMENT).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from claude_agent_sdk import Transport

Frame = dict[str, Any]
SESSION = "fake-session"


@dataclass(frozen=True)
class Ask:
    """A control request from the CLI; the script receives the SDK's `response` payload."""

    request: Frame


@dataclass(frozen=True)
class UseTool:
    """One tool call as the CLI handles it: PreToolUse hook, then `can_use_tool` unless the CLI
    auto-approves the call (read-only commands), then the tool runs and its result is sent."""

    id: str
    name: str
    input: Frame
    auto_approved: bool = False


@dataclass(frozen=True)
class AwaitInterrupt:
    """Stay mid-turn until the SDK sends `interrupt`, then end the turn as the CLI does."""


@dataclass
class ToolRun:
    """What the fake CLI did with one tool call (the script receives it after `UseTool`)."""

    hook_answers: list[Frame] = field(default_factory=list)
    permission: Frame | None = None
    ran_with: Frame | None = None
    mcp_response: Frame | None = None
    result: Frame = field(default_factory=dict)


Step = Frame | Ask | UseTool | AwaitInterrupt
Script = Callable[["FakeCli"], AsyncGenerator[Step, Any]]


class FakeCli(Transport):
    def __init__(self, script: Script) -> None:
        self.script = script
        self.written: list[Frame] = []  # every frame the SDK wrote, in order
        self.initialize: Frame = {}
        self.prompts: list[Frame] = []
        self.tool_runs: dict[str, ToolRun] = {}
        self.interrupted = False
        self.closed = False
        self._inbox_send, self._inbox = anyio.create_memory_object_stream[Frame](1000)
        self._ids = itertools.count(1)
        self._mcp_ready: set[str] = set()
        self._stdin_closed: anyio.Event | None = None

    # -- the Transport interface -------------------------------------------------------------
    async def connect(self) -> None:
        self._stdin_closed = anyio.Event()

    def is_ready(self) -> bool:
        return not self.closed

    async def write(self, data: str) -> None:
        frame = json.loads(data)
        self.written.append(frame)
        if not self.closed:
            self._inbox_send.send_nowait(frame)

    async def end_input(self) -> None:
        assert self._stdin_closed is not None
        self._stdin_closed.set()

    async def close(self) -> None:
        self.closed = True
        self._inbox_send.close()
        if self._stdin_closed is not None:
            self._stdin_closed.set()

    def read_messages(self) -> AsyncIterator[Frame]:
        return self._reading()

    async def _reading(self) -> AsyncIterator[Frame]:
        try:
            async for frame in self._run():
                yield frame
        finally:
            self._inbox.close()

    # -- the CLI's side ----------------------------------------------------------------------
    async def _run(self) -> AsyncIterator[Frame]:
        assert self._stdin_closed is not None
        try:
            init = await self._next("control_request")
            self.initialize = init["request"]
            yield control_response(init["request_id"], {"hook_on_failure_supported": True})
            self.prompts.append(await self._next("user"))
        except anyio.EndOfStream:
            return
        yield {"type": "system", "subtype": "init", "session_id": SESSION, "model": "fake-model"}
        script = self.script(self)
        reply: Any = None
        try:
            while True:
                try:
                    step = await script.asend(reply)
                except StopAsyncIteration:
                    break
                reply = None
                if isinstance(step, Ask):
                    request_id, frame = self._request(step.request)
                    yield frame
                    reply = await self._answer(request_id)
                elif isinstance(step, UseTool):
                    reply = self.tool_runs[step.id] = ToolRun()
                    async for frame in self._use_tool(step, reply):
                        yield frame
                elif isinstance(step, AwaitInterrupt):
                    request = await self._next("control_request")
                    assert request["request"]["subtype"] == "interrupt"
                    self.interrupted = True
                    yield control_response(request["request_id"], {})
                    yield result(subtype="error_during_execution", is_error=True)
                else:
                    yield step
        except anyio.EndOfStream:
            return
        finally:
            await script.aclose()
        await self._stdin_closed.wait()

    async def _next(self, frame_type: str) -> Frame:
        while True:
            frame = await self._inbox.receive()
            if frame.get("type") == frame_type:
                return frame

    def _request(self, request: Frame) -> tuple[str, Frame]:
        request_id = f"cli_req_{next(self._ids)}"
        return request_id, {"type": "control_request", "request_id": request_id, "request": request}

    async def _answer(self, request_id: str) -> Frame:
        while True:
            frame = await self._next("control_response")
            response = frame["response"]
            if response.get("request_id") == request_id:
                if response.get("subtype") == "error":
                    return {"error": response.get("error")}
                answer: Frame = response.get("response", {})
                return answer

    async def _ask(self, request: Frame, answers: list[Frame]) -> AsyncIterator[Frame]:
        request_id, frame = self._request(request)
        yield frame
        answers.append(await self._answer(request_id))

    async def _use_tool(self, step: UseTool, run: ToolRun) -> AsyncIterator[Frame]:
        tool_input, refusal = step.input, None
        for matcher in (self.initialize.get("hooks") or {}).get("PreToolUse", []):
            for callback_id in matcher["hookCallbackIds"]:
                hook_input = {
                    "hook_event_name": "PreToolUse",
                    "tool_name": step.name,
                    "tool_input": step.input,
                    "tool_use_id": step.id,
                    "session_id": SESSION,
                }
                request = {"subtype": "hook_callback", "callback_id": callback_id}
                request |= {"tool_use_id": step.id, "input": hook_input}
                async for frame in self._ask(request, run.hook_answers):
                    yield frame
        decisions = [a.get("hookSpecificOutput", {}) for a in run.hook_answers]
        if deny := next((d for d in decisions if d.get("permissionDecision") == "deny"), None):
            # The real CLI (2.1.332) words a hook's refusal this way for the model.
            refusal = f"PreToolUse:{step.name} hook error: {deny.get('permissionDecisionReason')}"
        elif allow := next((d for d in decisions if d.get("permissionDecision") == "allow"), None):
            tool_input = allow.get("updatedInput", tool_input)
        elif not step.auto_approved:
            request = {"subtype": "can_use_tool", "tool_name": step.name, "input": tool_input}
            request |= {
                "permission_suggestions": None,
                "blocked_path": None,
                "tool_use_id": step.id,
            }
            answers: list[Frame] = []
            async for frame in self._ask(request, answers):
                yield frame
            run.permission = answers[0]
            if run.permission.get("behavior") == "deny":
                refusal = run.permission.get("message", "")
            else:
                tool_input = run.permission.get("updatedInput", tool_input)
        if refusal is not None:
            run.result = tool_result_block(step.id, refusal, is_error=True)
        elif step.name.startswith("mcp__"):
            run.ran_with = tool_input
            async for frame in self._mcp_call(step.name, tool_input, run):
                yield frame
            assert run.mcp_response is not None
            outcome = run.mcp_response["result"]
            text = "".join(c.get("text", "") for c in outcome["content"])
            run.result = tool_result_block(step.id, text, is_error=outcome.get("isError", False))
        else:
            run.ran_with = tool_input
            text = f"ran {step.name} {json.dumps(tool_input, sort_keys=True)}"
            run.result = tool_result_block(step.id, text)
        yield {
            "type": "user",
            "message": {"role": "user", "content": [run.result]},
            "parent_tool_use_id": None,
            "session_id": SESSION,
        }

    async def _mcp_call(self, name: str, arguments: Frame, run: ToolRun) -> AsyncIterator[Frame]:
        _, server, tool = name.split("__", 2)
        answers: list[Frame] = []
        if server not in self._mcp_ready:
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}}
            hello["clientInfo"] = {"name": "fake-cli", "version": "0"}
            for message in (
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
            ):
                async for frame in self._ask(mcp(server, message), answers):
                    yield frame
            self._mcp_ready.add(server)
        call = {"name": tool, "arguments": arguments}
        message = {"jsonrpc": "2.0", "id": next(self._ids), "method": "tools/call", "params": call}
        async for frame in self._ask(mcp(server, message), answers):
            yield frame
        run.mcp_response = answers[-1]["mcp_response"]


# -- frames, shaped like the real CLI's ---------------------------------------------------------
def control_response(request_id: str, response: Frame) -> Frame:
    payload = {"subtype": "success", "request_id": request_id, "response": response}
    return {"type": "control_response", "response": payload}


def mcp(server: str, message: Frame) -> Frame:
    return {"subtype": "mcp_message", "server_name": server, "message": message}


def stream(event: Frame) -> Frame:
    return {
        "type": "stream_event",
        "uuid": "u",
        "session_id": SESSION,
        "event": event,
        "parent_tool_use_id": None,
    }


def streamed_text(
    message_id: str, *chunks: str, usage: Frame | None = None, model: str = "fake-model"
) -> list[Frame]:
    """The stream events of one text block written in `chunks`. With `usage`, its
    message_start carries it as the real CLI's does: input counts final, output_tokens 1."""
    start: Frame = {"id": message_id, "model": model, "content": []}
    if usage is not None:
        start["usage"] = usage | {"output_tokens": 1}
    return [
        stream({"type": "message_start", "message": start}),
        stream({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}}),
        *(
            stream(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": c},
                }
            )
            for c in chunks
        ),
        stream({"type": "content_block_stop", "index": 0}),
    ]


def message_end(usage: Frame, stop_reason: str = "end_turn") -> list[Frame]:
    """The stream events that close a response: the final usage, then message_stop."""
    delta = {"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": usage}
    return [stream(delta), stream({"type": "message_stop"})]


def assistant(
    *blocks: Frame,
    message_id: str = "msg_1",
    error: str | None = None,
    usage: Frame | None = None,
    model: str = "fake-model",
) -> Frame:
    """One whole assistant message; the CLI sends one per content block, each with the usage
    of the response's message_start (so output_tokens 1), which `usage` is given as here."""
    model = "<synthetic>" if error else model
    message: Frame = {"id": message_id, "model": model, "content": list(blocks)}
    if usage is not None:
        message["usage"] = usage
    frame: Frame = {"type": "assistant", "message": message, "parent_tool_use_id": None}
    frame["session_id"] = SESSION
    if error:
        frame["error"] = error
    return frame


def text(value: str) -> Frame:
    return {"type": "text", "text": value}


def tool_use(tool_id: str, name: str, tool_input: Frame) -> Frame:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


def tool_result_block(tool_use_id: str, content: str, *, is_error: bool = False) -> Frame:
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": content,
        "is_error": is_error,
    }


def result(
    *,
    subtype: str = "success",
    is_error: bool = False,
    text: str = "",
    usage: Frame | None = None,
    cost: float | None = 0.0,
    status: int | None = None,
    stop_reason: str = "end_turn",
) -> Frame:
    return {
        "type": "result",
        "subtype": subtype,
        "duration_ms": 5,
        "duration_api_ms": 1,
        "is_error": is_error,
        "num_turns": 1,
        "session_id": SESSION,
        "stop_reason": stop_reason,
        "total_cost_usd": cost,
        "usage": usage or {"input_tokens": 1, "output_tokens": 1},
        "result": text,
        "api_error_status": status,
    }
