"""`TurnSends`: the messages a turn queues (`Session.queue_send`), held until the turn commits.

Nothing leaves before the commit: the owner publishes the outbox after the turn, so a turn cut
off and run again does not send twice. The queue opens when a turn begins and closes when its
commit is built; a send queued outside that span is refused, never kept to be lost.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from runtime.window.rows import OutboxDraft, send_label


class TurnSends:
    def __init__(self) -> None:
        self._drafts: list[OutboxDraft] = []
        self._row: int | None = None  # the input row of the turn accepting sends, if any
        # The owner's notes stored with the commit (store meta), in the same transaction: what
        # the turn leaves owed is recorded exactly when the turn is consumed.
        self.notes: dict[str, str] = {}

    def open(self, row_id: int, notes: Mapping[str, str] | None = None) -> None:
        """A turn whose input is row `row_id` begins: an empty queue that accepts sends, and
        `notes` to store with its commit (more may be noted while it runs)."""
        self._drafts, self._row = [], row_id
        self.notes = dict(notes or {})

    def note(self, key: str, value: str) -> None:
        """Store `value` under the meta `key` with the turn's commit (nothing if it fails)."""
        if self._row is None:
            raise RuntimeError("note_commit is only valid while a turn is in flight")
        self.notes[key] = value

    def queue(self, recipient: str | None, payload: dict[str, Any], topic: str | None) -> str:
        """Queue one send; the label the model can cite, `<input row id>.<position>`."""
        if self._row is None:
            raise RuntimeError(
                "queue_send is only valid while a turn is in flight (from a tool the turn "
                "calls); outside a turn there is no commit to send with"
            )
        draft = OutboxDraft.new(recipient, payload, topic)
        label = send_label(self._row, len(self._drafts))
        self._drafts.append(draft)
        return label

    def close(self) -> tuple[OutboxDraft, ...]:
        """The sends as they will be committed; from now on `queue` refuses, so nothing can be
        queued after the commit and silently never sent."""
        self._row = None
        return tuple(self._drafts)

    def discard(self) -> None:
        self._drafts = []
        self.notes = {}
