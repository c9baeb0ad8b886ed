"""A whole bus as plain values, for `mnemara bus migrate`: what one backend exports and
another imports, receipts, recipients and sent keys included.

Ids and the bus identity travel unchanged, so a panel's store (which records consumed
message ids per bus identity) recognises every message it already consumed after the move:
nothing is delivered twice and nothing is lost. Nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RowDump:
    """One `returns` row: the contract columns and peerbus's two additions."""

    id: int
    agent_role: str | None
    recipient_role: str | None
    task_id: str | None
    payload_json: str | None
    status: str | None
    submitted_at: str | None
    completed_at: str | None = None
    recipient_epoch: int | None = None


@dataclass(frozen=True)
class ReceiptDump:
    """One (message, recipient) delivery state."""

    message_id: int
    recipient: str
    state: str  # leased | waiting | done | failed
    claim_token: str | None
    lease_until: float | None
    available_at: float
    attempts: int
    deliveries: int
    epoch: int | None
    noise: bool
    completed_at: str | None
    reason: str | None


@dataclass(frozen=True)
class RecipientDump:
    recipient: str
    epoch: int
    senders_json: str | None
    noise_acked: int
    registered_at: str
    last_claim_at: str | None
    # SQLite's id watermark; 0 where the backend keeps none (PostgreSQL). Importing 0 is
    # always safe: the receipts say what was delivered.
    watermark: int = 0


@dataclass(frozen=True)
class SentDump:
    """An idempotency key and the id it produced."""

    key: str
    message_id: int
    sent_at: str


@dataclass(frozen=True)
class BusDump:
    bus_id: str
    rows: tuple[RowDump, ...]
    receipts: tuple[ReceiptDump, ...]
    recipients: tuple[RecipientDump, ...]
    sent: tuple[SentDump, ...]

    def summary(self) -> str:
        return (
            f"{len(self.rows)} message(s), {len(self.receipts)} receipt(s), "
            f"{len(self.recipients)} recipient(s), {len(self.sent)} sent key(s)"
        )
