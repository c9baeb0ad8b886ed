"""The PostgreSQL bus: `PgBus`, a `BusBackend` over a server many hosts share.

Every call is one transaction (a claim: one per SCAN_CAP rows read) run by pool.py in a
worker thread, retried on a fresh connection after a dropped one until the lock deadline.
A retried write never applies twice:
- submit: its ids are drawn from the sequence before the write, which inserts exactly
  those ids with ON CONFLICT DO NOTHING (submit.py), keyed or not;
- claim: the retry keeps the claim's token and re-takes the rows leased under it;
- ack, nack, fail, extend: fenced by the token, and what the token already settled that
  way counts as settled (settle.py); prune and retry find their work done;
- register: the epoch may go up by two instead of one, which is harmless.
Changes wake waiters through feed.py (LISTEN/NOTIFY and a bounded floor). Opened by
`open_pg_bus` (opening.py).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Collection
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from peerbus.backend import BusBackend
from peerbus.dump import BusDump
from peerbus.errors import BusConfigError
from peerbus.model import (
    BusOptions,
    BusStats,
    Claim,
    DeadLetter,
    Outgoing,
    Pending,
    Record,
    SettleResult,
    iso,
)
from peerbus.postgres import claim as claim_mod
from peerbus.postgres import dump as dump_mod
from peerbus.postgres import maintenance, queries, settle, submit
from peerbus.postgres.feed import ChangeFeed
from peerbus.postgres.pool import Conn, Pool
from peerbus.postgres.settle import MAX_REASON, targets
from peerbus.routing import Budget, Route

log = logging.getLogger("peerbus")

# Looks again at a recipient whose row another claim holds: 5 ms doubling, ~0.3 s in all.
BUSY_RETRIES = 6


class PgBus:
    """One open PostgreSQL bus. Get one from `open_pg_bus`; share it between panels."""

    def __init__(
        self, pool: Pool, feed: ChangeFeed, *, bus_id: str, version: int, sequence: str
    ) -> None:
        self._pool = pool
        self._feed = feed
        self._bus_id = bus_id
        self._version = version
        self._sequence = sequence
        self._claim_generation: dict[str, int] = {}
        self._last_claim_generation = 0

    scheme = "postgresql"
    mode = "owned"
    notice = None

    @property
    def location(self) -> str:
        return self._pool.location

    @property
    def options(self) -> BusOptions:
        return self._pool.options

    @property
    def identity(self) -> str:
        return self._bus_id

    async def earlier_identities(self) -> tuple[str, ...]:
        return ()  # the bus's tables are its own: never made again under it

    def _now(self) -> float:
        return self._pool.options.clock()

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
        message = Outgoing(recipient, payload, topic, recipient_epoch, key)
        return (await self.submit_many(sender, [message]))[0]

    async def submit_many(self, sender: str, messages: list[Outgoing]) -> list[int]:
        batch = submit.prepare(sender, messages, self.options)
        if not batch:
            return []
        now = self._now()
        # The ids are drawn once and kept across retries (sequences are not rolled back):
        # a retry after a cut-off commit writes exactly the same rows (submit.py).
        drawn: list[list[int | None]] = []

        def work(conn: Conn) -> list[int]:
            if not drawn:
                drawn.append(submit.allocate(conn, self._sequence, batch))
            return submit.write(conn, sender, batch, drawn[0], self._sequence, now)

        result = await self._pool.run(work, durable=self.options.durable)
        self._feed.bump([m.recipient for m in messages])
        return result

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
        """Record a (re)started recipient; returns its epoch. The take-over options concern
        a SQLite table shared with the original mnemara and are refused here."""
        if take_over or start_after is not None or replay_backlog or original_watermark:
            raise BusConfigError(
                "taking a panel over from the original mnemara needs its SQLite table; "
                "a PostgreSQL bus has no history to take over",
                option="take_over",
            )
        now = self._now()
        result = await self._pool.run(
            lambda conn: submit.register(conn, recipient, senders, epoch, now, release=release),
            durable=self.options.durable,
        )
        self._feed.bump([recipient])
        return result

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
        route = Route.of(recipient, senders)
        budget = Budget(max(1, max_messages), max(1, max_tokens))
        token = uuid.uuid4().hex  # kept across retries: see claim.py
        generation = await self._feed.watch(recipient)
        self._claim_generation[recipient] = generation
        self._last_claim_generation = generation
        noise = 0
        dead: list[tuple[int, str]] = []
        busy = 0
        while True:
            now = self._now()
            step = await self._pool.run(
                partial(
                    claim_mod.claim_step, route=route, budget=budget, token=token, lease=lease,
                    now=now, options=self.options,
                )
            )  # fmt: skip
            if step.busy and busy < BUSY_RETRIES:
                # Another claim of this recipient is in flight (another host, or one that
                # overlaps a restart): it takes milliseconds, and whatever it leaves is
                # ours, which no NOTIFY would announce. Look again shortly, then give up
                # with an empty claim rather than wait on its lock.
                await anyio.sleep(0.005 * 2**busy)
                busy += 1
                continue
            noise += len(step.plan.noise)
            dead += step.plan.failed
            if step.broadcasts:
                await self._close_broadcasts(list(step.broadcasts), now)
            if step.plan.deliver or not step.more:
                return Claim(
                    token=token,
                    recipient=recipient,
                    epoch=step.epoch,
                    messages=step.plan.deliver,
                    noise_acked=noise,
                    failed=len(dead),
                    lease_until=now + lease if step.plan.deliver else 0.0,
                    generation=generation,
                    dead_letters=tuple(dead),
                )

    async def _close_broadcasts(self, ids: list[int], now: float) -> None:
        when = iso(now)
        await self._pool.run(lambda conn: settle.close_broadcasts(conn, ids, when))

    async def _finish(
        self, claim: Claim, only: Collection[int] | None, state: str, reason: str | None
    ) -> SettleResult:
        wanted = targets(claim, only)
        if not wanted:
            return SettleResult(())
        now = self._now()

        def work(conn: Conn) -> tuple[SettleResult, list[int]]:
            return settle.finish_leased(conn, claim, wanted, state, iso(now), reason)

        result, finished = await self._pool.run(work)
        for mid in finished if state == "failed" else ():
            log.warning("dead-lettered message %d for %s: %s", mid, claim.recipient, reason)
        broadcasts = {m.id for m in claim.messages if m.recipient is None} & set(finished)
        if broadcasts:
            await self._close_broadcasts(sorted(broadcasts), now)
        return result

    async def ack(self, claim: Claim, *, only: Collection[int] | None = None) -> SettleResult:
        """Ack after the turn that consumed the claim has committed."""
        return await self._finish(claim, only, "done", None)

    async def nack(
        self,
        claim: Claim,
        *,
        delay: float = 0.0,
        only: Collection[int] | None = None,
        count: bool = True,
    ) -> SettleResult:
        wanted = targets(claim, only)
        if not wanted:
            return SettleResult(())
        at = self._now() + max(0.0, delay)

        def work(conn: Conn) -> SettleResult:
            result = settle.give_back(conn, claim, wanted, at, count)
            if delay <= 0 and result.settled:
                submit.notify(conn, [claim.recipient])
            return result

        result = await self._pool.run(work)
        self._feed.bump([claim.recipient])
        return result

    async def fail(
        self, claim: Claim, *, reason: str, only: Collection[int] | None = None
    ) -> SettleResult:
        text = " ".join(str(reason).split())[:MAX_REASON] or "given up by its consumer"
        result = await self._finish(claim, only, "failed", text)
        self._feed.bump([claim.recipient])
        return result

    async def extend(
        self, claim: Claim, *, lease: float = 300.0, only: Collection[int] | None = None
    ) -> SettleResult:
        wanted = targets(claim, only)
        until = self._now() + lease
        if not wanted:
            return SettleResult((), lease_until=until)
        return await self._pool.run(lambda conn: settle.extend_leases(conn, claim, wanted, until))

    async def inbox(
        self, recipient: str, *, senders: Collection[str] | None = None, limit: int = 100
    ) -> list[Pending]:
        route = Route.of(recipient, senders)
        now = self._now()
        return await self._pool.run(lambda conn: queries.inbox(conn, route, now, limit))

    async def history(
        self, *, limit: int = 50, role: str | None = None, after: int | None = None
    ) -> list[Record]:
        return await self._pool.run(partial(queries.history, limit=limit, role=role, after=after))

    async def dead_letters(
        self, *, recipient: str | None = None, limit: int = 100
    ) -> list[DeadLetter]:
        return await self._pool.run(partial(queries.dead_letters, recipient=recipient, limit=limit))

    async def settled(self, recipient: str, ids: Collection[int]) -> set[int]:
        return await self._pool.run(lambda conn: queries.settled(conn, recipient, ids))

    async def stats(self) -> BusStats:
        now = self._now()
        return await self._pool.run(lambda conn: queries.stats(conn, now, self._version))

    async def prune(self, *, older_than: float) -> int:
        cutoff = self._now() - older_than
        total, after = 0, 0
        while True:
            scanned, deleted, after = await self._pool.run(
                partial(maintenance.prune_chunk, cutoff=cutoff, after=after)
            )
            total += deleted
            if scanned < maintenance.CHUNK:
                return total

    async def retry(
        self, *, ids: Collection[int] | None = None, recipient: str | None = None
    ) -> int:
        moved = await self._pool.run(
            lambda conn: maintenance.retry(conn, ids, recipient), durable=self.options.durable
        )
        if moved:
            self._feed.bump([recipient])  # None (every recipient's dead letters): everyone
        return moved

    async def generation(self, *, recipient: str | None = None) -> int:
        """The change counter now; pass it to wait_for_change as `since` before reading.
        With `recipient`, its channel is listened to from here on (claim does the same)."""
        return await self._feed.watch(recipient)

    async def wait_for_change(
        self,
        timeout: float,  # noqa: ASYNC109  # the protocol's parameter (see backend.py)
        *,
        recipient: str | None = None,
        since: int | None = None,
    ) -> bool:
        """Wait until the bus changed after a claim (see BusBackend); False on timeout."""
        if since is None:
            since = self._claim_generation.get(recipient or "", self._last_claim_generation)
        with anyio.move_on_after(timeout):
            await self._feed.wait_past(since, recipient)
            return True
        return False

    async def export_dump(self) -> BusDump:
        """The whole bus as plain values, for `bus migrate`."""
        return await self._pool.run(dump_mod.export)

    async def import_dump(self, dump: BusDump) -> None:
        """Copy `dump` into this bus, which must hold no messages yet (see dump.py)."""
        await self._pool.run(
            lambda conn: dump_mod.import_(conn, dump, self._sequence, self.location),
            durable=True,
        )
        self._bus_id = dump.bus_id or self._bus_id
        self._feed.bump(None)


if TYPE_CHECKING:

    def _is_a_backend(bus: PgBus) -> BusBackend:
        return bus  # mypy checks here that PgBus keeps the whole contract
