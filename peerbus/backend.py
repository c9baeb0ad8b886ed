"""The bus contract every backend keeps: what the host, the CLI and the tools may call.

`open_bus(url)` (peerbus/__init__.py) returns one of these: the SQLite bus
(`peerbus.sqlite.Bus`, a path or `sqlite:///...`) or the PostgreSQL bus
(`peerbus.postgres.PgBus`, `postgresql://...`). Callers above peerbus name only this
protocol; the conformance suite (tests/peerbus/) runs the same tests on every backend.

The promises, whatever the backend:
- at least once, in id order per recipient, never acked before the turn committed;
- a broadcast is delivered to, and acked by, every recipient on its own;
- a claim leases its batch; an expired lease, a nack or a restart redelivers;
- a claim's token settles only that claim: a newer claim's messages come back as `lost`;
- a keyed submit is sent once per key;
- noise (the silent types) is acked without a turn, bad rows go to dead letters;
- `wait_for_change` is a hint with a bounded floor: it may wake for nothing, never
  sleeps past a change for longer than the backend's backstop.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any, Protocol

from peerbus.dump import BusDump
from peerbus.model import (
    BusOptions,
    BusStats,
    Claim,
    DeadLetter,
    Outgoing,
    Pending,
    Record,
    SettleResult,
)


class BusBackend(Protocol):
    """One open bus. Share it between the panels of a host; it is safe to call from
    several tasks at once."""

    @property
    def scheme(self) -> str:
        """ "sqlite" or "postgresql"."""
        ...

    @property
    def location(self) -> str:
        """Where the bus is, fit to print and log: a path, or a URL without its password."""
        ...

    @property
    def mode(self) -> str:
        """ "owned" (peerbus made the table) or "compat" (a foreign SQLite table)."""
        ...

    @property
    def options(self) -> BusOptions: ...

    @property
    def identity(self) -> str:
        """The bus's identity (a uuid4 hex): message ids are unique only within it."""
        ...

    @property
    def notice(self) -> str | None:
        """A one-time explanation for the operator (compatibility mode), else None."""
        ...

    async def earlier_identities(self) -> tuple[str, ...]:
        """The identities this bus had before at the same place (a foreign table dropped and
        made again), oldest first: sends of turns fed from one of them are still to be
        published on it. Empty for a bus that was never made again."""
        ...

    async def submit(
        self,
        sender: str,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        recipient_epoch: int | None = None,
        key: str | None = None,
    ) -> int: ...

    async def submit_many(self, sender: str, messages: list[Outgoing]) -> list[int]: ...

    async def register(
        self,
        recipient: str,
        *,
        senders: Collection[str] | None = None,
        epoch: int | None = None,
        release: bool = True,
        take_over: bool = False,
        start_after: int | None = None,
        replay_backlog: bool = False,
        original_watermark: Path | None = None,
    ) -> int:
        """Record a (re)started recipient and return its epoch. With `release` the
        leases its previous incarnation held are given back at once (the caller is the
        recipient's one consumer, starting); without it they run to their end (the caller
        only makes the recipient known, as a host does for an external agent). `take_over`,
        `start_after`, `replay_backlog` and `original_watermark` concern a table shared
        with the original mnemara (SQLite compatibility mode); other backends refuse them."""
        ...

    async def claim(
        self,
        recipient: str,
        *,
        senders: Collection[str] | None = None,
        max_messages: int = 50,
        max_tokens: int = 20_000,
        lease: float = 300.0,
    ) -> Claim: ...

    async def ack(self, claim: Claim, *, only: Collection[int] | None = None) -> SettleResult: ...

    async def nack(
        self,
        claim: Claim,
        *,
        delay: float = 0.0,
        only: Collection[int] | None = None,
        count: bool = True,
    ) -> SettleResult: ...

    async def fail(
        self, claim: Claim, *, reason: str, only: Collection[int] | None = None
    ) -> SettleResult: ...

    async def extend(
        self, claim: Claim, *, lease: float = 300.0, only: Collection[int] | None = None
    ) -> SettleResult: ...

    async def inbox(
        self, recipient: str, *, senders: Collection[str] | None = None, limit: int = 100
    ) -> list[Pending]: ...

    async def history(
        self, *, limit: int = 50, role: str | None = None, after: int | None = None
    ) -> list[Record]: ...

    async def dead_letters(
        self, *, recipient: str | None = None, limit: int = 100
    ) -> list[DeadLetter]: ...

    async def settled(self, recipient: str, ids: Collection[int]) -> set[int]: ...

    async def stats(self) -> BusStats: ...

    async def prune(self, *, older_than: float) -> int: ...

    async def retry(
        self, *, ids: Collection[int] | None = None, recipient: str | None = None
    ) -> int: ...

    async def export_dump(self) -> BusDump:
        """The whole bus (rows, receipts, recipients, sent keys, identity) for a migration."""
        ...

    async def import_dump(self, whole: BusDump) -> None:
        """Fill this bus, which must hold no messages yet, with `whole`: ids, receipts, keys
        and the identity are kept, so the panels' stores recognise what they consumed."""
        ...

    async def generation(self, *, recipient: str | None = None) -> int: ...

    async def wait_for_change(
        self,
        timeout: float,  # noqa: ASYNC109
        *,
        recipient: str | None = None,
        since: int | None = None,
    ) -> bool: ...
