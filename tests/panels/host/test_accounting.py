"""Every message accounted for (issue 30): a turn takes no more than it may answer, what it
could not send is owed to it, a turn that raises consumes nothing, and a redelivery notes
only the acks the bus made."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import pytest

from panels.host.control.account import line
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.delivery.followup import FOLLOW_UP_LABEL, UNLOGGED_META
from panels.host.delivery.sendlimit import SendLimits
from peerbus import Claim, Outgoing, SettleResult
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import DriverEvent, TextDelta, ToolCall, TurnRequest
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import Consumed, NewRow
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio
SEND = "mcp__mnemara__send_message"
PER_TURN = SendLimits().per_turn


def store_of(team: Any, name: str) -> TurnStore:
    return TurnStore.open(InstancePaths.for_name(name, team.state_dir.parents[1]).turns)


async def test_a_turn_takes_no_more_messages_than_it_may_answer(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # Operator rows and peer rows together: one turn may send PER_TURN messages, so it takes
    # no more than that, whatever `max_messages` and the operator batch would allow.
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [reply()] * 8, "b": []}) as (host, events, _):
        bus = host.services.bus
        await bus.submit_many(
            OPERATOR, [Outgoing(operator_route("a"), {"text": f"op {i}"}) for i in range(4)]
        )
        await bus.submit_many("b", [Outgoing("a", {"text": f"m{i}"}) for i in range(2 * PER_TURN)])
        await host.panels["a"].resume(by=OPERATOR)
        total = 4 + 2 * PER_TURN
        await events.wait("settled", "a", where=lambda _: _acked(events) >= total)
    taken = [len(e.ids) for e in events.of("delivery", "a")]
    assert sum(taken) == total and max(taken) <= PER_TURN, taken


def _acked(events: Any) -> int:
    return sum(len(e.acked) for e in events.of("settled", "a"))


def twelve_sends(request: TurnRequest) -> list[DriverEvent]:
    calls = [ToolCall(f"c{i}", SEND, {"to": "b", "text": f"reply {i}"}) for i in range(12)]
    return reply("sent", *calls)


async def test_sends_a_turn_could_not_make_are_owed_to_it_in_a_follow_up_turn(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + panels("b") + "paused = true\n")
    scripts = {"a": [twelve_sends, reply("followed up")], "b": []}
    async with start_host(team, scripts) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "go"})
        await events.wait("turn_ended", "a", count=2)
        inbox = await host.services.bus.inbox("b")
    refused = [e for e in events.of("tool_result", "a") if e.error]
    assert len(refused) == 12 - PER_TURN
    assert len(inbox) == PER_TURN
    note = str(drivers["a"].requests[1].blocks[-1]["text"])
    assert "were not sent" in note and "reply 10" in note and "reply 11" in note
    assert "reply 9" not in note
    assert events.of("delivery", "a")[1].ids == ()  # the follow-up consumes no message
    with store_of(team, "a") as store:
        assert not store.get_meta("unsent_sends"), "the follow-up's commit settles what was owed"
        assert store.get_meta(UNLOGGED_META) == "", "its event is on disk: the mark is cleared"


class SendsThenRaises:
    """First turn: a send, then the driver raises (a fault of its own); then replies."""

    def __init__(self) -> None:
        send = ToolCall("c1", SEND, {"to": "b", "text": "half done"})
        self.scripted = ScriptedDriver([[send, TextDelta("half")], reply("whole")])
        self.requests = self.scripted.requests

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        first = not self.requests
        async for event in self.scripted.run_turn(request):
            yield event
        if first:
            raise RuntimeError("the driver broke")


async def test_a_turn_that_raises_gives_its_batch_back_counted_and_sends_nothing(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + panels("b") + "paused = true\n")
    async with start_host(team, {"a": SendsThenRaises(), "b": []}) as (host, events, _):
        bus = host.services.bus
        ident = await bus.submit("b", "a", {"text": "job"})
        await events.wait("turn_ended", "a", count=2)
        sent_to_b = await bus.inbox("b")
    settled = events.of("settled", "a")
    assert [(e.acked, e.released) for e in settled] == [((), (ident,)), ((ident,), ())]
    assert [e.outcome for e in events.of("turn_ended", "a")] == ["failed", "done"]
    assert sent_to_b == [], "the failed turn's send went out"
    with store_of(team, "a") as store:
        rows = store.rows()
    assert [r.status for r in rows if r.role == "user"] == ["complete"]
    failed = events.of("panel_failed", "a")
    assert failed and "the driver broke" in str(failed[0])


async def test_a_redelivery_notes_only_the_acks_the_bus_made(
    anyio_backend: str, tmp_path: Path, start_host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store says the turn consumed two messages; the bus takes the ack of one only (its
    # lease was lost meanwhile). The store must keep the other unacked, to ask again.
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [], "b": []}) as (host, _, _):
        bus = host.services.bus
        kept = await bus.submit("b", "a", {"text": "acked"})
        lost = await bus.submit("b", "a", {"text": "ack lost"})
        source = bus.identity
    with store_of(team, "a") as store:
        row = store.begin_turn(
            NewRow("user", ({"type": "text", "text": "x"},), 1, consumed_ids=(kept, lost))
        )
        store.commit_turn(row, [], consumed=Consumed(source, (kept, lost)))
    async with start_host(team, {"a": [reply("next")], "b": []}) as (host, events, drivers):
        bus = host.services.bus
        real_ack = bus.ack

        async def ack_that_loses_one(claim: Claim, *, only: Any = None) -> SettleResult:
            return await real_ack(claim, only=[i for i in (only or claim.ids) if i != lost])

        monkeypatch.setattr(bus, "ack", ack_that_loses_one)
        await host.panels["a"].resume(by=OPERATOR)
        await events.wait("redelivery_skipped", "a")
        # A turn after the skip: the loop claims again only once the skip's acks are noted.
        await bus.submit("b", "a", {"text": "next"})
        await events.wait("turn_ended", "a")
        assert len(drivers["a"].requests) == 1
    with store_of(team, "a") as store:
        assert store.unacked(source) == [lost]


async def test_a_follow_up_turn_whose_event_died_with_its_life_is_logged_by_the_next(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # A follow-up consumes no message: after a kill between its commit and its event, nothing
    # is redelivered, so the mark its commit left makes the next life log it.
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [reply("next")], "b": []}) as (host, events, _):
        with store_of(team, "a") as store:
            text = {"type": "text", "text": "sends not made"}
            [row] = store.append([NewRow("user", (text,), 3, label=FOLLOW_UP_LABEL)])
            store.set_meta(UNLOGGED_META, "1")
        await host.services.bus.submit("b", "a", {"text": "then this"})
        await host.panels["a"].resume(by=OPERATOR)
        [logged] = await events.wait("redelivery_skipped", "a")
        await events.wait("turn_ended", "a")  # the mark was dealt with before this claim
    assert (logged.ids, logged.turns) == ((), (row,))
    assert line(logged) == f"a turn of row(s) {row} committed before its host stopped"
    with store_of(team, "a") as store:
        assert store.get_meta(UNLOGGED_META) == "", "logged once: the mark is cleared"
