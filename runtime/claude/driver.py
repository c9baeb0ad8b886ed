"""`ClaudeDriver`: one turn through the Claude Agent SDK and the Claude Code CLI it bundles.

Each turn is a fresh CLI process that is sent exactly one user message (the session's
assembled blocks, verbatim) and keeps no session file: the window lives in our store, not in
the CLI. The SDK's `ClaudeSDKClient` is used for that single exchange rather than `query()`
only because it can `interrupt()`: the CLI does not stop a turn when its stdin closes, so a
stop through `query()` waits the SDK's 5 s grace before SIGTERM, while an interrupt ends the
turn at once and the CLI exits as soon as stdin closes. The frames on the wire are the same
(the prompt goes through the same `stream_input` path as `query()`).

A turn may instead take a warm spare (spare.py): the same process, started earlier by
`prepare` with the same options and waiting for its one message, used only when it was built
for exactly this turn's request (its fingerprint); its callbacks go to this turn (binding.py).
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping
from contextlib import ExitStack, aclosing, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.lowlevel

from runtime.claude.binding import Binding
from runtime.claude.bundled import bundled_cli
from runtime.claude.events import TurnMapper
from runtime.claude.failures import classify_exception
from runtime.claude.options import build_env, build_options
from runtime.claude.pool import SparePool
from runtime.claude.spare import PromptSlot, Spare, cli_process, fingerprint
from runtime.turn.driver import DriverEvent, ErrorEvent, TurnRequest
from runtime.window.rows import Block

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, Message, Transport

    from runtime.sandbox import Sandbox

# How long a stop waits for the CLI to confirm the interrupt before closing anyway (the SDK's
# close then escalates to SIGTERM and SIGKILL on its own bounded timers).
INTERRUPT_GRACE_S = 2.0


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
    With `sandbox`, every turn's CLI runs confined by it (runtime/sandbox/). With `pool`
    (the host's limit), `prepare` keeps a warm spare for the next turn (spare.py).
    """

    def __init__(
        self,
        *,
        cli_path: str | None = None,
        env: Mapping[str, str] | None = None,
        transport_factory: Callable[[], Transport] | None = None,
        sandbox: Sandbox | None = None,
        pool: SparePool[ClaudeDriver] | None = None,
    ) -> None:
        self._cli_path = cli_path
        self._env = dict(env or {})
        self._transport_factory = transport_factory
        self.sandbox = sandbox
        self.pool = pool
        self._spare: Spare | None = None
        self._spare_lock: anyio.Lock | None = None
        self.spares_used = 0  # turns that ran on a spare
        self.spares_discarded = 0  # spares a turn found stale (or dead) and killed

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

    def fingerprint(self, request: TurnRequest) -> str:
        """What a spare for `request` must have been built from (spare.py)."""
        facts = {
            "cli_path": self._cli_path,
            "env": self._env,
            "sandbox": repr(self.sandbox),
            # With what it guards now: a role doc switched to since makes a new sandbox.
            "sandbox_now": None if self.sandbox is None else repr(self.sandbox.current()),
            "transport": self._transport_factory is not None,
        }
        return fingerprint(request, facts)

    def _options(
        self, request: TurnRequest, binding: Binding, stack: ExitStack
    ) -> tuple[ClaudeAgentOptions, Transport | None]:
        options = build_options(
            request, binding=binding, cli_path=self._confine(stack, request), env=self._env
        )
        return options, self._transport_factory() if self._transport_factory else None

    # -- warm spares ----------------------------------------------------------------------------

    def _lock(self) -> anyio.Lock:
        if self._spare_lock is None:
            self._spare_lock = anyio.Lock()
        return self._spare_lock

    @property
    def spare(self) -> Spare | None:
        return self._spare

    async def prepare(
        self, request: TurnRequest, *, due: float | None, wake: Callable[[], None] | None = None
    ) -> bool:
        """Keep a spare for the next turn shaped like `request` (runtime.turn's WarmDriver)."""
        pool = self.pool
        if pool is None or pool.limit == 0:
            return False
        shape = self.fingerprint(request)
        current = self._spare
        if current is not None and current.fingerprint == shape and current.alive():
            pool.admit(self, due, wake)
            pool.ready(self)
            return True
        await self._drop_spare()
        admitted, victim = pool.admit(self, due, wake)
        if not admitted:
            return False
        built: Spare | None = None
        try:
            if victim is not None:
                await victim._drop_spare()  # first: never more than the limit alive
            async with self._lock():
                built = await self._build(request, shape)
                self._spare = built
        finally:
            if built is None:
                pool.release(self)
            else:
                pool.ready(self)
        return built is not None

    async def _build(self, request: TurnRequest, shape: str) -> Spare | None:
        from claude_agent_sdk import ClaudeSDKClient

        resources, binding, slot = ExitStack(), Binding(), PromptSlot()
        try:
            options, transport = self._options(request, binding, resources)
            client = ClaudeSDKClient(options, transport=transport)
            await client.connect(prompt=slot.stream())  # the SDK disconnects on a failure
        except Exception:
            slot.close()
            resources.close()
            return None  # no spare: the turn starts its process as it always did
        except BaseException:
            slot.close()
            resources.close()
            raise
        return Spare(shape, client, binding, slot, resources)

    async def discard_spare(self) -> None:
        """Kill the spare, if any; the panel wants no place until it asks again."""
        if self.pool is not None:
            self.pool.forget(self)
        await self._drop_spare()

    async def _drop_spare(self) -> None:
        """Kill the spare, if any, and free its place (a refused panel may take it)."""
        async with self._lock():
            spare, self._spare = self._spare, None
        if self.pool is not None:
            self.pool.release(self)
        if spare is not None:
            await _kill(spare)

    async def _take(self, request: TurnRequest) -> Spare | None:
        """The spare, when it was built for exactly this request and is alive; else None
        (a spare there was is killed first)."""
        async with self._lock():
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if self.pool is not None:
            self.pool.release(self)  # a turn's process now, not a spare
        if spare.fingerprint == self.fingerprint(request) and spare.alive():
            self.spares_used += 1
            return spare
        self.spares_discarded += 1
        await _kill(spare)
        return None

    # -- a turn ---------------------------------------------------------------------------------

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

        mapper = TurnMapper()
        spare = await self._take(request)
        if spare is not None:
            stack.enter_context(spare.resources)
            binding, client = spare.binding, spare.client
            binding.bind(request)  # its callbacks are this turn's from here on
            spare.slot.give(request.blocks)
        else:
            binding = Binding()
            binding.bind(request)
            try:
                options, transport = self._options(request, binding, stack)
            except Exception as exc:
                yield ErrorEvent("other", f"could not configure the turn: {exc}")
                return
            client = ClaudeSDKClient(options, transport=transport)
        stderr_tail = binding.stderr_tail
        # True while the CLI may still be running the turn: leaving then means a stop.
        mid_turn = True
        try:
            try:
                if spare is None:
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
            if spare is not None:
                spare.slot.close()  # its stream's ends, if the SDK never got to read it


async def _kill(spare: Spare) -> None:
    """End a spare that no turn will use: its prompt stream ends with nothing sent, so the
    SDK closes the CLI's stdin; then its process is stopped and its sandbox removed."""
    with anyio.CancelScope(shield=True):
        spare.slot.close()
        await _stop(spare.client, interrupt=False)
        spare.resources.close()


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
        process = cli_process(client)  # the SDK forgets it on disconnect
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
