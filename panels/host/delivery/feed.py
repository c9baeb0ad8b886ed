"""What a turn is fed: operator input first, then peer messages as fenced data. Pure.

Operator input reaches a panel as bus messages from `operator` addressed to the panel's
operator route, `<panel>@operator`: a route of its own, so the host claims it before the
peer inbox (operator input goes first) and also while the peer inbox is switched off. The
operator's words are the turn's input; peer messages follow, rendered by the bus helper as
untrusted data. Since the route's text is taken as the operator's, a panel never writes to
an operator route (outbox.py refuses the send) and a row there from anyone but `operator`
is dead-lettered unread (life.py). Messages addressed to an earlier epoch of the panel are
flagged in their header by the bus and named again in a note, so they are weighed, not
silently applied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from panels.team import BatchSettings
from peerbus import Message, render_batch

OPERATOR = "operator"
HOST = "host"
OPERATOR_SUFFIX = "@operator"

PEER_ONLY_INSTRUCTION = (
    "New messages from your peers are above. Act on them as your role says. Reply only when "
    "the reply carries new content (never acknowledge an acknowledgement), and make a send "
    "the last action of your turn."
)


def operator_route(panel: str) -> str:
    """The bus recipient that carries operator input to `panel`."""
    return f"{panel}{OPERATOR_SUFFIX}"


def is_operator_route(recipient: str) -> bool:
    """Whether `recipient` is some panel's operator route: only the operator writes there
    (its text is a turn's input as it is, not fenced data), never a panel."""
    return recipient.endswith(OPERATOR_SUFFIX)


# Operator input a turn takes at most, before the peer inbox (within `Limits.per_turn`).
OPERATOR_BATCH = 10


@dataclass(frozen=True)
class Limits:
    max_messages: int  # peer messages
    max_tokens: int
    per_turn: int  # operator and peer messages together: what one turn may answer

    @property
    def operator(self) -> int:
        """The operator input a turn takes at most."""
        return min(OPERATOR_BATCH, self.per_turn)

    def peers(self, operator_taken: int) -> int:
        """The peer messages a turn takes at most beside `operator_taken` operator rows."""
        return max(0, min(self.max_messages, self.per_turn - operator_taken))


def claim_limits(batch: BatchSettings, per_turn: int) -> Limits:
    """What one turn takes. A turn may send `per_turn` messages (sendlimit.py), so it takes
    no more than that, operator input included: each message it takes may need its reply,
    and a reply refused for the turn's limit would be owed to a later turn (followup.py).
    `enabled = false` is the original's `peer_poll_batch = false`: one message a turn."""
    peers = batch.max_messages if batch.enabled else 1
    return Limits(min(peers, per_turn), batch.max_tokens, per_turn)


@dataclass(frozen=True)
class TurnInput:
    text: str
    consumed_ids: tuple[int, ...]
    stale_ids: tuple[int, ...]
    senders: tuple[str, ...]


def operator_text(message: Message) -> str:
    text = message.payload.get("text")
    if isinstance(text, str):
        return text
    return json.dumps(message.payload, ensure_ascii=False, sort_keys=True)


def stale_note(ids: Sequence[int]) -> str:
    listed = ", ".join(str(i) for i in ids)
    return (
        f"Note from the host: message(s) {listed} were addressed to this panel before it "
        "restarted (stale_epoch). Check that they still apply before acting on them."
    )


def compose_turn(
    operator: Sequence[Message], peers: Sequence[Message], *, max_tokens: int | None = None
) -> TurnInput | None:
    """The input of one turn, or None when there is nothing to deliver. A peer payload over
    the batch budget `max_tokens` is cut, with a note (the bus claims the first message of a
    batch whatever its size, so this is what bounds it)."""
    if not operator and not peers:
        return None
    parts = [operator_text(m) for m in sorted(operator, key=lambda m: m.id)]
    stale = tuple(m.id for m in peers if m.stale_epoch)
    if peers:
        parts.append(render_batch(peers, max_tokens=max_tokens))
        if stale:
            parts.append(stale_note(stale))
        if not operator:
            parts.append(PEER_ONLY_INSTRUCTION)
    ids = tuple(sorted(m.id for m in (*operator, *peers)))
    senders = tuple(sorted({m.sender for m in (*operator, *peers)}))
    return TurnInput("\n\n".join(parts), ids, stale, senders)
