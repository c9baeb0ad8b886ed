"""Exactly once in a running host: consumed ids outlive trims, only a turn's own failures
count toward a dead letter (which is logged), a turn's sends go out once it is stored and only
then, and the events a life must not lose are on disk before it goes on."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host import Host, RestartPolicy
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.delivery.poison import POISON_ATTEMPTS
from runtime.instance.config import DEFAULT_MAX_WINDOW_TOKENS, InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import (
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    TurnRequest,
    Usage,
    call_tool,
)
from runtime.turn.scripted import ScriptedDriver, find_tool
from runtime.window.rows import Consumed, NewRow, OutboxDraft
from tests.panels.host.conftest import Events, make_team, panels, reply

pytestmark = pytest.mark.anyio
SEND = "mcp__mnemara__send_message"
PATIENT = RestartPolicy(base_delay=0.01, max_delay=0.02, max_failures=20, window=60)


def instance(team: Any, name: str, **fields: Any) -> InstancePaths:
    paths = InstancePaths.for_name(name, team.state_dir.parents[1])
    paths.root.mkdir(parents=True)
    save_config(paths.config, InstanceConfig(**fields))
    TurnStore.open(paths.turns).close()
    return paths


async def owed(host: Any) -> tuple[int, int]:
    """(leased, waiting) over every recipient of the bus."""
    stats = await host.services.bus.stats()
    return sum(r.leased for r in stats.recipients), sum(r.waiting for r in stats.recipients)


@pytest.mark.parametrize("shape", ["two-turn window", "one large turn"])
async def test_a_trim_of_the_turns_own_input_does_not_run_its_message_again(
    anyio_backend: str, tmp_path: Path, start_host: Any, shape: str
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    if shape == "two-turn window":
        instance(team, "a", max_window_turns=2)
        answers = [reply(f"answer {i}") for i in range(4)]
    else:
        instance(team, "a")  # default caps; the answer alone is over the low-water mark
        big = Usage(10, int(0.7 * DEFAULT_MAX_WINDOW_TOKENS))
        answers = [[TextDelta("a long answer"), big, Done()] for _ in range(4)]
    async with start_host(team, {"a": answers + [reply("again")] * 4, "b": []}) as (
        host,
        events,
        drivers,
    ):
        ids = []
        for i in range(4):
            ids.append(
                await host.services.bus.submit("b", "a", {"type": "message", "text": f"{i}"})
            )
            await events.wait("turn_ended", "a", count=i + 1)
        assert await owed(host) == (0, 0)
    stored = [e.user_row for e in events.of("turn_committed", "a")]
    trimmed = {row for e in events.of("trimmed", "a") for row in e.evicted}
    assert set(stored) & trimmed, "the trim never removed a turn's own input: nothing tested"
    assert [e.ids for e in events.of("delivery", "a")] == [(i,) for i in ids]
    assert [e.acked for e in events.of("settled", "a")] == [(i,) for i in ids]
    assert all(e.released == () for e in events.of("settled", "a"))
    assert len(drivers["a"].requests) == 4


async def test_a_message_whose_turn_fails_every_time_is_dead_lettered_and_said(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    boom = [ErrorEvent("other", "the model service broke")]
    k = POISON_ATTEMPTS
    async with start_host(team, {"a": [boom] * k + [reply("fine")], "b": []}, policy=PATIENT) as (
        host,
        events,
        _,
    ):
        bus = host.services.bus
        ident = await bus.submit("b", "a", {"type": "message", "text": "poison"})
        (dead,) = await events.wait("dead_letter", "a")
        after = await bus.submit("b", "a", {"type": "message", "text": "next"})
        await events.wait("turn_ended", "a", count=k + 1)
        assert host.panels["a"].status_row().dead_letters == 1
        (letter,) = await bus.dead_letters(recipient="a")
        assert await owed(host) == (0, 0)
    assert (dead.id, dead.sender) == (ident, "b")
    assert "the model service broke" in dead.reason and f"{k} of {k}" in dead.reason
    assert letter.id == ident and "the model service broke" in letter.reason
    outcomes = [e.outcome for e in events.of("turn_ended", "a")]
    assert outcomes == ["failed"] * k + ["done"]
    assert events.of("delivery", "a")[-1].ids == (after,)


class SendThenWait:
    """A turn that calls send_message, then waits for `release` before it ends."""

    def __init__(self) -> None:
        self.sent = anyio.Event()
        self.release = anyio.Event()

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        call = ToolCall("c1", SEND, {"to": "b", "text": "the plan"})
        yield call
        decision = await request.approver.decide(ToolCallRequest(call.id, call.name, call.input))
        spec = find_tool(request.sdk_tools, call.name)
        assert decision.allow and spec is not None
        output = await call_tool(spec, call.input)
        yield ToolResult(call.id, output.text, output.is_error)
        self.sent.set()
        await self.release.wait()
        yield Usage(10, 1)
        yield Done()


async def test_a_send_goes_out_when_its_turn_is_stored_and_not_before(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + panels("b") + "paused = true\n")
    driver = SendThenWait()
    async with start_host(team, {"a": driver, "b": []}) as (host, events, _):
        bus = host.services.bus
        await bus.submit(OPERATOR, operator_route("a"), {"text": "go"})
        await driver.sent.wait()
        assert await bus.inbox("b") == []  # queued in the outbox, not on the bus
        driver.release.set()
        (sent,) = await events.wait("send", "a")
        (waiting,) = await bus.inbox("b")
    (result,) = events.of("tool_result", "a")
    (queued,) = events.of("send_queued", "a")
    assert f"Queued for b as outbox entry {queued.outbox};" in result.content
    assert (sent.id, sent.outbox) == (waiting.id, queued.outbox)


async def test_a_failed_turn_sends_nothing_and_its_rerun_sends_once(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + panels("b") + "paused = true\n")
    send = ToolCall("c1", SEND, {"to": "b", "text": "only once"})
    cut = [send, ErrorEvent("cli", "the CLI process was killed")]
    async with start_host(team, {"a": [cut, reply("ok", send)], "b": []}) as (host, events, _):
        bus = host.services.bus
        await bus.submit("b", "a", {"type": "message", "text": "do it"})
        await events.wait("send", "a")
        inbox = await bus.inbox("b")
    assert [e.outcome for e in events.of("turn_ended", "a")] == ["failed", "done"]
    assert len(events.of("send_queued", "a")) == 2  # one per turn; the first never went out
    assert [p.payload_json for p in inbox] == ['{"type":"message","text":"only once"}']


@pytest.mark.parametrize("reached_the_bus", [False, True])
async def test_a_stored_send_left_unpublished_by_a_crash_goes_out_once_on_restart(
    anyio_backend: str, tmp_path: Path, start_host: Any, reached_the_bus: bool
) -> None:
    # The host died after the turn's commit, before (or just after) the bus write of its send.
    team = make_team(tmp_path, panels("a") + panels("b") + "paused = true\n")
    async with start_host(team, {"a": [], "b": []}) as (host, _, _):
        bus = host.services.bus
        source = bus.identity
        draft = OutboxDraft.new("b", {"type": "message", "text": "from the dead"}, None)
        early = await bus.submit("a", "b", draft.payload, key=draft.key) if reached_the_bus else 0
        host.panels["a"].pause()
    paths = InstancePaths.for_name("a", team.state_dir.parents[1])
    with TurnStore.open(paths.turns) as store:
        row = store.begin_turn(NewRow("user", ({"type": "text", "text": "x"},), 1))
        store.commit_turn(row, [], consumed=Consumed(source, ()), outbox=[draft])
    async with start_host(team, {"a": [], "b": []}) as (host, events, _):
        (sent,) = await events.wait("send", "a")
        inbox = await host.services.bus.inbox("b")
    assert [p.id for p in inbox] == [sent.id]
    assert sent.outbox == f"{row}.0"
    if reached_the_bus:
        assert sent.id == early
    with TurnStore.open(paths.turns) as store:
        assert store.outbox_pending() == []
        (entry,) = store.outbox()
    assert entry.message_id == sent.id


async def test_the_events_a_life_must_not_lose_are_written_at_once(
    anyio_backend: str, tmp_path: Path
) -> None:
    # An hour between batched writes: only the writes made at once can be seen here.
    team = make_team(tmp_path, panels("a"))
    events = Events()
    home = team.state_dir.parents[1]
    scripted = ScriptedDriver([reply("hello")])
    host = Host(
        team, drivers=lambda spec: scripted, home=home, listeners=[events], log_interval=3600
    )
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        try:
            assert [e.kind for e in events.seen][:1] == ["host_started"]
            (ready,) = await events.wait("host_ready")
            assert ready.life == host.life
            await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "hi"})
            (ended,) = await events.wait("turn_ended", "a")
            (stored,) = events.of("turn_committed", "a")
        finally:
            host.request_stop()
            await host.stopped()
    assert ended.outcome == "done"
    kinds = [e.kind for e in events.seen]
    assert kinds.index("turn_committed") < kinds.index("settled") < kinds.index("turn_ended")
    assert stored.user_row > 0


async def test_an_ack_the_bus_made_but_the_store_never_noted_is_noted_on_restart(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # The host died between the bus's ack and the store's note of it: no redelivery comes,
    # so the next life asks the bus, or the record would never age out.
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [], "b": []}) as (host, _, _):
        bus = host.services.bus
        done = await bus.submit("b", "a", {"type": "message", "text": "acked"})
        owed = await bus.submit("b", "a", {"type": "message", "text": "still owed"})
        claim = await bus.claim("a")
        await bus.ack(claim, only=[done])
        await bus.nack(claim, only=[owed], count=False)
        source = bus.identity
    paths = InstancePaths.for_name("a", team.state_dir.parents[1])
    with TurnStore.open(paths.turns) as store:
        row = store.begin_turn(NewRow("user", ({"type": "text", "text": "x"},), 1))
        store.commit_turn(row, [], consumed=Consumed(source, (done, owed)))
    async with start_host(team, {"a": [reply("next")], "b": []}) as (host, events, _):
        await host.panels["a"].resume(by="operator")
        await events.wait("redelivery_skipped", "a")  # the owed one came back: noted there
        # One loop at a time: once a later message's turn has ended, the skip is noted.
        await host.services.bus.submit("b", "a", {"type": "message", "text": "later"})
        await events.wait("turn_ended", "a")
    with TurnStore.open(paths.turns) as store:
        assert store.unacked(source) == []
    (skipped,) = events.of("redelivery_skipped", "a")
    assert skipped.ids == (owed,)
