"""The host's side of the team graph: feeds it what the host sees, and acts on its verdicts.

`published` is called by the outbox as each send goes on the bus; `turn_ended` by a panel's
`HostChecks.after_turn` with the messages the turn was given. A halting verdict becomes one
team halt record (`source="team"`, the rule, the edge and the message ids) owed to every
panel it names: each panel's `HostChecks` hands it to the guard before its next turn or
call, the way the team budget halts, and the panel is woken so that happens at once rather
than when a message next arrives. A flag is a `LoopFlagged` event in the host's log. Both
stay in `alerts()` for the watchdog's digest. A resume forgives the panel: its owed halt and
what the graph held against it are dropped.

What a turn did to the world comes from the panel's `WorldTap` (loops/world.py), which the
host puts between the panel's guard and its world probe as each life opens its session
(`tap_world`): the turn's first and last measurement give a measured `WorldChange`. A turn
the tap saw nothing of (no call, or the sentinel off) falls back on the guard's boolean.

The graph's state lives in host.sqlite (`loop_state`): `restore` reads it back before the
panels start, and `serve` writes what changed every `interval` seconds (and once more,
shielded and bounded, when the host stops), so a restarted host continues every chain and
rate window. A kill -9 loses at most the last interval's changes: a loop then takes a
message or two longer to halt. Times are the wall clock, since they outlive the process.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Protocol

import anyio
import anyio.abc

from panels.host.delivery.feed import HOST, OPERATOR
from panels.host.loops.graph import Sent, TeamGraph, TurnEnd
from panels.host.loops.rules import LoopVerdict
from panels.host.loops.state import decode, encode
from panels.host.loops.world import WorldTap, unmeasured
from panels.hostdb.catalogue import HostEvent, LoopFlagged
from panels.hostdb.loopstate import LoopRow
from peerbus import Message
from runtime.guard.records import HaltRecord
from runtime.guard.world import WorldProbe

RECENT = 10  # loop findings the digest shows
PREVIEW = 2000  # characters of a message's text the graph reads (acks and novelty)
FLUSH_INTERVAL = 0.5  # seconds between writes of the graph's changes
FLUSH_DEADLINE = 5.0  # seconds the last write may take as the host stops

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


class LoopStore(Protocol):
    """Where the graph's state is kept (host.sqlite's `loop_state`: `HostDb`)."""

    async def load_loop_rows(self) -> list[LoopRow]: ...

    async def save_loop_rows(
        self, rows: Sequence[LoopRow], dropped: Sequence[tuple[str, str]] = (), *, keep: int
    ) -> int: ...


class LoopWatch:
    def __init__(
        self,
        graph: TeamGraph,
        *,
        emit: Callable[[HostEvent], None],
        clock: Callable[[], float],
        wake: Callable[[str], None] = lambda _: None,
        store: LoopStore | None = None,
        interval: float = FLUSH_INTERVAL,
    ) -> None:
        self.graph = graph
        self.emit = emit
        self.clock = clock
        self.wake = wake
        self.store = store
        self.interval = interval
        self.owed: dict[str, HaltRecord] = {}
        self.recent: deque[LoopVerdict] = deque(maxlen=RECENT)
        self.taps: dict[str, WorldTap] = {}
        self._changed = anyio.Event()

    # -- the world and the store -----------------------------------------------------------

    def tap_world(self, panel: str, probe: WorldProbe | None) -> WorldProbe | None:
        """`probe` (a panel's world probe, as its session made it) with a tap in front of it,
        from which the turns of `panel` take their measured world change."""
        if probe is None:
            return None
        tap = WorldTap(probe)
        self.taps[panel] = tap
        return tap

    async def restore(self) -> int:
        """Read the graph back from the store (before any event); the rows taken."""
        if self.store is None:
            return 0
        rows = await self.store.load_loop_rows()
        self.graph.restore(decode(rows, self.graph.settings))
        return len(rows)

    async def flush(self) -> int:
        """Write what the graph changed since the last flush; the rows written."""
        changes = self.graph.take_changes()
        if self.store is None or not changes:
            return 0
        rows, dropped = encode(changes)
        await self.store.save_loop_rows(rows, dropped, keep=self.graph.settings.memory)
        return len(rows)

    async def serve(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Write the graph's changes every `interval` seconds while there are any, until
        cancelled; then once more, shielded and bounded."""
        task_status.started()
        try:
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                await anyio.sleep(self.interval)  # coalesce a burst into one write
                await self.flush()
        finally:
            # The host is stopping: what changed since the last write must reach the file,
            # or the next life starts its chains a little short. Bounded: a locked file
            # must not hold the host's stop.
            with anyio.CancelScope(shield=True), anyio.move_on_after(FLUSH_DEADLINE):
                await self.flush()

    # -- events -----------------------------------------------------------------------------

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
        self._changed.set()

    def turn_ended(
        self, panel: str, number: int, view: TurnView, changed_world: bool
    ) -> HaltRecord | None:
        """A turn of `panel` ended; the halt it owes now (this rule or another's), if any.
        `changed_world` is the guard's boolean, used when the panel's tap measured nothing."""
        key, messages = view
        tap = self.taps.get(panel)
        change = tap.take(self.graph.settings.bookkeeping) if tap is not None else None
        peers = [m for m in messages if m.sender not in (OPERATOR, HOST)]
        now = self.clock()
        for message in peers:
            if not self.graph.knows(message.id):  # published by another host, or before us
                text, kind = _text(message.payload), message.type
                seen = Sent(message.id, message.sender, message.recipient, text, kind)
                self._apply(self.graph.sent(replace(seen, at=now)))
        if key is not None:
            measured = change if change is not None else unmeasured(changed_world)
            ended = TurnEnd(panel, key, tuple(m.id for m in peers), measured, now)
            self._apply(self.graph.turn_ended(ended), panel, number)
        self._changed.set()
        return self.owed.get(panel)

    def owed_to(self, panel: str) -> HaltRecord | None:
        return self.owed.get(panel)

    def forgive(self, panel: str) -> None:
        """The operator resumed `panel`: its owed halt, the findings that name it (the digest
        stops showing them) and what the graph held against it are dropped."""
        self.owed.pop(panel, None)
        self.graph.forgive(panel)
        self._changed.set()
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
