"""Delivery through the host: batches, operator first, the inbox switch, terminal sends, acks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from runtime.store import TurnStore
from runtime.turn.driver import ToolCall, TurnRequest
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

SEND = "mcp__mnemara__send_message"


def last_text(request: TurnRequest) -> str:
    return str(request.blocks[-1]["text"])


async def leased(host: Any) -> int:
    stats = await host.services.bus.stats()
    return sum(r.leased for r in stats.recipients)


async def test_a_message_goes_round_and_every_id_is_stored_then_acked(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("producer", "engineer"))
    script = {
        "producer": [
            reply("go", ToolCall("c1", SEND, {"to": "engineer", "text": "do", "terminal": True})),
            reply("thanks"),
        ],
        "engineer": [reply("done", ToolCall("c2", SEND, {"to": "producer", "text": "built"}))],
    }  # fmt: skip
    async with start_host(team, script) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("producer"), {"text": "plan"})
        await events.wait("turn_ended", "producer", count=2)
        assert await leased(host) == 0
    assert last_text(drivers["producer"].requests[0]) == "plan"
    engineer_input = last_text(drivers["engineer"].requests[0])
    assert 'from="producer"' in engineer_input and "do" in engineer_input
    assert "<<<payload" in engineer_input  # peer text is fenced as data
    assert 'from="engineer"' in last_text(drivers["producer"].requests[1])
    queued, sends = events.of("send_queued"), events.of("send")
    assert [(e.panel, e.to, e.terminal) for e in queued] == [
        ("producer", "engineer", True), ("engineer", "producer", False)]  # fmt: skip
    # Each went out once its turn was stored, under the outbox id the model was given.
    assert [(e.panel, e.to, e.outbox) for e in sends] == [
        (q.panel, q.to, q.outbox) for q in queued]  # fmt: skip
    with TurnStore.open(team.state_dir.parents[1] / "engineer" / "turns.sqlite") as store:
        assert store.consumed_ids() == {sends[0].id}
    assert [e.acked for e in events.of("settled", "producer")] == [(1,), (3,)]


async def test_operator_input_goes_first_and_passes_a_closed_inbox(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    scripts = {"a": [reply("one"), reply("two")], "b": []}
    async with start_host(team, scripts) as (host, events, drivers):
        runner = host.panels["a"]
        runner.set_inbox(False)
        bus = host.services.bus
        peer = await bus.submit("b", "a", {"type": "message", "text": "from b"})
        await bus.submit(OPERATOR, operator_route("a"), {"text": "from the operator"})
        await events.wait("turn_ended", "a")
        first = last_text(drivers["a"].requests[0])
        assert first == "from the operator"  # the peer message waits behind the closed inbox
        assert [p.id for p in await bus.inbox("a")] == [peer]
        runner.set_inbox(True)
        await events.wait("turn_ended", "a", count=2)
        assert "from b" in last_text(drivers["a"].requests[1])


async def test_operator_text_leads_a_turn_that_also_carries_peer_messages(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [reply()], "b": []}) as (host, events, drivers):
        bus = host.services.bus
        await bus.submit("b", "a", {"type": "message", "text": "peer first in time"})
        await bus.submit(OPERATOR, operator_route("a"), {"text": "operator later"})
        await host.panels["a"].resume(by="operator")
        await events.wait("turn_ended", "a")
    text = last_text(drivers["a"].requests[0])
    assert text.startswith("operator later") and "peer first in time" in text


async def test_batch_off_gives_one_message_per_turn(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    one_at_a_time = "paused = true\n[panels.batch]\nenabled = false\n"
    team = make_team(tmp_path, panels("a") + one_at_a_time + panels("b"))
    scripts = {"a": [reply(), reply(), reply()], "b": []}
    async with start_host(team, scripts) as (host, events, _):
        for i in range(3):
            await host.services.bus.submit("b", "a", {"type": "message", "text": f"m{i}"})
        await host.panels["a"].resume(by="operator")
        deliveries = await events.wait("delivery", "a", count=3)
    assert [len(e.ids) for e in deliveries] == [1, 1, 1]


async def test_a_terminal_send_ends_the_turn_for_tools(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    turn = reply(
        "x",
        ToolCall("c1", SEND, {"to": "b", "text": "last", "terminal": True}),
        ToolCall("c2", SEND, {"to": "b", "text": "one more"}),
    )
    async with start_host(team, {"a": [turn], "b": [reply()]}) as (host, events, _):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "go"})
        results = await events.wait("tool_result", "a", count=2)
    assert results[1].error and "terminal send" in results[1].content
    assert len(events.of("send", "a")) == 1


async def test_ack_message_answers_once_and_never_acks_an_ack(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    paused = "paused = true\n"
    team = make_team(tmp_path, panels("a") + paused + panels("b") + paused)
    ack = "mcp__mnemara__ack_message"
    ids: dict[str, int] = {}
    acked = ("first", "noise", "unknown")

    def acks(request: TurnRequest) -> list[Any]:
        calls = [ToolCall(f"c{i}", ack, {"id": ids.get(k, 999)}) for i, k in enumerate(acked)]
        return reply("x", *calls)

    async with start_host(team, {"a": [acks], "b": []}) as (host, events, _):
        bus = host.services.bus
        ids["first"] = await bus.submit("b", "a", {"type": "message", "text": "hello"})
        # Protocol noise is settled by the bus without a turn, so it is never "delivered".
        ids["noise"] = await bus.submit("b", "a", {"type": "ack", "ack_of": 0})
        await host.panels["a"].resume(by="operator")
        first = ids["first"]
        results = await events.wait("tool_result", "a", count=3)
        assert not results[0].error
        assert results[1].error and "not delivered" in results[1].content
        assert results[2].error
        (sent,) = await events.wait("ack_sent", "a")
        inbox_b = await bus.inbox("b")
    assert sent.ack_of == first and [p.id for p in inbox_b] == [sent.id]
    assert [p.payload_json for p in inbox_b] == [f'{{"type":"ack","ack_of":{first}}}']


async def test_list_inbox_shows_what_waits(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))

    def look(request: TurnRequest) -> list[Any]:
        return reply("x", ToolCall("c1", "mcp__mnemara__list_inbox", {}))

    async with start_host(team, {"a": [look], "b": []}) as (host, events, _):
        host.panels["a"].set_inbox(False)
        await host.services.bus.submit("b", "a", {"type": "message", "text": "waiting one"})
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "look"})
        (result,) = await events.wait("tool_result", "a")
    assert "1 waiting" in result.content and "waiting one" in result.content
