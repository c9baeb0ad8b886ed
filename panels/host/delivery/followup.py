"""What a turn could not send for its own limit, owed to the panel as a follow-up turn.

A turn may send `per_turn` messages (sendlimit.py). The claim never takes more than that
(feed.py), but a model may still send two for one; the sends past the limit are refused
as tool errors whose words promise a later turn. This module keeps the promise. Each send
refused for the turn's limit is noted with the turn's commit (a meta value of the panel's
store, written in the turn's own transaction, `Session.note_commit`), so a follow-up is owed
exactly when the turn is consumed: a turn that fails or dies before its commit owes nothing
(it runs again). Before it claims anything, the panel's next turn is the follow-up: a host
note listing what was not sent, consuming no message. Its commit clears the note, or notes
its own refusals one round more; past `MAX_ROUNDS` nothing more is owed (a warning says so),
since a model that keeps sending more than a turn may is not helped by more turns. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

UNSENT_META = "unsent_sends"  # the store's meta key
# The label of a follow-up turn's input row: it consumes no message, so a later try of the
# note replaces an interrupted one by this label (TurnStore.begin_turn).
FOLLOW_UP_LABEL = "host follow-up note"
# Set in a follow-up turn's commit, cleared once its turn_committed event is on disk: a
# follow-up consumes no message, so nothing is redelivered after a kill between the two, and
# the next life logs the turn from this mark instead (life.py).
UNLOGGED_META = "follow_up_unlogged"
MAX_ROUNDS = 3
TEXT_CHARS = 2_000  # of each unsent message, in the note
MAX_LISTED = 50


@dataclass(frozen=True)
class Unsent:
    recipient: str
    text: str


@dataclass(frozen=True)
class Owed:
    """The sends a committed turn could not make; `round` counts follow-ups (1: the first)."""

    round: int
    unsent: tuple[Unsent, ...]


def encode(owed: Owed) -> str:
    items = [{"to": u.recipient, "text": u.text[:TEXT_CHARS]} for u in owed.unsent[:MAX_LISTED]]
    return json.dumps({"round": owed.round, "unsent": items}, sort_keys=True, ensure_ascii=False)


def decode(value: str | None) -> Owed | None:
    """The follow-up owed, or None (nothing noted, cleared, or a value this cannot read:
    a follow-up is a courtesy to the model, never worth a panel that cannot start)."""
    if not value:
        return None
    try:
        data = json.loads(value)
        unsent = tuple(Unsent(str(u["to"]), str(u["text"])) for u in data["unsent"])
        owed = Owed(int(data["round"]), unsent)
    except (ValueError, TypeError, KeyError):
        return None
    return owed if owed.unsent else None


def note_text(owed: Owed, per_turn: int) -> str:
    """The follow-up turn's input: what was not sent, and how much this turn may send."""
    lines = [
        f"Note from the host: your last turn tried to send more than the {per_turn} messages "
        "one turn may send, and these were not sent:",
        *(f"- to {u.recipient}: {u.text}" for u in owed.unsent),
        f"Send those that are still needed now (at most {per_turn} in this turn); leave out "
        "any that no longer apply.",
    ]
    return "\n".join(lines)
