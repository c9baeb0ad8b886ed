"""Tickets for operator input: submitting input returns one; it completes when its turn ends.

The input verb puts the words on the panel's operator route and opens a ticket for the
message id. When a turn takes the message (`delivered`), the ticket learns the turn's
number; when that turn ends (`ended`), the ticket completes with the turn's outcome. A
message the turn store had already consumed (a redelivery after a crash) completes at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field

import anyio

CAPACITY = 1_000


@dataclass
class Ticket:
    panel: str
    message_id: int
    turn: int | None = None
    outcome: str | None = None  # done, failed, stopped, refused; None while waiting
    error: str | None = None
    _finished: anyio.Event = field(default_factory=anyio.Event, repr=False)

    @property
    def done(self) -> bool:
        return self.outcome is not None

    async def wait(self) -> Ticket:
        """Until the turn that took the input has ended."""
        await self._finished.wait()
        return self

    def _finish(self, outcome: str, error: str | None) -> None:
        self.outcome, self.error = outcome, error
        self._finished.set()


class Tickets:
    """Every open ticket of a host, by message id (bounded: the oldest are forgotten)."""

    def __init__(self) -> None:
        self._by_id: OrderedDict[int, Ticket] = OrderedDict()

    def open(self, panel: str, message_id: int) -> Ticket:
        ticket = Ticket(panel, message_id)
        self._by_id[message_id] = ticket
        while len(self._by_id) > CAPACITY:
            self._by_id.popitem(last=False)
        return ticket

    def get(self, message_id: int) -> Ticket | None:
        return self._by_id.get(message_id)

    def delivered(self, panel: str, ids: Iterable[int], turn: int) -> None:
        for ident in ids:
            ticket = self._by_id.get(ident)
            if ticket is not None and ticket.panel == panel and not ticket.done:
                ticket.turn = turn

    def ended(self, panel: str, turn: int, outcome: str, error: str | None) -> None:
        for ident, ticket in list(self._by_id.items()):
            if ticket.panel == panel and ticket.turn == turn and not ticket.done:
                ticket._finish(outcome, error)
                del self._by_id[ident]

    def already_done(self, ids: Iterable[int]) -> None:
        """Messages a turn had consumed before (a redelivery): their tickets are done."""
        for ident in ids:
            ticket = self._by_id.pop(ident, None)
            if ticket is not None and not ticket.done:
                ticket._finish("done", None)
