"""A viewer's read of a SQLite bus file: the `returns` table and, in a file peerbus owns, the
per-recipient receipts beside it (peerbus/sqlite/schema.py).

The file is opened read-only (sqlitekit's `connect`: URI `mode=ro`, `query_only`), so a
viewer can never change it, and never created. A poll asks `PRAGMA data_version` first and
reads only when another connection committed (or every `recheck` seconds, since an expired
lease changes a message's status without a write). A foreign bus keeps its receipts in a
sidecar this view does not open: it shows the contract `status` only. SQL is in sync
functions over the connection; `FileView` runs them on a worker thread, one at a time.
Shaping the rows (`message_flow`, `dead_rows`) is pure.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from peerbus.render import cell_text
from peerbus.view import DEAD, NEWEST, PREVIEW, BusSnapshot, Flow
from sqlitekit.connect import connect

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


def receipt_status(state: str, lease_until: float | None, now: float) -> str:
    """A viewer's word for a receipt state: a lease that ran out is back in the queue."""
    if state == "leased":
        return "claimed" if (lease_until or 0) > now else "queued"
    return {"waiting": "queued", "done": "acked", "failed": "dead"}.get(state, state)


def message_flow(
    messages: Sequence[Sequence[Any]], receipts: Sequence[Sequence[Any]], now: float
) -> list[Flow]:
    """`_MESSAGES` rows and their `_RECEIPTS` rows as a viewer's lines, newest first: one per
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


def dead_rows(rows: Sequence[Sequence[Any]]) -> list[Flow]:
    """`_DEAD` rows as a viewer's lines."""
    out = []
    for ident, who, sender, topic, kind, attempts, reason in rows:
        shown_kind = cell_text(kind) or cell_text(topic) or "-"
        out.append(Flow(int(ident), cell_text(sender), cell_text(who), shown_kind,
                        cell_text(topic), "dead", int(attempts or 0),
                        cell_text(reason)))  # fmt: skip
    return out


def data_version(conn: sqlite3.Connection) -> int:
    row = conn.execute("PRAGMA data_version").fetchone()
    return int(row[0]) if row else 0


def read_snapshot(conn: sqlite3.Connection, now: float) -> BusSnapshot:
    messages = conn.execute(_MESSAGES, (NEWEST,)).fetchall()
    if not conn.execute(_HAS_RECEIPTS).fetchall():
        return BusSnapshot(tuple(message_flow(messages, [], now)))
    receipts: list[Any] = []
    if messages:
        span = (int(messages[-1][0]), int(messages[0][0]))
        receipts = conn.execute(_RECEIPTS, span).fetchall()
    dead = conn.execute(_DEAD, (DEAD,)).fetchall()
    return BusSnapshot(tuple(message_flow(messages, receipts, now)), tuple(dead_rows(dead)))


class FileView:
    """A viewer's reader for a bus file. Get it from `open_file_view`."""

    def __init__(self, conn: sqlite3.Connection, *, recheck: float = 2.0) -> None:
        self._conn = conn
        self._recheck = recheck
        self._version: int | None = None
        self._read_at = 0.0
        self._limiter = anyio.CapacityLimiter(1)  # one thread at a time on the connection

    async def poll(self) -> BusSnapshot | None:
        return await anyio.to_thread.run_sync(self._poll, limiter=self._limiter)

    def _poll(self) -> BusSnapshot | None:
        version = data_version(self._conn)
        now = time.time()
        if version == self._version and now - self._read_at < self._recheck:
            return None
        self._version, self._read_at = version, now
        return read_snapshot(self._conn, now)


@asynccontextmanager
async def open_file_view(path: Path) -> AsyncIterator[FileView]:
    """The bus file at `path`, read-only, for the block."""
    conn = await anyio.to_thread.run_sync(partial(connect, path, busy_timeout=5.0, read_only=True))
    try:
        yield FileView(conn)
    finally:
        # No poll's thread still holds the connection: `run_sync` waits for its thread even
        # when cancelled. Closing a read-only connection does not block, so it is done here,
        # where a cancelled block cannot skip it.
        conn.close()
