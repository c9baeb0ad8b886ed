"""The values the bus hands out and takes in: options, messages, claims, settle results.

Frozen dataclasses, built by the SQL layer and the pure planners; nothing here does I/O.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from peerbus.errors import BusConfigError

Clock = Callable[[], float]
Mode = Literal["owned", "compat"]

# The original's default set of protocol-noise message types, acked without a model turn.
DEFAULT_SILENT_TYPES: frozenset[str] = frozenset(
    {
        "ack",
        "ack_close",
        "ack_close_final",
        "ack_thread_terminal",
        "ack_close_2",
        "pong_ack",
        "thread_close",
        "thread_close_final",
    }
)


@dataclass(frozen=True)
class BusOptions:
    """How one opened bus behaves. Loaded once by the caller and passed down."""

    silent_types: frozenset[str] = DEFAULT_SILENT_TYPES
    max_payload_bytes: int = 256 * 1024
    # Payloads nested deeper than this are dead-lettered (and refused by submit): the
    # renderer and json.dumps recurse, and no real message needs more.
    max_depth: int = 64
    # A message whose turn failed this many times (nacks with count=True) is dead-lettered
    # at its next claim. Deliveries cut off by a crash or an expired lease do not count.
    max_attempts: int = 5
    # A message whose turn failed this many times is delivered alone, so one poison
    # message cannot keep taking its batch-mates down with it.
    isolate_after: int = 2
    busy_timeout: float = 5.0
    # Past busy_timeout a write is retried with back-off until this many seconds have passed.
    lock_deadline: float = 60.0
    # synchronous=FULL for submits: a submit that returned survives power loss, not only a
    # process crash. Claims and acks commit with NORMAL either way (see BusFile.write).
    durable: bool = True
    # Change detection. Waiters sleep on inotify (signals.py, sqlitekit/waiter.py); without
    # it they stat their files every poll_interval. The backstop asks SQLite every
    # backstop_interval while the files move (every 16x that on a quiet bus): the
    # most a writer that touches no signal (a foreign tool, the original mnemara, a crash
    # between commit and touch) waits to be seen.
    poll_interval: float = 0.01
    backstop_interval: float = 2.0
    clock: Clock = time.time
    # Compatibility mode keeps its receipts and watermarks here; default `<db>.peerbus`.
    sidecar: Path | None = None
    # Migrate a foreign `returns` table in place instead of using compatibility mode.
    adopt: bool = False
    # Queue writers on an flock (`<state file>.writers`) before BEGIN IMMEDIATE; see gate.py.
    writer_gate: bool = True
    # Open to look, not to consume (`bus inbox`, `tail`, `stats`): in compatibility mode
    # the sidecar is neither created, migrated nor reset. When it is absent (or belongs to
    # another table) an empty in-memory one stands in, so the table shows its own state.
    inspect_only: bool = False

    def __post_init__(self) -> None:
        if self.max_payload_bytes < 64:
            raise BusConfigError("must be at least 64", option="max_payload_bytes")
        if self.max_depth < 2:
            raise BusConfigError("must be at least 2", option="max_depth")
        if self.max_attempts < 1:
            raise BusConfigError("must be at least 1", option="max_attempts")
        if not 1 <= self.isolate_after <= self.max_attempts:
            raise BusConfigError("must be between 1 and max_attempts", option="isolate_after")
        if self.busy_timeout <= 0 or self.lock_deadline < self.busy_timeout:
            raise BusConfigError("must be > 0 and <= lock_deadline", option="busy_timeout")
        if self.poll_interval <= 0 or self.backstop_interval < self.poll_interval:
            raise BusConfigError("must be > 0 and <= backstop_interval", option="poll_interval")


@dataclass(frozen=True)
class Message:
    """One delivered message. `sender` is the row's agent_role, set by the sender's host."""

    id: int
    sender: str
    recipient: str | None  # None: a broadcast
    topic: str | None
    payload: dict[str, Any]
    submitted_at: str
    # 1 + the turns that failed on this message before: a redelivery after a crash is
    # still attempt 1.
    attempt: int = 1
    # The recipient's epoch the sender addressed; stale when older than the claim's epoch.
    recipient_epoch: int | None = None
    stale_epoch: bool = False

    @property
    def type(self) -> str | None:
        value = self.payload.get("type")
        return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Claim:
    """A leased batch. Ack it after the turn that consumed it has committed."""

    token: str
    recipient: str
    epoch: int
    messages: tuple[Message, ...]
    noise_acked: int = 0
    failed: int = 0
    lease_until: float = 0.0
    # The bus's change counter when the claim started; pass it to wait_for_change.
    generation: int = 0
    # (id, reason) of every row this claim dead-lettered; `failed` is their count.
    dead_letters: tuple[tuple[int, str], ...] = ()

    @property
    def ids(self) -> tuple[int, ...]:
        return tuple(m.id for m in self.messages)


@dataclass(frozen=True)
class SettleResult:
    """What an ack, nack, fail or extend changed. `lost`: ids a newer claim holds now."""

    settled: tuple[int, ...]
    lost: tuple[int, ...] = ()
    lease_until: float | None = None


@dataclass(frozen=True)
class Pending:
    """A message waiting for one recipient, seen without claiming it (the inbox)."""

    id: int
    sender: str
    recipient: str | None
    topic: str | None
    state: Literal["new", "leased", "waiting"]
    attempts: int  # turns that failed on it
    submitted_at: str
    payload_json: str
    deliveries: int = 0  # claims that handed it out, cut-off ones included


@dataclass(frozen=True)
class Record:
    """One row of the table as stored, for history and tail."""

    id: int
    sender: str
    recipient: str | None
    topic: str | None
    status: str
    submitted_at: str
    completed_at: str | None
    payload_json: str


@dataclass(frozen=True)
class DeadLetter:
    """A message given up for one recipient, with the reason."""

    id: int
    recipient: str
    sender: str
    topic: str | None
    reason: str
    attempts: int  # turns that failed on it
    failed_at: str | None
    payload_json: str
    deliveries: int = 0  # claims that handed it out, cut-off ones included


@dataclass(frozen=True)
class RecipientStats:
    recipient: str
    epoch: int
    waiting: int
    leased: int
    done: int
    failed: int
    noise_acked: int
    watermark: int
    last_claim_at: str | None


@dataclass(frozen=True)
class BusStats:
    mode: Mode
    schema_version: int
    rows_by_status: dict[str, int]
    recipients: tuple[RecipientStats, ...] = field(default=())


@dataclass(frozen=True)
class Outgoing:
    """One message to submit. `recipient` None is a broadcast."""

    recipient: str | None
    payload: dict[str, Any]
    topic: str | None = None
    # The recipient epoch this message is meant for; None: the recipient's current epoch.
    recipient_epoch: int | None = None
    # Idempotency key: a second submit with the same key writes nothing, returns the first id.
    key: str | None = None


def iso(ts: float) -> str:
    """A bus timestamp: UTC ISO 8601 with milliseconds, as every backend stores it."""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds")
