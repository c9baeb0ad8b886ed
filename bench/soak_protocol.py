"""Who the soak's panels are and what each owes for what it consumes: the team or the ring.

The driver asks a `Protocol` what a turn sends; the checks ask it which panel owns the
operator's route and which message a consumed one owes (soak_checks.py). Two of them: the
producer and two engineers (soak_driver.py) and the ring of N panels (soak_ring.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from soak_driver import (
    ENGINEERS,
    OP_LINE,
    PRODUCER,
    TASK,
    engineer_for,
    forward_text,
    ops_in,
    plan_sends,
    reply_text,
)
from soak_ring import ring_names, ring_ops, ring_owes, ring_sends, ring_size

from panels.host.delivery.feed import OPERATOR, operator_route

Sends = Callable[[str, str, frozenset[int]], list[tuple[str, str]]]
Owed = tuple[str, str, str]  # (sender, recipient, text)


@dataclass(frozen=True)
class Protocol:
    name: str  # "team" or "ring"
    panels: tuple[str, ...]
    entry: str  # the panel the operator's input goes to
    rows_per_op: int  # bus rows one op makes when nothing is chatty
    sends: Sends  # (panel, turn input, chatty ops) -> (recipient, text) of each send
    ops_in: Callable[[str, str], list[int]]  # (panel, turn input) -> the ops it acts on
    # (sender, recipient, text) of a consumed message -> the message it owes, if any
    owes: Callable[[str, str, str], Owed | None]

    @property
    def operator_route(self) -> str:
        return operator_route(self.entry)

    @property
    def recipients(self) -> tuple[str, ...]:
        """Every recipient a running host consumes for."""
        return (self.operator_route, *self.panels)

    def owner(self, recipient: str | None) -> str | None:
        """The panel that consumes what is sent to `recipient`."""
        return self.entry if recipient == self.operator_route else recipient

    def kind(self, sender: str) -> str:
        """A message's kind, as the checks name it."""
        if sender == OPERATOR:
            return "op"
        return "forward" if (self.name, sender) == ("team", PRODUCER) else "reply"


def _team_owes(sender: str, recipient: str, text: str) -> Owed | None:
    if recipient == operator_route(PRODUCER) and (m := OP_LINE.fullmatch(text)):
        n = int(m[1])
        return PRODUCER, engineer_for(n), forward_text(n)
    if sender == PRODUCER and (m := TASK.fullmatch(text)):
        return recipient, PRODUCER, reply_text(int(m[1]))
    return None


PRODUCER_TEAM = Protocol(
    name="team",
    panels=(PRODUCER, *ENGINEERS),
    entry=PRODUCER,
    rows_per_op=3,
    sends=plan_sends,
    ops_in=ops_in,
    owes=_team_owes,
)


def ring(size: int) -> Protocol:
    names = ring_names(size)
    return Protocol(
        name="ring",
        panels=names,
        entry=names[0],
        rows_per_op=size + 1,
        sends=lambda panel, text, chatty: ring_sends(panel, text, size, chatty),
        ops_in=lambda panel, text: ring_ops(panel, text, size),
        owes=partial(ring_owes, size=size),
    )


def protocol_for(panels: tuple[str, ...]) -> Protocol:
    """The protocol of a soak team, told by its panels' names."""
    size = ring_size(panels)
    return ring(size) if size else PRODUCER_TEAM
