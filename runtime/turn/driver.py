"""The driver contract: what a turn asks of a model driver, and the events it streams back.

`ClaudeDriver` (runtime/claude/) runs turns through the Claude Agent SDK; `ScriptedDriver`
(runtime/turn/scripted.py) replays scripted events for tests and examples. Tool calls are gated by
an `Approver` that the driver consults before any tool runs.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from runtime.window.rows import Block


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Thinking:
    text: str
    signature: str = ""


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    tool_use_id: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request, cached or not."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens


@dataclass(frozen=True)
class Cost:
    usd: float


ErrorKind = Literal[
    "credentials", "rate_limited", "overloaded", "prompt_too_long", "connection", "cli", "other"
]


@dataclass(frozen=True)
class ErrorEvent:
    kind: ErrorKind
    message: str
    retryable: bool = False


@dataclass(frozen=True)
class Done:
    stop_reason: str = "end_turn"


DriverEvent = TextDelta | Thinking | ToolCall | ToolResult | Usage | Cost | ErrorEvent | Done


@dataclass(frozen=True)
class ToolCallRequest:
    """A tool call waiting for a decision."""

    tool_use_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    allow: bool
    message: str = ""
    updated_input: dict[str, Any] | None = None


DEFAULT_DENY_MESSAGE = "This tool call was refused by the permission policy."


def deny_text(decision: Decision) -> str:
    """What the model reads when a call is refused (the approver's words when it gave any)."""
    return decision.message or DEFAULT_DENY_MESSAGE


class Approver(Protocol):
    """Decides every tool call before it runs (a session's guard, on every driver)."""

    async def decide(self, call: ToolCallRequest) -> Decision: ...


@dataclass(frozen=True)
class ToolOutput:
    text: str
    is_error: bool = False


# Our in-process tools are served as one MCP server of this name: `mcp__mnemara__<tool>`.
SDK_SERVER_NAME = "mnemara"


@dataclass(frozen=True)
class ToolSpec:
    """One in-process tool, served to the model as `mcp__mnemara__<name>`."""

    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Callable[[dict[str, Any]], Awaitable[ToolOutput]]


def model_tool_name(spec_name: str) -> str:
    """The name the model uses for one of our in-process tools."""
    return f"mcp__{SDK_SERVER_NAME}__{spec_name}"


async def call_tool(spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutput:
    """Run a tool's handler; an exception becomes an error output instead of escaping."""
    try:
        return await spec.handler(arguments)
    except Exception as exc:
        return ToolOutput(f"Tool {spec.name} failed: {type(exc).__name__}: {exc}", is_error=True)


@dataclass(frozen=True)
class McpServerSpec:
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TurnRequest:
    """Everything one turn needs; built by the session, consumed by a driver."""

    system: str
    blocks: tuple[Block, ...]
    model: str
    approver: Approver
    cwd: Path
    native_tools: tuple[str, ...] = ("Bash", "Read", "Edit", "Write")
    sdk_tools: tuple[ToolSpec, ...] = ()
    mcp_servers: tuple[McpServerSpec, ...] = ()
    max_budget_usd: float | None = None
    max_turns: int | None = None  # model requests allowed in this turn (the SDK's max_turns)
    bash_timeout_seconds: int = 60
    env: dict[str, str] = field(default_factory=dict)
    # What else the CLI process must have been started for (the role doc's bytes, the
    # config): a warm spare built for another key is not used (runtime/claude/spare.py).
    spare_key: str = ""


class AgentDriver(Protocol):
    """Runs one turn and streams its events. Cancelling the iteration stops the turn."""

    def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]: ...


@runtime_checkable
class WarmDriver(Protocol):
    """A driver that can start the next turn's process ahead of it (a warm spare)."""

    async def prepare(
        self, request: TurnRequest, *, due: float | None, wake: Callable[[], None] | None = None
    ) -> bool:
        """Have a spare ready for a turn shaped like `request` (its blocks unused); False
        when none is kept (the host's limit, or it could not start). `due`: when the panel
        is expected to turn next (None: no guess), for the host's limit; `wake` is called
        if it was refused and a place is freed since (ask again then)."""
        ...

    async def discard_spare(self) -> None:
        """Kill the spare, if any, and wait for it to be gone."""
        ...
