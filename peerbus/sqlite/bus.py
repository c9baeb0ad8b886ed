"""The SQLite bus (a `BusBackend`): the sync SQL functions run on one connection behind one
worker thread.

`open_bus` owns the connection for the life of its `async with` block. Every call goes
through `anyio.to_thread.run_sync` with a CapacityLimiter(1): the connection is used by
one thread at a time and the event loop never blocks on SQLite. Calls are not abandoned on
cancellation, so a transaction always finishes (commit or rollback) before the caller's
cancel takes effect. Works on trio and asyncio alike.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio

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
from peerbus.routing import Route
from peerbus.sqlite import claim as claim_mod
from peerbus.sqlite import dump, maintenance, queries, settle, submit
from peerbus.sqlite.busfile import (
    BusFile,
    bus_identity,
    close_bus,
    connect_bus,
    follow_file,
    sidecar_path,
)
from peerbus.sqlite.receipts import shared_consumer_warning, start_route
from peerbus.sqlite.sidecar_identity import earlier_identities
from sqlitekit.waiter import ChangeWaiter, WatchOptions
from sqlitekit.watch import Signature, data_versions, watched_paths

T = TypeVar("T")
log = logging.getLogger("peerbus")


class Bus:
    """One open bus file. Get one from `open_bus`; share it between the panels of a host."""

    def __init__(self, file: BusFile, limiter: anyio.CapacityLimiter) -> None:
        self.file = file
        self._limiter = limiter
        sidecar = sidecar_path(file.path, file.options) if file.mode == "compat" else None
        self._schemas = ("main", "side") if file.mode == "compat" else ("main",)
        watch = WatchOptions(file.options.poll_interval, file.options.backstop_interval)
        self._changes = ChangeWaiter(
            watched_paths(file.path, sidecar), watch, self._read_versions, file.signals
        )
        self._claim_generation: dict[str, int] = {}
        self._originals: dict[str, tuple[Path, tuple[int, int, int] | None]] = {}
        self._last_claim_generation = 0

    scheme = "sqlite"

    @property
    def location(self) -> str:
        return str(self.file.path)

    @property
    def options(self) -> BusOptions:
        return self.file.options

    @property
    def mode(self) -> str:
        return self.file.mode

    @property
    def identity(self) -> str:
        """The bus file's identity (a uuid4 hex): message ids are unique only within it."""
        return bus_identity(self.file)

    @property
    def notice(self) -> str | None:
        """Set in compatibility mode: the one-time explanation (also logged at open)."""
        return self.file.notice

    async def _run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await anyio.to_thread.run_sync(
            functools.partial(fn, *args, **kwargs), limiter=self._limiter
        )

    async def _on_current(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(file, ...)` on the file at the bus's path as it is now: a replaced file
        is opened anew and a table made again restarts (busfile.follow_file), in the same
        trip to the worker thread. Every claim, submit and register comes through here,
        so the host notices at its next wake."""

        def work() -> T:
            self.file = follow_file(self.file)
            return fn(self.file, *args, **kwargs)

        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    def _bump(self, recipients: Collection[str | None]) -> None:
        """Wake this process's waiters that a change concerns (a None: everyone, as a
        broadcast concerns every recipient). Other processes learn of it by the signals
        the sync functions touch."""
        if None in recipients:
            self._changes.bump()
        else:
            self._changes.bump([r for r in recipients if r is not None])

    async def submit(
        self,
        sender: str,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        recipient_epoch: int | None = None,
        key: str | None = None,
    ) -> int:
        """Append a message from `sender` (set by the host, never by the payload).

        With `key`, a message already sent with that key is not sent again: its id comes
        back (see `submit` for the guarantee in compatibility mode)."""
        ident = await self._on_current(
            submit.submit,
            sender,
            recipient,
            payload,
            topic=topic,
            recipient_epoch=recipient_epoch,
            key=key,
        )
        self._bump([recipient])
        return ident

    async def submit_many(self, sender: str, messages: list[Outgoing]) -> list[int]:
        """Append several messages in one transaction, honouring each one's key."""
        ids = await self._on_current(submit.submit_many, sender, messages)
        self._bump([m.recipient for m in messages])
        return ids

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
        """Record a (re)started recipient; returns its epoch. See `submit.register`.

        `take_over`: this route takes a panel over from the original mnemara's poll on a
        shared table. In compatibility mode, registered for the first time, it then starts
        past the table's history (see `receipts.start_route`): after `start_after` (the
        original's watermark for the panel, from `read_original_watermark`; giving it
        implies `take_over`), else after the highest id now in the table, as the original
        does on first enable, or from the first row with `replay_backlog`. Without it a
        new route starts from the first row, as any bus recipient does.
        `original_watermark` is that file: if it changes while we run, the original still
        consumes this panel, which is warned about once.
        """
        route = Route.of(recipient, senders)
        start = None
        if take_over or start_after is not None:
            start = await self._run(
                self.file.write,
                functools.partial(
                    start_route, bus=self.file, route=route, start_after=start_after,
                    replay=replay_backlog,
                ),
            )  # fmt: skip
        if start is not None:
            how = (
                "replays the backlog from the first row" if replay_backlog
                else f"takes over from the original's watermark: starts after id {start}"
                if start_after is not None
                else f"starts after id {start}, the highest in the table at first enable, "
                "as the original does (replay the backlog with replay_backlog)"
            )  # fmt: skip
            log.warning("%s: panel %r %s", self.file.path, recipient, how)
        new_epoch = await self._on_current(
            submit.register, recipient, senders=senders, epoch=epoch, release=release
        )
        if original_watermark is not None and self.file.mode == "compat":
            self._originals[recipient] = (original_watermark, _stat_key(original_watermark))
        self._bump([recipient])
        return new_epoch

    async def claim(
        self,
        recipient: str,
        *,
        senders: Collection[str] | None = None,
        max_messages: int = 50,
        max_tokens: int = 20_000,
        lease: float = 300.0,
    ) -> Claim:
        """Lease the recipient's next batch; noise is acked and bad rows dead-lettered."""
        self._check_original(recipient)
        generation = await self._changes.refresh(recipient)
        result = await self._on_current(
            claim_mod.claim_batch,
            recipient,
            senders=senders,
            max_messages=max_messages,
            max_tokens=max_tokens,
            lease=lease,
            generation=generation,
        )
        self._claim_generation[recipient] = generation
        self._last_claim_generation = generation
        return result

    async def ack(self, claim: Claim, *, only: Collection[int] | None = None) -> SettleResult:
        """Ack after the turn that consumed the claim has committed."""
        return await self._run(settle.ack, self.file, claim, only=only)

    async def nack(
        self,
        claim: Claim,
        *,
        delay: float = 0.0,
        only: Collection[int] | None = None,
        count: bool = True,
    ) -> SettleResult:
        """Give messages back. `count=False` when the batch goes back untouched (halted,
        stopping, shutdown): only a turn that failed on its own counts an attempt."""
        result = await self._run(settle.nack, self.file, claim, delay=delay, only=only, count=count)
        self._bump([claim.recipient])
        return result

    async def fail(
        self, claim: Claim, *, reason: str, only: Collection[int] | None = None
    ) -> SettleResult:
        """Dead-letter the claim's messages now, with `reason`. See `settle.fail`."""
        result = await self._run(settle.fail, self.file, claim, reason=reason, only=only)
        self._bump([claim.recipient])
        return result

    async def extend(
        self, claim: Claim, *, lease: float = 300.0, only: Collection[int] | None = None
    ) -> SettleResult:
        return await self._run(settle.extend, self.file, claim, lease=lease, only=only)

    async def inbox(
        self, recipient: str, *, senders: Collection[str] | None = None, limit: int = 100
    ) -> list[Pending]:
        return await self._run(queries.inbox, self.file, recipient, senders=senders, limit=limit)

    async def history(
        self, *, limit: int = 50, role: str | None = None, after: int | None = None
    ) -> list[Record]:
        return await self._run(queries.history, self.file, limit=limit, role=role, after=after)

    async def dead_letters(
        self, *, recipient: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        return await self._run(queries.dead_letters, self.file, recipient=recipient, limit=limit)

    async def settled(self, recipient: str, ids: Collection[int]) -> set[int]:
        """Of `ids`, those never to be delivered to `recipient` again (see queries.settled)."""
        return await self._run(queries.settled, self.file, recipient, ids)

    async def stats(self) -> BusStats:
        return await self._run(queries.stats, self.file)

    async def earlier_identities(self) -> tuple[str, ...]:
        if self.file.state != "side":
            return ()  # an owned file is never made again under an open bus
        return await self._run(lambda file: file.read(earlier_identities), self.file)

    async def prune(self, *, older_than: float) -> int:
        return await self._run(maintenance.prune, self.file, older_than=older_than)

    async def retry(
        self, *, ids: Collection[int] | None = None, recipient: str | None = None
    ) -> int:
        moved = await self._run(maintenance.retry, self.file, ids=ids, recipient=recipient)
        if moved:
            self._bump([recipient])  # None (every recipient's dead letters): everyone
        return moved

    async def export_dump(self) -> BusDump:
        """The whole bus, for `bus migrate` (sqlite/dump.py)."""
        return await self._run(dump.export_dump, self.file)

    async def import_dump(self, whole: BusDump) -> None:
        """Fill this empty owned bus with `whole`: ids, receipts, keys and identity kept."""
        await self._run(dump.import_dump, self.file, whole)
        if whole.bus_id:
            self.file = dataclasses.replace(self.file, identity=whole.bus_id)
        self._bump([None])

    async def generation(self, *, recipient: str | None = None) -> int:
        """The change counter now; a reader (tail, dashboard) passes it to wait_for_change
        as `since` before it reads, so a change during the read still wakes it. With
        `recipient`, that recipient's signal is watched from here on (claim does the same)."""
        return await self._changes.refresh(recipient)

    # `timeout` is the parameter the host was promised (ASYNC109 prefers a cancel scope at
    # the call site): a timeout here is an answer (False), not a cancellation.
    async def wait_for_change(
        self,
        timeout: float,  # noqa: ASYNC109
        *,
        recipient: str | None = None,
        since: int | None = None,
    ) -> bool:
        """Wait until the bus changed after a claim; False when `timeout` passed first.

        With `recipient`, only a change that concerns it counts: a message to it or a
        broadcast, one of its messages nacked or retried, its leases released, or a commit
        whose recipients are unknown (found by the backstop). Without, any change counts.

        The reference point is `since` (a `Claim.generation`), else the last claim made for
        `recipient` through this Bus, else the last claim made through it at all. A host
        that shares one Bus between panels passes `recipient`, so that no panel misses a
        change that came between its claim and its wait. Leases that expire and nack
        delays that end change nothing on disk: claim again after a timeout.
        """
        if since is None:
            since = self._claim_generation.get(recipient or "", self._last_claim_generation)
        with anyio.move_on_after(timeout):
            await self._changes.wait_past(since, recipient)
            return True
        return False

    def _check_original(self, recipient: str) -> None:
        """Warn once if the original's watermark file for this panel moved since register:
        the original polls the same panel, and a shared table cannot stop duplicates."""
        watched = self._originals.get(recipient)
        if watched is None or recipient in self.file.warned:
            return
        path, seen = watched
        if _stat_key(path) != seen:
            evidence = f"the original's watermark file {path} changed while this host runs"
            self.file.warn_once(recipient, shared_consumer_warning(self.file, recipient, evidence))

    async def _read_versions(self) -> Signature:
        return await self._run(
            self.file.read, functools.partial(data_versions, schemas=self._schemas)
        )


def _stat_key(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


@asynccontextmanager
async def open_sqlite_bus(path: Path, opts: BusOptions) -> AsyncIterator[Bus]:
    """Open the bus file at `path` for the block (`peerbus.open_bus` chooses this backend)."""
    limiter = anyio.CapacityLimiter(1)
    file = await anyio.to_thread.run_sync(connect_bus, path, opts, limiter=limiter)
    bus: Bus | None = None
    try:
        bus = Bus(file, limiter)
        yield bus
    finally:
        # Shielded so a cancelled host still closes the file; close itself is quick.
        with anyio.CancelScope(shield=True):
            # The file now: follow_file may have closed the first and opened another.
            current = file if bus is None else bus.file
            await anyio.to_thread.run_sync(close_bus, current, limiter=limiter)
            if bus is not None:  # off the loop: closing an inotify descriptor takes ~9 ms
                await anyio.to_thread.run_sync(bus._changes.close)
