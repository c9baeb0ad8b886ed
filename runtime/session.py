"""One panel's session: runs turns against a driver and keeps the instance's store true.

A turn: the role doc is read from disk; the input row is stored as in flight; the prompt is
assembled from the stored window; the driver streams events; then, in one transaction, the
assistant row is appended and the input row marked complete (with the bus ids it consumed);
then the window is trimmed. A crash or stop at any point leaves the input row kept and marked.
The caller owns cancellation: cancel the scope around `async for ... in session.turn(...)`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from runtime.config import InstanceConfig, load_config, save_config
from runtime.debuglog import DebugLog
from runtime.driver import AgentDriver, Approver, DriverEvent, ErrorEvent, ToolSpec, TurnRequest
from runtime.errors import (
    CredentialsError,
    DriverError,
    PromptTooLongError,
    ServiceBusyError,
)
from runtime.evict import strip_bulk
from runtime.home import InstancePaths
from runtime.policy.approver import Asker
from runtime.policy.setup import build_approver
from runtime.prompt import build_prompt
from runtime.recorder import TurnRecorder
from runtime.roledoc import RoleDocSource
from runtime.rows import NewRow, estimate_tokens
from runtime.store import AsyncTurnStore, open_turn_store
from runtime.window import RowStat, WindowCaps, plan_trim

STOPPED_NOTE = "[turn stopped before it finished]"


@dataclass(frozen=True)
class RoleWarning:
    message: str


@dataclass(frozen=True)
class Trimmed:
    evicted: tuple[int, ...]
    forced: tuple[int, ...]


@dataclass(frozen=True)
class TurnCommitted:
    user_row_id: int
    row_ids: tuple[int, ...]


SessionEvent = DriverEvent | RoleWarning | Trimmed | TurnCommitted


def error_for(event: ErrorEvent) -> DriverError:
    if event.kind == "credentials":
        return CredentialsError(event.message)
    if event.kind in ("rate_limited", "overloaded"):
        return ServiceBusyError(f"{event.message} (your input is kept; send it again later)")
    if event.kind == "prompt_too_long":
        return PromptTooLongError(
            f"{event.message}; lower max_window_tokens (/tokens) or evict rows (/evict)"
        )
    return DriverError(event.message)


class Session:
    def __init__(
        self,
        *,
        paths: InstancePaths,
        config: InstanceConfig,
        store: AsyncTurnStore,
        driver: AgentDriver,
        approver: Approver,
        cwd: Path,
        tools: Sequence[ToolSpec] = (),
    ) -> None:
        self.paths = paths
        self.config = config
        self.store = store
        self.driver = driver
        self.approver = approver
        self.cwd = cwd
        self.tools = tuple(tools)
        self.debug = DebugLog(paths.debug_log)
        self.role = RoleDocSource(Path(config.role_doc_path) if config.role_doc_path else None)

    # -- configuration changes (persisted) ---------------------------------------------------

    def update_config(self, **changes: object) -> None:
        updated = self.config.model_copy(update=changes)
        InstanceConfig.model_validate(updated.model_dump())  # validate before saving
        save_config(self.paths.config, updated)
        self.config = updated
        if "role_doc_path" in changes:
            path = str(changes["role_doc_path"])
            self.role = RoleDocSource(Path(path) if path else None)

    # -- the turn -----------------------------------------------------------------------------

    async def turn(
        self, text: str, *, consumed_ids: Sequence[int] = (), inbox: str | None = None
    ) -> AsyncGenerator[SessionEvent, None]:
        role = self.role.read()
        if role.warning:
            self.debug.write("warning", "role_doc", message=role.warning)
            yield RoleWarning(role.warning)
        input_blocks = ({"type": "text", "text": text},)
        user_id = await self.store.begin_turn(
            NewRow("user", input_blocks, estimate_tokens(text), consumed_ids=tuple(consumed_ids))
        )
        recorder = TurnRecorder(result_cap=self.config.tool_result_max_chars)
        committed = False
        try:
            for attempt in (1, 2):
                failure = None
                async with aclosing(self._drive(role.text, user_id, text, inbox)) as events:
                    async for event in events:
                        if isinstance(event, ErrorEvent):
                            failure = event
                            break
                        recorder.add(event)
                        yield event
                if failure is None:
                    break
                self.debug.write(
                    "error", "turn_failed", error_kind=failure.kind, message=failure.message
                )
                if failure.kind == "prompt_too_long" and attempt == 1 and not recorder.blocks:
                    evicted = await self._evict_bulk()
                    self.debug.write("eviction", "prompt_too_long_recovery", rows=evicted)
                    continue
                await self.store.recover_interrupted()
                committed = True  # nothing more to write: the input row is kept, marked
                raise error_for(failure)
            ids = await self._commit(user_id, recorder)
            committed = True
            yield TurnCommitted(user_id, ids)
        finally:
            if not committed:
                # Stopped mid-turn (cancelled or closed): keep what was said, say it stopped.
                with anyio.CancelScope(shield=True), anyio.move_on_after(10):
                    recorder.note(STOPPED_NOTE)
                    await self._commit(user_id, recorder)
                    self.debug.write("warning", "turn_stopped", user_row_id=user_id)
        trimmed = await self.trim()
        if trimmed is not None:
            yield trimmed

    async def _drive(
        self, system: str, user_id: int, text: str, inbox: str | None
    ) -> AsyncGenerator[DriverEvent, None]:
        rows = [r for r in await self.store.rows() if r.id != user_id]
        prompt = build_prompt(
            role_doc=system,
            rows=rows,
            slots=await self.store.slots(),
            inbox=inbox,
            input_text=text,
        )
        request = TurnRequest(
            system=prompt.system,
            blocks=prompt.blocks,
            model=self.config.model,
            approver=self.approver,
            cwd=self.cwd,
            sdk_tools=self.tools,
            bash_timeout_seconds=self.config.bash_timeout_seconds,
        )
        async with aclosing(self.driver.run_turn(request)) as events:
            async for event in events:
                yield event

    async def _commit(self, user_id: int, recorder: TurnRecorder) -> tuple[int, ...]:
        blocks = recorder.final_blocks()
        usage = recorder.usage
        rows: list[NewRow] = []
        if blocks:
            exact = usage is not None and usage.output_tokens > 0
            tokens = usage.output_tokens if exact and usage else estimate_tokens(json.dumps(blocks))
            rows.append(NewRow("assistant", blocks, tokens, tokens_exact=exact))
        ids = await self.store.commit_turn(user_id, rows)
        if usage is not None:
            await self.store.set_meta(
                "last_usage",
                json.dumps(
                    {
                        "input_tokens": usage.input_tokens,
                        "output_tokens": usage.output_tokens,
                        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
                        "cache_read_input_tokens": usage.cache_read_input_tokens,
                        "cost_usd": recorder.cost_usd,
                    },
                    sort_keys=True,
                ),
            )
        return tuple(ids)

    async def _evict_bulk(self) -> int:
        changed = 0
        for row in await self.store.rows():
            if row.pinned or row.status == "in_flight":
                continue
            slim = strip_bulk(row.blocks)
            if slim != row.blocks:
                await self.store.replace_blocks(row.id, slim, estimate_tokens(json.dumps(slim)))
                changed += 1
        return changed

    async def trim(self) -> Trimmed | None:
        caps = WindowCaps(
            max_rows=self.config.max_window_turns,
            max_tokens=self.config.max_window_tokens,
            row_slack=self.config.row_cap_slack_when_token_headroom,
            low_water=self.config.window_low_water,
            protect_compressed=self.config.preserve_compressed_reads,
        )
        plan = plan_trim([RowStat.of(r) for r in await self.store.rows()], caps)
        if not plan.needed:
            return None
        await self.store.delete_rows(plan.evict_ids)
        if plan.forced_ids:
            forced = int(await self.store.get_meta("forced_pinned_evictions") or 0)
            await self.store.set_meta("forced_pinned_evictions", str(forced + len(plan.forced_ids)))
        self.debug.write(
            "eviction",
            "window_trim",
            evicted=list(plan.evict_ids),
            forced_pinned=list(plan.forced_ids),
            rows_after=plan.rows_after,
            tokens_after=plan.tokens_after,
        )
        return Trimmed(plan.evict_ids, plan.forced_ids)


@asynccontextmanager
async def open_session(
    instance: str,
    *,
    driver: AgentDriver,
    approver: Approver | None = None,
    asker: Asker | None = None,
    home: Path | None = None,
    cwd: Path | None = None,
    tools: Sequence[ToolSpec] = (),
) -> AsyncIterator[Session]:
    """Open an instance's session; the store is closed when the block ends.

    Tool calls are decided by `approver`, or else by the instance's permission policy, whose
    `ask` verdicts go to `asker` (none: denied, with a message the model can read).
    """
    paths = InstancePaths.for_name(instance, home).require()
    config = load_config(paths.config)
    cwd = cwd or Path.cwd()
    if approver is None:
        approver = build_approver(paths, config, cwd=cwd, asker=asker)
    async with open_turn_store(paths.turns) as store:
        recovered = await store.recover_interrupted()
        session = Session(
            paths=paths,
            config=config,
            store=store,
            driver=driver,
            approver=approver,
            cwd=cwd,
            tools=tools,
        )
        if recovered:
            session.debug.write("warning", "interrupted_turns_recovered", row_ids=recovered)
        if config.unknown_fields():
            session.debug.write("warning", "unknown_config_fields", fields=config.unknown_fields())
        yield session
