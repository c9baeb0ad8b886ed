"""The bus pane's read side: the newest messages of the team's bus and its dead letters.

A SQLite bus file (host meta `bus`) is opened read-only (URI `mode=ro`), so the viewer can
never change it; a retry goes to the host as a verb. A poll asks `PRAGMA data_version` first and
reads only when another connection committed (or every `recheck` seconds, since an expired
lease changes a message's status without a write). What it reads is the `returns` table and,
in a bus file peerbus owns, the per-recipient receipts beside it (peerbus/schema.py). A
foreign bus keeps its receipts in a sidecar this view does not open: it shows the contract
`status` only. The shaping of rows into what the pane shows is a pure function (`flow`).

A PostgreSQL bus is read through peerbus's own contract (`BackendView`): the newest rows
with their contract status, and the dead letters; a panel's per-message state is what
`mnemara bus inbox` shows.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiosqlite
import anyio

from peerbus import BusBackend, DeadLetter, Record, open_bus, parse_location
from peerbus.render import cell_text

NEWEST = 200  # messages shown
DEAD = 100  # dead letters shown
PREVIEW = 200  # characters of a payload read

# The payload's `type` when it is a JSON object that has one; a short preview otherwise.
_TYPE = "CASE WHEN json_valid(payload_json) THEN json_extract(payload_json, '$.type') END"
_MESSAGES = f"""SELECT id, agent_role, recipient_role, task_id, status, {_TYPE},
                       substr(payload_json, 1, {PREVIEW})
                  FROM main.returns ORDER BY id DESC LIMIT ?"""
# `deliveries`: the claims that handed it out (`attempts` leaves out the one that gave up).
_RECEIPTS = """SELECT message_id, recipient, state, deliveries, lease_until, reason
                 FROM main.peerbus_receipts WHERE message_id >= ? AND message_id <= ?"""
_DEAD = f"""SELECT d.message_id, d.recipient, r.agent_role, r.task_id, {_TYPE}, d.deliveries,
                   d.reason
              FROM main.peerbus_receipts AS d JOIN main.returns AS r ON r.id = d.message_id
             WHERE d.state = 'failed' ORDER BY d.message_id DESC LIMIT ?"""
_HAS_RECEIPTS = (
    "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'peerbus_receipts'"
)


@dataclass(frozen=True)
class Flow:
    """One message to one recipient, as the pane lists it."""

    id: int
    sender: str
    recipient: str  # "*" for a broadcast no recipient has taken yet
    kind: str  # the payload's type, or the topic, or "-"
    topic: str
    status: str  # queued | claimed | acked | dead
    attempts: int  # times it was handed out to the recipient
    reason: str = ""


@dataclass(frozen=True)
class BusSnapshot:
    flow: tuple[Flow, ...] = ()  # newest first
    dead: tuple[Flow, ...] = ()  # newest first


def receipt_status(state: str, lease_until: float | None, now: float) -> str:
    """The pane's word for a receipt state: a lease that ran out is back in the queue."""
    if state == "leased":
        return "claimed" if (lease_until or 0) > now else "queued"
    return {"waiting": "queued", "done": "acked", "failed": "dead"}.get(state, state)


def flow(
    messages: Sequence[Sequence[Any]], receipts: Sequence[Sequence[Any]], now: float
) -> list[Flow]:
    """`_MESSAGES` rows and their `_RECEIPTS` rows as the pane's lines, newest first: one per
    recipient that has a receipt, else one for the message as the contract column has it."""
    by_message: dict[int, list[Sequence[Any]]] = {}
    for receipt in receipts:
        by_message.setdefault(int(receipt[0]), []).append(receipt)
    out = []
    for ident, sender, recipient, topic, status, kind, preview in messages:
        shown_kind = cell_text(kind) or cell_text(topic) or ("?" if not cell_text(preview) else "-")
        base = Flow(int(ident), cell_text(sender), cell_text(recipient) or "*", shown_kind,
                    cell_text(topic), "acked" if status == "done" else "queued", 0)  # fmt: skip
        taken = by_message.get(int(ident), [])
        if not taken:
            out.append(base)
        for _, who, state, attempts, until, reason in sorted(taken, key=lambda r: str(r[1])):
            out.append(Flow(base.id, base.sender, cell_text(who), base.kind, base.topic,
                            receipt_status(str(state), until, now), int(attempts or 0),
                            cell_text(reason)))  # fmt: skip
    return out


def dead_letters(rows: Sequence[Sequence[Any]]) -> list[Flow]:
    """`_DEAD` rows as the pane's lines."""
    out = []
    for ident, who, sender, topic, kind, attempts, reason in rows:
        shown_kind = cell_text(kind) or cell_text(topic) or "-"
        out.append(Flow(int(ident), cell_text(sender), cell_text(who), shown_kind,
                        cell_text(topic), "dead", int(attempts or 0),
                        cell_text(reason)))  # fmt: skip
    return out


class BusView:
    """One read-only connection to a bus file. Get it from `open_busview`."""

    def __init__(self, conn: aiosqlite.Connection, *, recheck: float = 2.0) -> None:
        self._conn = conn
        self._recheck = recheck
        self._version: int | None = None
        self._read_at = 0.0

    async def poll(self) -> BusSnapshot | None:
        """The messages and dead letters now; None when nothing changed since the last poll."""
        rows = list(await self._conn.execute_fetchall("PRAGMA data_version"))
        version = int(rows[0][0]) if rows else 0
        now = time.time()
        if version == self._version and now - self._read_at < self._recheck:
            return None
        self._version, self._read_at = version, now
        return await self.read(now)

    async def read(self, now: float) -> BusSnapshot:
        messages = list(await self._conn.execute_fetchall(_MESSAGES, (NEWEST,)))
        if not list(await self._conn.execute_fetchall(_HAS_RECEIPTS)):
            return BusSnapshot(tuple(flow(messages, [], now)))
        receipts: list[Any] = []
        if messages:
            span = (int(messages[-1][0]), int(messages[0][0]))
            receipts = list(await self._conn.execute_fetchall(_RECEIPTS, span))
        dead = await self._conn.execute_fetchall(_DEAD, (DEAD,))
        return BusSnapshot(tuple(flow(messages, receipts, now)), tuple(dead_letters(list(dead))))


def record_flow(records: Sequence[Record]) -> list[Flow]:
    """Rows read through the bus contract as the pane's lines, newest first."""
    out = []
    for r in sorted(records, key=lambda r: r.id, reverse=True):
        kind = _payload_type(r.payload_json) or cell_text(r.topic) or "-"
        status = "acked" if r.status == "done" else "queued"
        out.append(Flow(r.id, r.sender, r.recipient or "*", kind, cell_text(r.topic), status, 0))
    return out


def dead_flow(letters: Sequence[DeadLetter]) -> list[Flow]:
    out = []
    for d in letters:
        kind = _payload_type(d.payload_json) or cell_text(d.topic) or "-"
        out.append(Flow(d.id, d.sender, d.recipient, kind, cell_text(d.topic), "dead",
                        d.deliveries, d.reason))  # fmt: skip
    return out


def _payload_type(text: str) -> str:
    import json

    try:
        value = json.loads(text[: PREVIEW * 50])
    except ValueError:
        return ""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else ""


class BackendView:
    """The pane's reader for a bus reached through its backend (PostgreSQL)."""

    def __init__(self, bus: BusBackend, *, recheck: float = 2.0) -> None:
        self._bus = bus
        self._recheck = recheck
        self._generation: int | None = None
        self._read_at = 0.0

    async def poll(self) -> BusSnapshot | None:
        generation = await self._bus.generation()
        now = time.time()
        if generation == self._generation and now - self._read_at < self._recheck:
            return None
        self._generation, self._read_at = generation, now
        records = await self._bus.history(limit=NEWEST)
        dead = await self._bus.dead_letters(limit=DEAD)
        return BusSnapshot(tuple(record_flow(records)), tuple(dead_flow(dead)))


@asynccontextmanager
async def open_busview(location: str) -> AsyncIterator[BusView | BackendView]:
    """Open the bus at `location` read-only for the block (a file must exist: never created
    here)."""
    if parse_location(location).scheme == "postgresql":
        async with open_bus(location, inspect_only=True) as bus:
            yield BackendView(bus)
        return
    where = await anyio.Path(location).resolve()
    conn = await aiosqlite.connect(f"{where.as_uri()}?mode=ro", uri=True)
    try:
        await conn.execute_fetchall("PRAGMA busy_timeout = 5000")
        yield BusView(conn)
    finally:
        await conn.close()
