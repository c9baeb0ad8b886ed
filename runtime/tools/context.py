"""What the agent's tools may see and touch of their session: the `ToolContext` protocol.

`runtime.turn.session.Session` provides it; tests may provide a small fake. Tool handlers run while
a turn is in flight, so the context names that turn's input row (`in_flight_row`) and every
tool that deletes rows refuses it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from runtime.instance.config import InstanceConfig
from runtime.instance.debuglog import DebugLog
from runtime.instance.home import InstancePaths
from runtime.memory import Memory, Provenance
from runtime.store import AsyncTurnStore
from runtime.turn.driver import ToolSpec


class ToolContext(Protocol):
    paths: InstancePaths
    store: AsyncTurnStore
    debug: DebugLog
    cwd: Path
    tools: tuple[ToolSpec, ...]
    memory: Memory
    # A team's shared wiki and graph (`[team] memory = "shared"`), or None.
    shared_memory: Memory | None

    @property
    def config(self) -> InstanceConfig: ...

    @property
    def in_flight_row(self) -> int | None:
        """The input row of the turn being run, or None between turns."""
        ...

    def provenance(self) -> Provenance:
        """Who is writing: the panel, its epoch and the turn in flight (stored with each fact)."""
        ...

    def update_config(self, **changes: object) -> None:
        """Validate, persist and apply config changes (raises ConfigError-like errors)."""
        ...

    def role_text(self) -> str:
        """The role doc as the next request will send it."""
        ...

    async def check_read(self, path: str) -> str | None:
        """None when the policy lets `Read` open `path`; else the refusal to show the model."""
        ...

    async def manifest_text(self) -> str | None:
        """The file manifest the next request would carry, if it is enabled."""
        ...

    def spend(self) -> dict[str, Any]:
        """The session's spend and limits, as stored in the `spend` meta key."""
        ...
