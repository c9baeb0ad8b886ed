"""An external agent on the team's bus: what `send`, `inbox`, `ack`, `wait` and `dead_letters`
do, under the same rules as a panel's deliveries.

- `send` submits under the client's idempotency key (rules.py): a retried call hands back
  the ids of the first and writes nothing.
- `inbox` claims the agent's messages with a lease and keeps each claim until its messages
  are acknowledged. Messages the client never acknowledges (it crashed, it disconnected
  before the answer reached it) come back when the lease ends; when the server stops, what
  it still holds is given back at once, counting nothing against the messages.
- `ack` settles ids with the claim that holds them; an id the bus handed to a later claim
  (the lease ran out) is reported `lost`: it comes again on the next `inbox`.
- `wait` parks on the bus's change waiter for this recipient until a message is claimable or
  the timeout passes. A lease that ends writes nothing, so while messages are leased the
  waiter also looks again every LEASE_RECHECK seconds (the bus's own backstop interval).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from panels.host.delivery.externals import HEARS, register_externals
from panels.mcp.rules import (
    Admission,
    ToolRefused,
    dead_letter_item,
    ids_of,
    message_item,
    number,
    plan_send,
)
from peerbus import BusBackend, Claim

LEASE = 300.0  # seconds an inbox claim holds its messages, unless the call says otherwise
MAX_LEASE = 3600.0
MAX_WAIT = 300.0  # the longest `wait`, in seconds
LEASE_RECHECK = 2.0  # seconds a `wait` sleeps at most before it looks for ended leases
CLAIM_TOKENS = 200_000  # a claim's token budget: the client reads what it is given in full
RELEASE_WAIT = 5.0  # seconds the server's last give-back may take while it stops


class Participant:
    """One admitted external agent on an open bus. Safe to call from several tasks (several
    HTTP sessions of one server): claims and acks take turns."""

    def __init__(
        self,
        bus: BusBackend,
        admission: Admission,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.bus = bus
        self.admission = admission
        self.clock = clock
        self.held: dict[int, Claim] = {}  # message id -> the claim holding it
        self._settling = anyio.Lock()

    @property
    def name(self) -> str:
        return self.admission.name

    async def send(self, args: Mapping[str, Any]) -> dict[str, Any]:
        planned = plan_send(
            self.admission,
            to=args.get("to"),
            text=args.get("text"),
            key=args.get("key"),
            topic=args.get("topic"),
        )
        ids = await self.bus.submit_many(self.name, list(planned))
        return {"sent": [{"to": m.recipient, "id": i} for m, i in zip(planned, ids, strict=True)]}

    async def inbox(self, args: Mapping[str, Any]) -> dict[str, Any]:
        limit = int(number(args, "limit", 20, 1, 100))
        lease = number(args, "lease_seconds", LEASE, 5, MAX_LEASE)
        async with self._settling:
            claim = await self.bus.claim(
                self.name, senders=HEARS, max_messages=limit, max_tokens=CLAIM_TOKENS, lease=lease
            )
            for message in claim.messages:
                self.held[message.id] = claim
        said: dict[str, Any] = {"messages": [message_item(m) for m in claim.messages]}
        if claim.messages:
            said["note"] = f"ack the ids you have read; the others come back after {lease:g} s"
        if claim.dead_letters:
            said["dead_lettered"] = [ident for ident, _ in claim.dead_letters]
        return said

    async def ack(self, args: Mapping[str, Any]) -> dict[str, Any]:
        ids = ids_of(args)
        unknown = [i for i in ids if i not in self.held]
        if len(unknown) == len(ids):
            raise ToolRefused(
                f"message{'s' if len(ids) > 1 else ''} {', '.join(map(str, ids))} "
                "not held by this server: ack only ids `inbox` gave you since it started "
                "(messages whose lease ended come again on the next `inbox`)"
            )
        acked: list[int] = []
        lost: list[int] = []
        async with self._settling:
            by_claim: dict[str, tuple[Claim, list[int]]] = {}
            for ident in ids:
                claim = self.held.get(ident)
                if claim is not None:
                    by_claim.setdefault(claim.token, (claim, []))[1].append(ident)
            for claim, group in by_claim.values():
                result = await self.bus.ack(claim, only=group)
                acked += result.settled
                lost += result.lost
                for ident in group:
                    self.held.pop(ident, None)
        said: dict[str, Any] = {"acked": sorted(acked)}
        if lost:
            said["lost"] = sorted(lost)
            said["note"] = "the lost ids' lease had ended: they come again on the next inbox"
        if unknown:
            said["unknown"] = unknown
        return said

    async def wait(self, args: Mapping[str, Any]) -> dict[str, Any]:
        timeout = number(args, "timeout_seconds", 30, 0, MAX_WAIT)
        deadline = self.clock() + timeout
        while True:
            since = await self.bus.generation(recipient=self.name)
            ready, leased = await self.counts()
            left = deadline - self.clock()
            if ready or left <= 0:
                return {"waiting": ready}
            # A lease that ends (a client that never acked) is no write: nothing wakes the
            # waiter for it, so while some are leased they are looked at every LEASE_RECHECK.
            nap = min(left, LEASE_RECHECK) if leased else left
            await self.bus.wait_for_change(nap, recipient=self.name, since=since)

    async def counts(self) -> tuple[int, int]:
        """(messages an `inbox` would hand out now, messages leased to some claim)."""
        pending = await self.bus.inbox(self.name, senders=HEARS)
        states = [p.state for p in pending]
        return states.count("new"), states.count("leased")

    async def dead_letters(self, args: Mapping[str, Any]) -> dict[str, Any]:
        limit = int(number(args, "limit", 20, 1, 100))
        letters = await self.bus.dead_letters(recipient=self.name, limit=limit)
        return {"dead_letters": [dead_letter_item(d) for d in letters]}

    async def release(self) -> None:
        """Give back every message still held, counting nothing: they come again at once."""
        async with self._settling:
            claims = {claim.token: claim for claim in self.held.values()}
            for claim in claims.values():
                ids = [i for i, c in self.held.items() if c.token == claim.token]
                await self.bus.nack(claim, only=ids, count=False)
            self.held.clear()


@asynccontextmanager
async def open_participant(bus: BusBackend, admission: Admission) -> AsyncIterator[Participant]:
    """The agent registered on `bus` for the block; what it holds is given back at the end."""
    await register_externals(bus, [admission.name], consumer=True)
    participant = Participant(bus, admission)
    try:
        yield participant
    finally:
        # Shielded so a cancelled server still gives its claims back; bounded so a stuck
        # bus cannot hold the exit (the leases end by themselves then).
        with anyio.move_on_after(RELEASE_WAIT, shield=True):
            await participant.release()
