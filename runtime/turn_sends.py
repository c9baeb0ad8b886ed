"""`TurnSends`: the messages a turn queues (`Session.queue_send`), held until the turn commits.

Nothing leaves before the commit: the owner publishes the outbox after the turn, so a turn cut
off and run again does not send twice. The queue opens when a turn begins and closes when its
commit is built; a send queued outside that span is refused, never kept to be lost.
"""

from __future__ import annotations

from typing import Any

from runtime.rows import OutboxDraft, send_label


class TurnSends:
    def __init__(self) -> None:
        self._drafts: list[OutboxDraft] = []
        self._row: int | None = None  # the input row of the turn accepting sends, if any

    def open(self, row_id: int) -> None:
        """A turn whose input is row `row_id` begins: an empty queue that accepts sends."""
        self._drafts, self._row = [], row_id

    def queue(self, recipient: str | None, payload: dict[str, Any], topic: str | None) -> str:
        """Queue one send; the label the model can cite, `<input row id>.<position>`."""
        if self._row is None:
            raise RuntimeError(
                "queue_send is only valid while a turn is in flight (from a tool the turn "
                "calls); outside a turn there is no commit to send with"
            )
        draft = OutboxDraft.new(recipient, payload, topic)  # checks the payload
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
