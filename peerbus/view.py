"""What a viewer sees of a bus: the newest messages, one line per recipient, and the dead letters.

`open_view(location)` (peerbus/__init__.py) gives a `BusView` for an `async with` block; its
`poll()` returns a `BusSnapshot`, or None when nothing changed since the last poll. Nothing is
claimed, leased or written: a viewer runs beside the panels at any time, and a retry goes to
the host as a verb.

A SQLite file is read through a read-only connection of the view's own (peerbus/sqlite/view.py),
which in a file peerbus owns also reads the per-recipient receipts beside `returns`. Any other
bus (PostgreSQL) is read through the bus contract (`BackendView`): the newest rows with their
contract status, and the dead letters; a panel's per-message state there is what
`mnemara bus inbox` shows.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from peerbus.backend import BusBackend
from peerbus.model import DeadLetter, Record
from peerbus.render import cell_text

NEWEST = 200  # messages shown
DEAD = 100  # dead letters shown
PREVIEW = 200  # characters of a payload read


@dataclass(frozen=True)
class Flow:
    """One message to one recipient, as a viewer lists it."""

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


class BusView(Protocol):
    async def poll(self) -> BusSnapshot | None:
        """The messages and dead letters now; None when nothing changed since the last poll
        (read again anyway every few seconds: an expired lease changes a message's status
        without a write)."""
        ...


def record_flow(records: Sequence[Record]) -> list[Flow]:
    """Rows read through the bus contract as a viewer's lines, newest first."""
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
    try:
        value = json.loads(text[: PREVIEW * 50])
    except ValueError:
        return ""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else ""


class BackendView:
    """A viewer's reader for a bus reached through its backend (PostgreSQL)."""

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
