"""`ClaudeDriver`: one turn through the Claude Agent SDK and the Claude Code CLI it bundles.

Each turn is a fresh CLI process that is sent exactly one user message (the session's
assembled blocks, verbatim) and keeps no session file: the window lives in our store, not in
the CLI. The SDK's `ClaudeSDKClient` is used for that single exchange rather than `query()`
only because it can `interrupt()`: the CLI does not stop a turn when its stdin closes, so a
stop through `query()` waits the SDK's 5 s grace before SIGTERM, while an interrupt ends the
turn at once and the CLI exits as soon as stdin closes. The frames on the wire are the same
(the prompt goes through the same `stream_input` path as `query()`).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import ExitStack, aclosing, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.lowlevel

from runtime.claude.approval import ApprovalGate
from runtime.claude.bundled import bundled_cli
from runtime.claude.events import TurnMapper
from runtime.claude.failures import classify_exception
from runtime.claude.options import build_env, build_options
from runtime.turn.driver import DriverEvent, ErrorEvent, TurnRequest
from runtime.window.rows import Block

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeSDKClient, Message, Transport

    from runtime.sandbox import Sandbox

# How long a stop waits for the CLI to confirm the interrupt before closing anyway (the SDK's
# close then escalates to SIGTERM and SIGKILL on its own bounded timers).
INTERRUPT_GRACE_S = 2.0
STDERR_TAIL_LINES = 20


async def one_user_message(blocks: Iterable[Block]) -> AsyncIterator[dict[str, Any]]:
    """The prompt stream: exactly one user message. The CLI merges several into one and
    changes their bytes (reference §3), so the whole prompt is one message's content blocks."""
    yield {
        "type": "user",
        "session_id": "",
        "message": {"role": "user", "content": list(blocks)},
        "parent_tool_use_id": None,
    }


class ClaudeDriver:
    """Runs turns through the Claude Code CLI; see the module docstring.

    `transport_factory` replaces the CLI subprocess with another SDK `Transport` (tests use a
    fake one that speaks the CLI's stream-json protocol); the SDK then builds no CLI flags.
    With `sandbox`, every turn's CLI runs confined by it (runtime/sandbox/).
    """

    def __init__(
        self,
        *,
        cli_path: str | None = None,
        env: Mapping[str, str] | None = None,
        transport_factory: Callable[[], Transport] | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self._cli_path = cli_path
        self._env = dict(env or {})
        self._transport_factory = transport_factory
        self.sandbox = sandbox

    def _confine(self, stack: ExitStack, request: TurnRequest) -> str | None:
        """The `cli_path` of this turn: a sandbox launcher when the driver has a sandbox."""
        if self.sandbox is None or self._transport_factory is not None:
            return self._cli_path
        cli = Path(self._cli_path) if self._cli_path else bundled_cli()
        if cli is None:
            raise RuntimeError("the Claude Agent SDK's bundled CLI is not installed")
        # What the CLI process will see: the SDK merges our environment with the options'.
        env = {**os.environ, **build_env(request, self._env)}
        launcher = stack.enter_context(self.sandbox.turn(cli=cli, cwd=request.cwd, env=env))
        return str(launcher)

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        """Stream one turn's events. Stop the turn by cancelling, or by `aclose()`-ing this
        iterator (use `contextlib.aclosing` when leaving the loop early); the CLI is gone when
        either returns; so is a sandbox's per-turn directory."""
        with ExitStack() as stack:
            async with aclosing(self._run_turn(request, stack)) as events:
                async for event in events:
                    yield event

    async def _run_turn(
        self, request: TurnRequest, stack: ExitStack
    ) -> AsyncGenerator[DriverEvent, None]:
        from claude_agent_sdk import ClaudeSDKClient

        stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        mapper = TurnMapper()
        try:
            options = build_options(
                request,
                gate=ApprovalGate(request.approver),
                cli_path=self._confine(stack, request),
                env=self._env,
                stderr=stderr_tail.append,
            )
            transport = self._transport_factory() if self._transport_factory else None
        except Exception as exc:
            yield ErrorEvent("other", f"could not configure the turn: {exc}")
            return
        client = ClaudeSDKClient(options, transport=transport)
        # True while the CLI may still be running the turn: leaving then means a stop.
        mid_turn = True
        try:
            try:
                await client.connect(prompt=one_user_message(request.blocks))
                stream = cast("AsyncGenerator[Message, None]", client.receive_messages())
                async with aclosing(stream) as messages:
                    async for message in messages:
                        events = mapper.map(message)
                        mid_turn = not mapper.finished
                        for event in events:
                            yield event
                        if mapper.finished:
                            return  # a result ends the turn, with Done or an ErrorEvent
            except Exception as exc:  # no SDK exception escapes: it becomes an error event
                mid_turn = False
                yield classify_exception(exc, "\n".join(stderr_tail))
                return
            mid_turn = False
            said = "\n".join(["The Claude Code CLI ended the turn without a result.", *stderr_tail])
            yield ErrorEvent("cli", said)
        finally:
            await _stop(client, interrupt=mid_turn)


async def _stop(client: ClaudeSDKClient, *, interrupt: bool) -> None:
    """End the CLI process of a turn, interrupting it first when the turn is unfinished.

    Shielded because this runs while the consumer is being cancelled and an unshielded await
    would abort before the process is gone; every await inside is bounded (the interrupt here,
    the SDK's close by its own timers), so a stop cannot hang.
    """
    with anyio.CancelScope(shield=True):
        if interrupt:
            with anyio.move_on_after(INTERRUPT_GRACE_S), suppress(Exception):
                await client.interrupt()
        process = _cli_process(client)  # the SDK forgets it on disconnect
        with suppress(Exception):
            await client.disconnect()
        if process is not None:
            # The SDK's close ends the process but never closes its stdout and stderr pipes:
            # they close when their end-of-file is read, which a process left holding them
            # (a Bash job, the sandbox's last processes) delays. On asyncio a loop that ends
            # first leaves them open to the garbage collector. Closing the process closes them
            # now; the checkpoints let asyncio run its two rounds of closing callbacks (the
            # pipes', then the process transport's).
            with anyio.move_on_after(INTERRUPT_GRACE_S), suppress(Exception):
                await process.aclose()
            for _ in range(3):
                await anyio.lowlevel.checkpoint()


def _cli_process(client: ClaudeSDKClient) -> anyio.abc.Process | None:
    """The CLI's process as the SDK's own subprocess transport holds it, else None (a custom
    transport). Private attributes of claude-agent-sdk 0.2.189-0.2.190, read defensively: a
    release that renames them makes this None, and only the pipes' early close is lost
    (tests/runtime/claude/test_claude_real_cli.py, the lingering-CLI test, then fails)."""
    process = getattr(getattr(client, "_transport", None), "_process", None)
    return process if isinstance(process, anyio.abc.Process) else None
