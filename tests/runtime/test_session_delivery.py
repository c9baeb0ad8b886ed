"""A session's delivery state: the message ids a turn consumed and the sends it queued.

A turn that commits (finished or stopped half way) records both; a turn that fails or dies
records neither, so its messages come again and the re-run does not send twice.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from runtime.errors import ServiceBusyError
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import (
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    ToolCall,
    ToolOutput,
    ToolResult,
    ToolSpec,
    Usage,
)
from runtime.turn.events import STOPPED_NOTE
from runtime.turn.open import DELIVERY_RETENTION, open_session
from runtime.turn.scripted import ScriptedDriver
from runtime.turn.session import Session
from runtime.window.rows import Consumed, NewRow, OutboxDraft

pytestmark = pytest.mark.anyio

SEND = "mcp__mnemara__send"


class SendTool:
    """An in-process tool that queues a send on the session, as the host's bus tool will.

    With `hang`, it waits forever after queuing: a turn only a stop can end."""

    def __init__(self, *, hang: bool = False) -> None:
        self.session: Session | None = None
        self.hang = hang
        self.queued = anyio.Event()
        self.pending_during_turn: list[object] = []

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec("send", "queue a send", {"type": "object"}, self.handle)

    async def handle(self, args: dict[str, Any]) -> ToolOutput:
        assert self.session is not None
        label = self.session.queue_send(args.get("to"), args["payload"], args.get("topic"))
        self.pending_during_turn.append(await self.session.store.outbox_pending())
        self.queued.set()
        if self.hang:
            await anyio.sleep_forever()
        return ToolOutput(label)


def sending(*payloads: dict[str, Any], then: DriverEvent | None = None) -> list[DriverEvent]:
    calls: list[DriverEvent] = [
        ToolCall(f"c{n}", SEND, {"to": "eng", "payload": p}) for n, p in enumerate(payloads)
    ]
    if then is not None:
        return [*calls, then]
    return [*calls, TextDelta("sent"), Usage(10, 3), Done()]


def reply(text: str) -> list[DriverEvent]:
    return [TextDelta(text), Usage(10, 3), Done()]


@asynccontextmanager
async def with_tool(
    tool: SendTool, driver: ScriptedDriver, approver: object
) -> AsyncIterator[Session]:
    """A session of instance t1 whose turns can call `tool` (which queues sends on it)."""
    async with open_session("t1", driver=driver, approver=approver, tools=[tool.spec]) as s:  # type: ignore[arg-type]
        tool.session = s
        yield s


async def run(session: Session, text: str, **kwargs: Any) -> list[object]:
    return [e async for e in session.turn(text, **kwargs)]


async def test_consumed_ids_survive_the_trim_of_their_own_input(
    instance: InstancePaths, approver: object, configure: Callable[..., object]
) -> None:
    configure(max_window_turns=2)  # turn two makes 4 rows: trimmed to 1, its input gone
    driver = ScriptedDriver([reply("one"), reply("two")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "first", consumed_ids=[11], source="bus-1")
        events = await run(s, "second", consumed_ids=[21, 22], source="bus-1")
        rows = await s.store.rows()
        user = next(e.user_row_id for e in events if type(e).__name__ == "TurnCommitted")
        assert user not in [r.id for r in rows], "the trim took the turn's own input row"
        assert 21 not in await s.store.consumed_ids()
        assert await s.store.committed("bus-1", [11, 21, 22, 99]) == {
            11: user - 2,
            21: user,
            22: user,
        }


async def test_sends_are_stored_with_the_commit_under_their_labels(
    instance: InstancePaths, approver: object
) -> None:
    tool = SendTool()
    driver = ScriptedDriver([sending({"n": 1}, {"n": 2}), sending({"n": 3})])
    async with with_tool(tool, driver, approver) as s:
        first = await run(s, "send two")
        second = await run(s, "send one")
        pending = await s.store.outbox_pending()
    labels = [e.content for e in [*first, *second] if isinstance(e, ToolResult)]
    rows = [e.user_row_id for e in [*first, *second] if type(e).__name__ == "TurnCommitted"]
    assert labels == [f"{rows[0]}.0", f"{rows[0]}.1", f"{rows[1]}.0"]
    assert [(e.label, e.recipient, e.payload) for e in pending] == [
        (labels[0], "eng", {"n": 1}),
        (labels[1], "eng", {"n": 2}),
        (labels[2], "eng", {"n": 3}),
    ]
    assert all(re.fullmatch("[0-9a-f]{32}", e.key) for e in pending)
    assert len({e.key for e in pending}) == 3
    assert tool.pending_during_turn[:2] == [[], []], "nothing is in the outbox before the commit"


async def test_stopped_turn_records_its_consumed_ids_and_sends(
    instance: InstancePaths, approver: object
) -> None:
    tool = SendTool(hang=True)
    driver = ScriptedDriver([sending({"text": "half way"})])
    async with with_tool(tool, driver, approver) as s:
        async with anyio.create_task_group() as tg:

            async def turn() -> None:
                await run(s, "long job", consumed_ids=[5, 6], source="bus")

            tg.start_soon(turn)
            await tool.queued.wait()
            tg.cancel_scope.cancel()
        rows = await s.store.rows()
        committed = await s.store.committed("bus", [5, 6])
        pending = await s.store.outbox_pending()
    assert rows[-1].blocks[-1]["text"] == STOPPED_NOTE
    assert committed == {5: rows[0].id, 6: rows[0].id}
    assert [(e.label, e.payload) for e in pending] == [(f"{rows[0].id}.0", {"text": "half way"})]


async def test_failed_turn_records_neither_and_its_rerun_sends_once(
    instance: InstancePaths, approver: object
) -> None:
    tool = SendTool()
    busy = ErrorEvent("overloaded", "529 overloaded", retryable=True)
    driver = ScriptedDriver([sending({"try": 1}, then=busy), sending({"try": 2})])
    async with with_tool(tool, driver, approver) as s:
        with pytest.raises(ServiceBusyError):
            await run(s, "job", consumed_ids=[8], source="bus")
        assert tool.queued.is_set(), "the failed turn did queue a send"
        assert await s.store.committed("bus", [8]) == {}
        assert await s.store.outbox(limit=10) == []
        await run(s, "job", consumed_ids=[8], source="bus")
        rows = await s.store.rows()
        committed = await s.store.committed("bus", [8])
        sent = await s.store.outbox(limit=10)
    # The re-run replaced the failed try's interrupted input: the window holds it once.
    assert [r.status for r in rows if r.role == "user"] == ["complete"]
    rerun = next(r.id for r in rows if r.status == "complete" and r.role == "user")
    assert committed == {8: rerun}
    assert [e.payload for e in sent] == [{"try": 2}]


async def test_queue_send_is_refused_outside_a_turn(
    instance: InstancePaths, approver: object
) -> None:
    tool = SendTool()
    driver = ScriptedDriver([reply("done")])
    async with with_tool(tool, driver, approver) as s:
        with pytest.raises(RuntimeError, match="only valid while a turn is in flight"):
            s.queue_send("eng", {"text": "early"})
        await run(s, "try it")
        with pytest.raises(RuntimeError, match="only valid while a turn is in flight"):
            s.queue_send(None, {"text": "late"})
        assert await s.store.outbox(limit=10) == []


def test_each_draft_has_a_key_of_its_own() -> None:
    made = OutboxDraft.new(None, {"text": "a"}, "t")
    assert (made.recipient, made.payload, made.topic) == (None, {"text": "a"}, "t")
    assert OutboxDraft.new(None, {"text": "a"}, "t").key != made.key


async def test_opening_a_session_prunes_settled_delivery_state(
    instance: InstancePaths, approver: object
) -> None:
    long_ago = datetime.now(UTC) - timedelta(seconds=DELIVERY_RETENTION + 3600)
    stamp = long_ago.isoformat(timespec="milliseconds")
    with TurnStore.open(instance.turns, clock=lambda: stamp) as store:
        user = store.begin_turn(NewRow("user", ({"type": "text", "text": "old"},), 1))
        store.commit_turn(
            user,
            [],
            consumed=Consumed("bus", (1, 2)),
            outbox=[OutboxDraft("eng", {}, None, "sent"), OutboxDraft("eng", {}, None, "due")],
        )
        store.mark_acked("bus", [1])
        store.mark_published("sent", 40)
    driver = ScriptedDriver([])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        assert await s.store.committed("bus", [1, 2]) == {2: user}
        assert [e.key for e in await s.store.outbox(limit=10)] == ["due"]


class RaisesAfter:
    """A driver that plays `events` (as ScriptedDriver does: tools run), then raises: a fault
    of its own, not a stop and not a service error."""

    def __init__(self, events: list[DriverEvent], then: list[DriverEvent] | None = None) -> None:
        self.scripted = ScriptedDriver([events, *([then] if then else [])])
        self.raised = 0

    async def run_turn(self, request: Any) -> Any:
        # Closed at its Done (the session commits, then closes the driver): close the inner one.
        async with aclosing(self.scripted.run_turn(request)) as events:
            async for event in events:
                yield event
        if self.raised == 0:
            self.raised += 1
            raise RuntimeError("the driver broke")


async def test_a_turn_that_raises_commits_nothing_and_sends_nothing(
    instance: InstancePaths, approver: object
) -> None:
    # Issue 30: only a stop (cancellation) commits a turn half way; a fault leaves its
    # messages to come again, so its partial send must not go out.
    tool = SendTool()
    driver = RaisesAfter(sending({"try": 1}, then=TextDelta("half")), then=reply("again"))
    async with with_tool(tool, driver, approver) as s:  # type: ignore[arg-type]
        with pytest.raises(RuntimeError, match="the driver broke"):
            await run(s, "job", consumed_ids=[8], source="bus")
        assert tool.queued.is_set(), "the failed turn did queue a send"
        assert await s.store.committed("bus", [8]) == {}
        assert await s.store.outbox(limit=10) == []
        assert [r.status for r in await s.store.rows() if r.role == "user"] == ["interrupted"]
        await run(s, "job", consumed_ids=[8], source="bus")
        rows = await s.store.rows()
    assert [r.status for r in rows if r.role == "user"] == ["complete"]


async def test_interrupted_copies_of_an_input_do_not_pile_up(
    instance: InstancePaths, approver: object
) -> None:
    # Issue 30: a host killed mid-turn leaves its input in flight, marked interrupted when the
    # store opens again; eight kills left eight copies. The turn that runs the input again
    # replaces them, whatever batch it comes in.
    with TurnStore.open(instance.turns) as store:
        for batch in ((8,), (8, 9), (8,)):
            store.begin_turn(NewRow("user", ({"type": "text", "text": "job"},), 1,
                                    consumed_ids=batch))  # fmt: skip
            store.recover_interrupted()
        store.begin_turn(NewRow("user", ({"type": "text", "text": "other"},), 1,
                                consumed_ids=(7,)))  # fmt: skip
        store.recover_interrupted()
    driver = ScriptedDriver([reply("done")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "job", consumed_ids=[8, 9], source="bus")
        rows = await s.store.rows()
    users = [(r.status, r.consumed_ids) for r in rows if r.role == "user"]
    assert users == [("interrupted", (7,)), ("complete", (8, 9))]


async def test_an_input_that_consumes_no_message_replaces_its_interrupted_tries_by_label(
    instance: InstancePaths, approver: object
) -> None:
    # The host's follow-up note consumes no message: killed tries of it were left behind,
    # one per kill (the soak's "interrupted copies"). Its label names it instead; an
    # unlabelled input, or one with another label, is never taken for it.
    note = {"type": "text", "text": "Note from the host: these were not sent"}
    with TurnStore.open(instance.turns) as store:
        for _ in range(3):
            store.begin_turn(NewRow("user", (note,), 1, label="host follow-up note"))
            store.recover_interrupted()
        store.begin_turn(NewRow("user", ({"type": "text", "text": "plain"},), 1))
        store.recover_interrupted()
        store.begin_turn(NewRow("user", (note,), 1, label="another label"))
        store.recover_interrupted()
    driver = ScriptedDriver([reply("sent them")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "Note from the host: these were not sent", label="host follow-up note")
        rows = await s.store.rows()
    users = [(r.status, r.label) for r in rows if r.role == "user"]
    assert users == [
        ("interrupted", ""),
        ("interrupted", "another label"),
        ("complete", "host follow-up note"),
    ]
