"""A session's state: what a panel's turns run with, and the view of it the agent's tools have.

`SessionState` is built once per session: the instance's paths and config, the store, the
driver, the one guard (budget, the owner's checks, the runtime sentinel, the permission
policy; every halt it records goes to debug.log), the working tree it measures, memory, the
prompt's render cache and cache-TTL choice, the file tracker, and the sends the turn in flight
queues. Its methods are what the agent's tools call between a turn's events (runtime.tools'
`ToolContext`: provenance, the role doc's text, a read check, the manifest, spend, queueing a
send or a note), what the operator changes (role doc, config, resume), and the halt's words.
`Session` (runtime/turn/session.py) adds the turn itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from runtime.errors import (
    PanelHaltedError,
    RoleDocError,
)
from runtime.guard import halts
from runtime.guard.guard import Guard, GuardSettings
from runtime.guard.records import HaltRecord
from runtime.guard.world import GitProbe, WorkingTree, git_state
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.debuglog import DebugLog
from runtime.instance.guard_settings import BudgetSettings
from runtime.instance.home import InstancePaths
from runtime.instance.roledoc import RoleDocSource, read_role_doc
from runtime.memory import Memory, Provenance
from runtime.store import AsyncTurnStore
from runtime.tools import build_tools
from runtime.tools.manifest import FileTracker
from runtime.turn.cache_ttl import TtlChooser
from runtime.turn.driver import (
    AgentDriver,
    Approver,
    ToolSpec,
)
from runtime.turn.render_cache import RenderCache
from runtime.turn.sends import TurnSends


class SessionState:
    """What a turn runs with, and the view of it the agent's tools have (runtime.tools'
    ToolContext): built once per session; `Session` (runtime/turn/session.py) adds the turn."""

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
        git_probe: GitProbe = git_state,
        memory: Memory,
        guard: Guard | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.paths = paths
        self.config = config
        self.store = store
        self.driver = driver
        self.cwd = cwd
        self.debug = DebugLog(paths.debug_log)
        self.role = RoleDocSource(Path(config.role_doc_path) if config.role_doc_path else None)
        if guard is None:
            guard = Guard(approver, GuardSettings(config.limits, config.runtime_sentinel))
        guard.policy = approver
        close = getattr(guard.world, "close", None)  # the probe, or a tap in front of it
        if callable(close):
            close()  # a kept guard's world of an earlier session: its watch ends
        self.world = WorkingTree(
            cwd,
            self._slot_values,
            git=git_probe,
            bookkeeping=config.limits.sentinel.bookkeeping_files,
        )
        guard.world = self.world
        guard.on_record.append(self._log_record)
        self.guard = guard
        self.approver: Approver = guard  # what the driver asks about every call
        self.files = FileTracker(cwd)
        self.renders = RenderCache()  # the window's rows as prompt text, by (id, revision)
        self.cache_ttl = TtlChooser(clock)  # each turn's prompt-cache lifetime
        self.in_flight_row: int | None = None
        self.last_turn_row: int | None = None  # the input row of the latest turn begun
        self.memory = memory
        self.shared_memory: Memory | None = None  # set by a host whose team shares memory
        self.panel = paths.name  # a host names its panel and its epoch (provenance)
        self.epoch = 0
        self.sends = TurnSends()  # queued by the turn in flight, committed with it
        self.unlogged_halt: HaltRecord | None = None  # a halt of the turn in flight, not yet logged
        self.turns_begun = 0
        self.tools: tuple[ToolSpec, ...] = ()
        self.tools = (*build_tools(self), *tools)

    def close(self) -> None:
        """End what the session holds beyond its store: the working tree's watch (an inotify
        descriptor). The guard may outlive the session; its next measure asks git in full."""
        self.world.close()

    # -- configuration changes (persisted) ---------------------------------------------------

    def use_role_doc(self, path: Path) -> None:
        """Read the role doc from `path` from the next turn on (not saved to config.json)."""
        self.config = self.config.model_copy(update={"role_doc_path": str(path)})
        self.role = RoleDocSource(path)
        self._guard_role_doc(path)

    def update_config(self, **changes: object) -> None:
        updated = self.config.model_copy(update=changes)
        InstanceConfig.model_validate(updated.model_dump())  # validate before saving
        save_config(self.paths.config, updated)
        self.config = updated
        if "role_doc_path" in changes:
            path = str(changes["role_doc_path"])
            self.role = RoleDocSource(Path(path) if path else None)
            if path:
                self._guard_role_doc(Path(path))

    def _guard_role_doc(self, path: Path) -> None:
        """A role doc switched to mid-run is guarded from the tools as the first one was;
        the sandbox's read-only files are the host's to widen (panels/host/turns/window.py)."""
        self.guard.guard_role_doc(path)

    # -- what the agent's tools see (runtime.tools.ToolContext) ------------------------------

    def provenance(self) -> Provenance:
        return self.provenance_of(self.in_flight_row)

    def provenance_of(self, turn: int | None) -> Provenance:
        return Provenance(self.panel, self.epoch, turn)

    def role_text(self) -> str:
        # Read directly, not through self.role, whose read() reports a warning only once: a
        # tool looking at the role doc must not swallow the warning the next turn would give.
        try:
            return read_role_doc(self.role.path) if self.role.path else ""
        except RoleDocError:
            return ""

    async def check_read(self, path: str) -> str | None:
        return await self.guard.check_read(path, self.cwd)

    async def manifest_text(self) -> str | None:
        enabled = self.config.file_stat_manifest_enabled
        return await self.files.manifest_text() if enabled else None

    def spend(self) -> dict[str, Any]:
        return self.guard.spend()

    async def _slot_values(self) -> list[tuple[str, str]]:
        return [(s.label, s.content) for s in await self.store.slots()]

    # -- halts ----------------------------------------------------------------------------------

    @property
    def halted(self) -> HaltRecord | None:
        """The panel's current halt (the guard's), until `resume()`."""
        return self.guard.halted

    def _log_record(self, record: HaltRecord) -> None:
        """Every record the guard makes goes to debug.log (the history): a halt that ends a
        turn once the turn is stored, with the row ids of its calls; any other at once."""
        if record.shadow:
            halts.log_shadow(self.debug, record)
        elif self.in_flight_row is not None:
            self.unlogged_halt = record
        else:
            halts.log_halt(self.debug, record, user_row_id=None)

    async def resume(self, limits: BudgetSettings | None = None) -> None:
        """The operator lets a halted panel go on (optionally with new budget limits)."""
        record = self.guard.resume(limits)
        await halts.clear_halt(self.store, self.debug, record)

    async def save_halt(self, *, user_row_id: int | None = None) -> None:
        """Write the current halt to the store (`mnemara show` reads it from any process)."""
        if self.guard.halted is not None:
            await halts.save_halt(self.store, self.guard.halted, user_row_id=user_row_id)

    def refusal(self, record: HaltRecord) -> PanelHaltedError:
        """The error a turn of this halted panel raises."""
        message = halts.halted_message(self.paths.name, record)
        return PanelHaltedError(message, panel=self.paths.name, record=record)

    # -- sends --------------------------------------------------------------------------------

    def queue_send(
        self, recipient: str | None, payload: dict[str, Any], topic: str | None = None
    ) -> str:
        """Queue a message to send (`recipient` None: everyone) once the turn in flight commits
        (runtime/turn/sends.py); the label the model can cite. `payload` is a JSON object the
        caller has checked and no longer touches (the host checks it against its bus's caps).
        Raises RuntimeError outside a turn."""
        return self.sends.queue(recipient, payload, topic)

    def note_commit(self, key: str, value: str) -> None:
        """Store `value` under the store's meta `key` with the commit of the turn in flight,
        in its transaction (the owner's record of what the turn leaves owed). Raises
        RuntimeError outside a turn."""
        self.sends.note(key, value)
