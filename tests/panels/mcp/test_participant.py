"""The external agent's bus calls on a real SQLite bus, with the bus's clock in the test's hand:
keys, leases that end, acks that come too late, and the give-back when a server stops."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from panels.mcp.participant import Participant, open_participant
from panels.mcp.rules import ToolRefused, admit
from panels.team import parse_team
from peerbus import BusBackend, open_bus

pytestmark = pytest.mark.anyio
TEAM = '[team]\nname = "t"\n[team.external.cc]\nwrites_to = ["*"]\n[[panels]]\nname = "a"\n'


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def bus(tmp_path: Path, clock: Clock) -> AsyncIterator[BusBackend]:
    async with open_bus(tmp_path / "bus.sqlite", clock=clock) as opened:
        yield opened


def agent(bus: BusBackend, tmp_path: Path) -> Participant:
    team = parse_team(TEAM, source=tmp_path / "team.toml", home=tmp_path / "home")
    return Participant(bus, admit(team.external["cc"], team.panels, bus.options))


async def test_a_retried_send_is_sent_once_and_a_new_key_again(
    bus: BusBackend, tmp_path: Path
) -> None:
    cc = agent(bus, tmp_path)
    first = await cc.send({"to": "a", "text": "hi", "key": "k"})
    assert await cc.send({"to": "a", "text": "hi", "key": "k"}) == first
    assert await cc.send({"to": "*", "text": "hi", "key": "k2"}) != first  # its own key
    assert len(await bus.inbox("a")) == 2


async def test_an_ack_after_the_lease_ended_says_lost_and_the_message_comes_again(
    bus: BusBackend, tmp_path: Path, clock: Clock
) -> None:
    one, two = agent(bus, tmp_path), agent(bus, tmp_path)  # two servers of one name, in turn
    ident = await bus.submit("a", "cc", {"type": "message", "text": "reply"})
    assert [m["id"] for m in (await one.inbox({"lease_seconds": 5}))["messages"]] == [ident]
    assert (await two.inbox({}))["messages"] == []  # leased to the first
    assert await two.wait({"timeout_seconds": 0}) == {"waiting": 0}
    clock.now += 6  # the first one never acked: its lease ends
    assert await two.wait({"timeout_seconds": 0}) == {"waiting": 1}
    again = (await two.inbox({}))["messages"]
    assert [m["id"] for m in again] == [ident]
    assert await one.ack({"ids": [ident]}) == {
        "acked": [],
        "lost": [ident],
        "note": "the lost ids' lease had ended: they come again on the next inbox",
    }
    assert await two.ack({"ids": [ident]}) == {"acked": [ident]}
    with pytest.raises(ToolRefused, match="not held by this server"):
        await two.ack({"ids": [ident]})
    assert await bus.inbox("cc") == []


async def test_a_server_that_stops_gives_back_what_it_holds_at_once(
    bus: BusBackend, tmp_path: Path
) -> None:
    ident = await bus.submit("a", "cc", {"type": "message", "text": "reply"})
    admission = agent(bus, tmp_path).admission
    async with open_participant(bus, admission) as cc:
        await cc.inbox({"lease_seconds": 3600})
        assert [p.state for p in await bus.inbox("cc")] == ["leased"]
    (back,) = await bus.inbox("cc")
    assert (back.id, back.state, back.attempts) == (ident, "new", 0)  # nothing counted
