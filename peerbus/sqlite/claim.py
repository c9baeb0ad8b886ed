"""Claiming a batch: lease a recipient's next messages, auto-ack noise, dead-letter bad rows.

A claim first asks, in a plain read, whether anything is claimable, so idle recipients
never take the write lock. Then, in one BEGIN IMMEDIATE transaction, it reads candidate
rows in id order (lazily: a 10,000-row burst is not loaded at once), plans with the pure
`routing.plan_claim`, and writes leases, noise acks and dead letters. A transaction looks at
no more than SCAN_CAP rows, so a burst of noise is worked off in short transactions that
let other writers in, until the claim has something to deliver or nothing is left. The
claim reports what every one of those steps dead-lettered (`Claim.dead_letters`).

Leasing a row counts a delivery (`deliveries`), never an attempt: `attempts` counts only
the turns that failed on the row (`settle.nack(count=True)`), so a delivery cut off by the
host's death does not bring the row closer to `max_attempts` (see routing.py).
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from itertools import islice

from peerbus.model import Claim
from peerbus.routing import Budget, Candidate, Plan, Route, plan_claim
from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.candidates import claimable_sql
from peerbus.sqlite.compat import flush_status
from peerbus.sqlite.receipts import advance_watermark, ensure_recipient, finish

log = logging.getLogger("peerbus")

SCAN_CAP = 1000


@dataclass(frozen=True)
class _Step:
    plan: Plan
    epoch: int
    more: bool


def claim_batch(
    bus: BusFile,
    recipient: str,
    *,
    senders: Collection[str] | None = None,
    max_messages: int = 50,
    max_tokens: int = 20_000,
    lease: float = 300.0,
    generation: int = 0,
) -> Claim:
    """Lease the recipient's next batch. An empty claim still reports noise and dead letters."""
    route = Route.of(recipient, senders)
    budget = Budget(max(1, max_messages), max(1, max_tokens))
    token = uuid.uuid4().hex
    noise = 0
    dead: list[tuple[int, str]] = []
    epoch = 0
    flush_status(bus)  # finish a foreign-status write a crash interrupted (compat only)
    while True:
        now = bus.now()
        if not bus.read(functools.partial(_anything_claimable, bus=bus, route=route, now=now)):
            break
        step = bus.write(
            functools.partial(
                _claim_step, bus=bus, route=route, budget=budget, token=token, lease=lease, now=now
            )
        )
        epoch = step.epoch
        if step.plan.noise:
            flush_status(bus)  # noise acks to the foreign table, in their own transaction
        noise += len(step.plan.noise)
        dead += step.plan.failed
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
    if epoch == 0:
        epoch = bus.read(lambda c: _epoch_of(c, bus, recipient))
    return Claim(token, recipient, epoch, (), noise, len(dead), 0.0, generation, tuple(dead))


def _epoch_of(conn: sqlite3.Connection, bus: BusFile, recipient: str) -> int:
    row = conn.execute(
        f"SELECT epoch FROM {bus.state}.peerbus_recipients WHERE recipient = ?", (recipient,)
    ).fetchone()
    return 1 if row is None else int(row[0])


def _watermark(conn: sqlite3.Connection, bus: BusFile, recipient: str) -> int:
    row = conn.execute(
        f"SELECT watermark FROM {bus.state}.peerbus_recipients WHERE recipient = ?",
        (recipient,),
    ).fetchone()
    return 0 if row is None else int(row[0])


def _params(
    conn: sqlite3.Connection, bus: BusFile, route: Route, now: float, limit: int
) -> dict[str, object]:
    params = route.params(_watermark(conn, bus, route.recipient))
    params.update(now=now, cap=bus.options.max_payload_bytes, limit=limit)
    return params


def _anything_claimable(conn: sqlite3.Connection, bus: BusFile, route: Route, now: float) -> bool:
    row = conn.execute(claimable_sql(bus), _params(conn, bus, route, now, 1)).fetchone()
    return row is not None


def _candidates(cursor: sqlite3.Cursor) -> Iterator[Candidate]:
    for row in cursor:
        text = row[4]
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                text = None
        yield Candidate(
            id=int(row[0]),
            sender=str(row[1]),
            recipient=None if row[2] is None else str(row[2]),
            topic=None if row[3] is None else str(row[3]),
            payload_json=text if isinstance(text, str) else None,
            nbytes=None if row[5] is None else int(row[5]),
            submitted_at=str(row[6]),
            recipient_epoch=None if row[7] is None else int(row[7]),
            attempts=int(row[8]),
        )


def _claim_step(
    conn: sqlite3.Connection,
    bus: BusFile,
    route: Route,
    budget: Budget,
    token: str,
    lease: float,
    now: float,
) -> _Step:
    epoch = ensure_recipient(conn, bus, route, now)
    cursor = conn.execute(claimable_sql(bus), _params(conn, bus, route, now, SCAN_CAP))
    try:
        plan = plan_claim(
            islice(_candidates(cursor), SCAN_CAP), epoch=epoch, budget=budget, options=bus.options
        )
    finally:
        cursor.close()
    if plan.deliver:
        # A claim counts a delivery, not an attempt: only a failed turn's nack does that.
        conn.executemany(
            f"""INSERT INTO {bus.state}.peerbus_receipts
                    (message_id, recipient, state, claim_token, lease_until, deliveries, epoch)
                VALUES (?, ?, 'leased', ?, ?, 1, ?)
                ON CONFLICT (message_id, recipient) DO UPDATE SET
                    state = 'leased', claim_token = excluded.claim_token,
                    lease_until = excluded.lease_until, deliveries = deliveries + 1,
                    epoch = excluded.epoch""",
            [(m.id, route.recipient, token, now + lease, epoch) for m in plan.deliver],
        )
    if plan.noise:
        finish(
            conn,
            bus,
            route.recipient,
            [(i, None) for i, _ in plan.noise],
            state="done",
            now=now,
            noise=True,
        )
        conn.execute(
            f"""UPDATE {bus.state}.peerbus_recipients SET noise_acked = noise_acked + ?
                 WHERE recipient = ?""",
            (len(plan.noise), route.recipient),
        )
        log.info(
            "auto-acked %d protocol-noise message(s) for %s: %s",
            len(plan.noise),
            route.recipient,
            ", ".join(f"{i} ({t})" for i, t in plan.noise),
        )
    if plan.failed:
        finish(conn, bus, route.recipient, plan.failed, state="failed", now=now)
        for mid, reason in plan.failed:
            log.warning("dead-lettered message %d for %s: %s", mid, route.recipient, reason)
    if plan.noise or plan.failed:
        advance_watermark(conn, bus, route.recipient)
    more = not plan.full and plan.examined >= SCAN_CAP
    return _Step(plan, epoch, more)
