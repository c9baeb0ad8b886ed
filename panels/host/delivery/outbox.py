"""A turn's sends: queued in the panel's outbox while the turn runs, on the bus once it is stored.

`TurnOutbox` is the one seam a send goes through during a turn: run_turn builds it as the turn
starts, and `send_message`, `ack_message` (bustools.py) and a watchdog's nudge (dispatch.py)
call its `queue`. The message is checked as the bus would check it (recipient name, payload
size and depth) once, here: the earliest point that knows the bus's caps. The checked copy is
put in the session's outbox (`Session.queue_send`), and the model gets the outbox id at once.
The turn's commit writes the outbox in the same transaction as the turn's rows and the ids it
consumed, so a turn cut off before its commit sends nothing: it runs again, and sends again
only then.

Before a send is queued, the host's limits on what a panel sends are checked (sendlimit.py:
a rate limit, no copies of one text to many panels, no verbatim forwards of a peer's message);
a refused send is a tool error the model reads. A send refused for the turn's own limit is
noted with the turn's commit, and owed to the panel in a follow-up turn (followup.py).

`publish` puts committed entries on the bus in the order they were queued, each under its
idempotency key: a host killed between the bus write and the store's "published" mark
publishes the entry again on its next start, and the bus hands back the id it gave that key
the first time instead of a second copy. The host publishes after every turn and as each
life of a panel starts. The bus checks every submit against its own contract (any program may
write to it), which is what refuses an entry for good when a cap changed since it was queued:
such an entry is marked failed and logged; a busy or unreadable bus leaves the rest for the
next round. Each published entry is also told to the team's loop watch, with the turn that
sent it (its input row id), which is how the message graph links a send to what its turn
consumed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from panels.errors import PanelsError
from panels.host.delivery.feed import HOST, OPERATOR, is_operator_route
from panels.host.delivery.followup import MAX_ROUNDS, UNSENT_META, Owed, Unsent, encode
from panels.host.delivery.sendlimit import SendLimiter, SendRefused
from panels.hostdb.catalogue import (
    AckSent,
    HostEvent,
    MessageQueued,
    MessageSent,
    SendFailed,
    Warned,
)
from peerbus import (
    BusOptions,
    InvalidKeyError,
    InvalidRoleError,
    Message,
    PayloadError,
    PeerbusError,
)
from peerbus.payload import check_role, encode_payload
from runtime.window.rows import OutboxEntry

if TYPE_CHECKING:
    from panels.host.services import HostServices, TurnContext
    from runtime.store.async_store import AsyncTurnStore

BROADCAST = "*"
PREVIEW_CHARS = 160


class NotQueuedError(PanelsError):
    """Raised when a send cannot be queued; the message says why, in words the model can act
    on. The bus tools and the nudge verb turn it into a tool error or a refused verb."""


class Drafts(Protocol):
    """Where a turn's sends wait for its commit: the session's (runtime/turn/sends.py)."""

    def queue_send(
        self, recipient: str | None, payload: dict[str, Any], topic: str | None = None
    ) -> str: ...

    def note_commit(self, key: str, value: str) -> None: ...


@dataclass
class TurnOutbox:
    """The sends of one turn in flight, and all a send may touch: the turn's counters, its
    drafts, the panel's send limits and what it was given lately (for the forward check)."""

    panel: str
    turn: TurnContext
    drafts: Drafts
    limits: SendLimiter
    options: BusOptions  # the caps of the bus the sends go to
    seen: Mapping[int, Message]  # the peer messages given to the panel lately
    emit: Callable[[HostEvent], None]

    def queue(
        self,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        terminal: bool = False,
    ) -> str:
        """Queue a send of this turn; returns its outbox id (raises NotQueuedError)."""
        if recipient is not None and is_operator_route(recipient):
            # Text there is taken as the operator's own words: a panel must not put words there.
            raise NotQueuedError(
                f"{recipient!r} carries the operator's input to a panel; only the operator "
                "writes there. Send to the panel by its name"
            )
        options = self.options
        try:
            if recipient is not None:
                check_role(recipient, field="recipient")
            # The payload's one check on its way: a JSON object within this bus's caps.
            text = encode_payload(
                payload, max_bytes=options.max_payload_bytes, max_depth=options.max_depth
            )
        except (InvalidRoleError, PayloadError) as exc:
            raise NotQueuedError(str(exc)) from None
        turn = self.turn
        try:
            # The host's limits on what a panel sends (sendlimit.py, #44), whatever the model
            # said.
            self.limits.check(
                turn=turn.number,
                recipient=recipient or BROADCAST,
                text=_copyable(payload),
                delivered=_peer_texts(self.seen),
            )
        except SendRefused as exc:
            if exc.per_turn:
                self._owe(recipient or BROADCAST, payload)
            raise NotQueuedError(str(exc)) from None
        try:
            # The checked text decoded: a copy of its own, so what is sent is the payload as
            # it was checked, whatever the caller does with its dict later.
            label = self.drafts.queue_send(recipient, json.loads(text), topic)
        except RuntimeError as exc:  # the turn is being stored
            raise NotQueuedError(str(exc)) from None
        turn.sends += 1
        turn.terminal = turn.terminal or terminal
        self.emit(MessageQueued(panel=self.panel, to=recipient or BROADCAST, outbox=label,
                                topic=topic, terminal=terminal, text=_text(payload)))  # fmt: skip
        return label

    def _owe(self, recipient: str, payload: dict[str, Any]) -> None:
        """Note, with the turn's commit, a send refused for the turn's limit: a follow-up
        turn is owed with it (followup.py), unless this turn is already the last follow-up
        allowed."""
        turn = self.turn
        text = payload.get("text")
        turn.unsent.append(
            Unsent(recipient, text if isinstance(text, str) else json.dumps(payload))
        )
        if turn.follow_up >= MAX_ROUNDS:
            if len(turn.unsent) == 1:
                self.emit(Warned(panel=self.panel, message=(
                    f"this panel's follow-up turn {turn.follow_up} again sent more than a "
                    "turn may; what it could not send is dropped, not owed to another "
                    "turn")))  # fmt: skip
            return
        owed = Owed(turn.follow_up + 1, tuple(turn.unsent))
        self.drafts.note_commit(UNSENT_META, encode(owed))


async def publish(panel: str, store: AsyncTurnStore, host: HostServices) -> int:
    """Publish the panel's committed, unpublished sends in order; returns how many went out."""
    bus, log = host.bus, host.log
    sent = 0
    for entry in await _pending(store, host):
        try:
            ident = await bus.submit(
                panel, entry.recipient, entry.payload, topic=entry.topic, key=entry.key
            )
        except (InvalidRoleError, InvalidKeyError, PayloadError) as exc:
            await store.mark_send_failed(entry.key, str(exc))
            log.emit(SendFailed(panel=panel, to=entry.recipient or BROADCAST,
                                outbox=entry.label, reason=str(exc)))  # fmt: skip
            continue
        except PeerbusError as exc:
            log.emit(Warned(panel=panel, message=f"outbox entry {entry.label} not "
                                                 f"published yet ({exc}); it is tried "
                                                 "again after the next turn"))  # fmt: skip
            break
        log.emit(_published(panel, entry, ident))  # on the bus now: said before a reply
        if host.loops is not None:  # the team's message graph (loops/watch.py)
            host.loops.published(panel, ident, entry.recipient, entry.payload, entry.user_row_id)
        await store.mark_published(entry.key, ident)
        sent += 1
    return sent


async def _pending(store: AsyncTurnStore, host: HostServices) -> list[OutboxEntry]:
    """The sends to publish, in the order they were queued: only those of turns fed from this
    host's buses (an instance also run elsewhere, solo or in another team, keeps that bus's
    sends for its host there). A turn fed from the host's own operator bus (the team's bus is
    foreign) sends on the team's bus too: operator input is the only thing that bus carries."""
    pending = await store.outbox_pending(host.bus.identity)
    # A table made again at the bus's place has a new identity: the sends of turns fed from
    # the table before it are still the team's, published on the new one.
    earlier = await host.bus.earlier_identities()
    sources = [
        *earlier,
        *([host.operator_bus.identity] if host.operator_bus is not host.bus else []),
    ]
    for source in sources:
        pending += await store.outbox_pending(source)
    if sources:
        # An entry of the unknown source comes in every answer: once, by its place in the queue.
        pending = sorted({e.id: e for e in pending}.values(), key=lambda e: e.id)
    return pending


def _published(panel: str, entry: OutboxEntry, ident: int) -> MessageSent | AckSent:
    to = entry.recipient or BROADCAST
    ack_of = entry.payload.get("ack_of")
    if entry.payload.get("type") == "ack" and isinstance(ack_of, int):
        return AckSent(panel=panel, to=to, ack_of=ack_of, id=ident)
    return MessageSent(panel=panel, to=to, id=ident, topic=entry.topic, terminal=False,
                       text=_text(entry.payload), outbox=entry.label)  # fmt: skip


def _copyable(payload: dict[str, Any]) -> str | None:
    """The text a duplicate check compares: a message's (or nudge's) text; None for an ack."""
    text = payload.get("text")
    return text if isinstance(text, str) and payload.get("type") != "ack" else None


def _peer_texts(seen: Mapping[int, Message]) -> list[tuple[str, str]]:
    """(sender, text) of the peer messages the panel was given lately (not the operator's:
    relaying the operator's words is the panel's job)."""
    out = []
    for message in seen.values():
        text = message.payload.get("text")
        if isinstance(text, str) and message.sender not in (OPERATOR, HOST):
            out.append((message.sender, text))
    return out


def _text(payload: dict[str, Any]) -> str:
    text = payload.get("text")
    return text[:PREVIEW_CHARS] if isinstance(text, str) else ""
