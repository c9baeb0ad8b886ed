"""The host's side of the team graph: feeds it what the host sees, and acts on its verdicts.

`published` is called by the outbox as each send goes on the bus; `turn_ended` by a panel's
`HostChecks.after_turn` with the messages the turn was given. A halting verdict becomes one
team halt record (`source="team"`, the rule, the edge and the message ids) owed to every
panel it names: each panel's `HostChecks` hands it to the guard before its next turn or
call, the way the team budget halts, and the panel is woken so that happens at once rather
than when a message next arrives. A flag is a `LoopFlagged` event in the host's log. Both
stay in `alerts()` for the watchdog's digest. A resume forgives the panel: its owed halt and
what the graph held against it are dropped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from panels.host.delivery import HOST, OPERATOR
from panels.host.loop_rules import LoopVerdict
from panels.host.loops import Sent, TeamGraph, TurnEnd
from panels.hostdb.catalogue import HostEvent, LoopFlagged
from peerbus import Message
from runtime.guard.records import HaltRecord

RECENT = 10  # loop findings the digest shows
PREVIEW = 2000  # characters of a message's text the graph reads (acks and novelty)

# A panel's turn as the loop watch reads it: the turn's key (its input row id) and the
# messages it was given; None when no turn runs.
TurnView = tuple[int | None, Sequence[Message]]


def halt_record(verdict: LoopVerdict, turn: int = 0) -> HaltRecord:
    """The team halt record of a halting verdict: names the edge and the message ids."""
    ids = tuple((f"message_{n}", float(i)) for n, i in enumerate(verdict.message_ids, 1))
    return HaltRecord(
        source="team",
        rule=verdict.rule,
        message=(
            f"{verdict.describe()}; read the exchange, break the loop (a role doc, a task), "
            "then resume the panels"
        ),
        turn=turn,
        at=datetime.now(UTC),
        figures=verdict.figures + ids,
    )


class LoopWatch:
    def __init__(
        self,
        graph: TeamGraph,
        *,
        emit: Callable[[HostEvent], None],
        clock: Callable[[], float],
        wake: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.graph = graph
        self.emit = emit
        self.clock = clock
        self.wake = wake
        self.owed: dict[str, HaltRecord] = {}
        self.recent: deque[LoopVerdict] = deque(maxlen=RECENT)

    def published(
        self,
        panel: str,
        ident: int,
        recipient: str | None,
        payload: Mapping[str, Any],
        turn: int | None,
    ) -> None:
        """A send of `panel` is on the bus as message `ident` (`turn`: its input row id)."""
        kind = payload.get("type")
        reply = payload.get("ack_of", payload.get("reply_to"))
        event = Sent(
            id=ident,
            sender=panel,
            recipient=recipient,
            text=_text(payload),
            kind=kind if isinstance(kind, str) else None,
            reply_to=reply if isinstance(reply, int) else None,
            turn=turn,
            at=self.clock(),
        )
        self._apply(self.graph.sent(event))

    def turn_ended(
        self, panel: str, number: int, view: TurnView, changed_world: bool
    ) -> HaltRecord | None:
        """A turn of `panel` ended; the halt it owes now (this rule or another's), if any."""
        key, messages = view
        peers = [m for m in messages if m.sender not in (OPERATOR, HOST)]
        for message in peers:
            if not self.graph.knows(message.id):  # published by another host, or before us
                text, kind = _text(message.payload), message.type
                seen = Sent(message.id, message.sender, message.recipient, text, kind)
                self._apply(self.graph.sent(replace(seen, at=self.clock())))
        if key is not None:
            ended = TurnEnd(panel, key, tuple(m.id for m in peers), changed_world)
            self._apply(self.graph.turn_ended(ended), panel, number)
        return self.owed.get(panel)

    def owed_to(self, panel: str) -> HaltRecord | None:
        return self.owed.get(panel)

    def forgive(self, panel: str) -> None:
        """The operator resumed `panel`: its owed halt, the findings that name it (the digest
        stops showing them) and what the graph held against it are dropped."""
        self.owed.pop(panel, None)
        self.graph.forgive(panel)
        kept = [v for v in self.recent if panel not in v.panels and not _sent_by(v, panel)]
        self.recent = deque(kept, maxlen=RECENT)

    def alerts(self) -> tuple[str, ...]:
        """The recent findings, one line each, for the watchdog's digest."""
        return tuple(
            f"team loop, {v.rule} ({'halted' if v.halt else 'flagged'}): {v.describe()}"
            for v in self.recent
        )

    def _apply(
        self, verdicts: Sequence[LoopVerdict], panel: str | None = None, turn: int = 0
    ) -> None:
        """Log the flags; owe each halt to every panel it names (with `turn` for `panel`, the
        one whose turn just ended; the others are stopped before a turn, so theirs is 0)."""
        for verdict in verdicts:
            if verdict not in self.recent:
                self.recent.append(verdict)
            if not verdict.halt:
                sender = verdict.edge.split(" -> ")[0]  # a flag is of one edge: "a -> b"
                self.emit(LoopFlagged(panel=sender, rule=verdict.rule, edge=verdict.edge,
                                      ids=verdict.message_ids,
                                      message=verdict.describe()))  # fmt: skip
                continue
            record = halt_record(verdict)
            for name in verdict.panels:
                if name not in self.owed:
                    self.owed[name] = replace(record, turn=turn) if name == panel else record
                    self.wake(name)


def _sent_by(verdict: LoopVerdict, panel: str) -> bool:
    return verdict.edge.startswith(f"{panel} -> ")


def _text(payload: Mapping[str, Any]) -> str:
    text = payload.get("text", payload.get("note", ""))
    return text[:PREVIEW] if isinstance(text, str) else ""
