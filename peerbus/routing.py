"""Deciding what a claim does with each candidate row: deliver, auto-ack, or dead-letter.

Pure: the SQL layer fetches candidate rows in id order and applies the plan. Rows are
judged one by one; a bad row (unparseable, too deep, not an object, over the size cap, or
one whose turn already failed `max_attempts` times) is dead-lettered with its reason and
never stops the rows after it. Protocol noise is acked without a turn. Everything else,
known type or not, is delivered, until the batch reaches `max_messages` or `max_tokens`.

`attempts` counts failures only: the turns that failed on the message and gave it back
with `nack(count=True)`. A delivery cut off by the host's death, an expired lease, a
restart's release or a batch given back untouched says nothing about the message and does
not count, so kill -9 can redeliver a message any number of times without dead-lettering
it. The consumer normally dead-letters on its own terms (`settle.fail`); the
`max_attempts` rule here is the backstop, and `isolate_after` delivers a message that
failed before alone.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from peerbus.model import BusOptions, Message
from peerbus.payload import Refusal, check_role, decode_payload
from peerbus.render import message_tokens


@dataclass(frozen=True)
class Candidate:
    """A row that the claim query found claimable for one recipient."""

    id: int
    sender: str
    recipient: str | None
    topic: str | None
    payload_json: str | None
    nbytes: int | None
    submitted_at: str
    recipient_epoch: int | None
    attempts: int  # turns that failed on it for this recipient (crashes do not count)


@dataclass(frozen=True)
class Budget:
    max_messages: int
    max_tokens: int


@dataclass(frozen=True)
class Plan:
    deliver: tuple[Message, ...] = ()
    noise: tuple[tuple[int, str], ...] = ()  # (id, type)
    failed: tuple[tuple[int, str], ...] = ()  # (id, reason)
    # True when the plan stopped at the budget: the rows after it were not looked at.
    full: bool = False
    examined: int = 0


@dataclass
class _Builder:
    deliver: list[Message] = field(default_factory=list)
    noise: list[tuple[int, str]] = field(default_factory=list)
    failed: list[tuple[int, str]] = field(default_factory=list)
    tokens: int = 0
    isolated: bool = False


def noise_type(payload: dict[str, object], silent_types: frozenset[str]) -> str | None:
    """The payload's type if it is protocol noise; None for anything to deliver."""
    kind = payload.get("type")
    return kind if isinstance(kind, str) and kind in silent_types else None


def plan_claim(
    candidates: Iterable[Candidate], *, epoch: int, budget: Budget, options: BusOptions
) -> Plan:
    """What to do with `candidates` (in id order) for a claim at `epoch`."""
    b = _Builder()
    examined = 0
    for row in candidates:
        if row.attempts >= options.max_attempts:
            b.failed.append((row.id, f"its turn failed {row.attempts} times"))
            examined += 1
            continue
        decoded = decode_payload(
            row.payload_json,
            row.nbytes,
            max_bytes=options.max_payload_bytes,
            max_depth=options.max_depth,
        )
        if isinstance(decoded, Refusal):
            b.failed.append((row.id, decoded.reason))
            examined += 1
            continue
        kind = noise_type(decoded, options.silent_types)
        if kind is not None:
            b.noise.append((row.id, kind))
            examined += 1
            continue
        message = _message(row, decoded, epoch)
        cost = message_tokens(message)
        isolate = row.attempts >= options.isolate_after
        if b.deliver and (
            b.isolated
            or isolate
            or len(b.deliver) >= budget.max_messages
            or b.tokens + cost > budget.max_tokens
        ):
            return _plan(b, full=True, examined=examined)
        # The first message always goes, even over the token budget: holding it back
        # would block the recipient's queue for good.
        b.deliver.append(message)
        b.tokens += cost
        b.isolated = isolate
        examined += 1
    return _plan(b, full=False, examined=examined)


def _message(row: Candidate, payload: dict[str, object], epoch: int) -> Message:
    stale = row.recipient_epoch is not None and row.recipient_epoch < epoch
    return Message(
        id=row.id,
        sender=row.sender,
        recipient=row.recipient,
        topic=row.topic,
        payload=payload,
        submitted_at=row.submitted_at,
        attempt=row.attempts + 1,
        recipient_epoch=row.recipient_epoch,
        stale_epoch=stale,
    )


def _plan(b: _Builder, *, full: bool, examined: int) -> Plan:
    return Plan(tuple(b.deliver), tuple(b.noise), tuple(b.failed), full, examined)


@dataclass(frozen=True)
class Route:
    """One recipient and the senders whose broadcasts it takes (None: every sender)."""

    recipient: str
    senders: tuple[str, ...] | None

    @classmethod
    def of(cls, recipient: str, senders: Collection[str] | None) -> Route:
        check_role(recipient, field="recipient")
        if senders is None:
            return cls(recipient, None)
        if isinstance(senders, str):
            senders = [s for s in senders.split(",") if s.strip()]
        return cls(
            recipient, tuple(sorted({check_role(s.strip(), field="sender") for s in senders}))
        )

    @property
    def senders_json(self) -> str | None:
        return None if self.senders is None else json.dumps(list(self.senders))

    def params(self, after: int) -> dict[str, object]:
        return {
            "me": self.recipient,
            "after": after,
            "all_senders": 1 if self.senders is None else 0,
            "senders": self.senders_json or "[]",
        }
