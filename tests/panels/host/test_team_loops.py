"""Team-level loop detection through a real host: two panels that talk in circles are both
stopped with a team halt naming the edge and the message ids; the watchdog's digest says so;
an exchange with real file changes between rounds runs on; an edge over its rate is flagged
in the log. A resume forgives the loop, lifts a loop halt a panel's guard has not taken yet,
and a panel woken while its resume is being stored does not take the old halt back."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.loops.rules import LoopSettings
from panels.hostdb.verbs import Resume
from runtime.guard.halts import HALT_META
from runtime.turn.driver import (
    DriverEvent,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    TurnRequest,
    deny_text,
)
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

SEND = "mcp__mnemara__send_message"
ALLOW_WRITE = '[[panels.policy]]\ntool = "Write"\nmode = "allow"\n'
# Small enough to trip well before the sentinel's own no-progress rule could.
QUICK = LoopSettings(ping_pong_exchanges=4)


def talk(to: str, turns: int, *, last_silent: bool = False) -> list[Any]:
    """`turns` turns that each send `to` a short message that moves nothing on."""
    script = []
    for n in range(1, turns + 1):
        send = {"to": to, "text": f"{to}, over to you ({n})", "terminal": True}
        script.append(reply(f"turn {n}", ToolCall(f"s{n}", SEND, send)))
    if last_silent:
        script[-1] = reply("nothing more to say")
    return script


class EditThenTalk:
    """Each turn writes a file through a Write call, asked of the guard first and then done on
    disk (as the CLI does), before playing its scripted turn."""

    def __init__(self, path: Path, script: list[Any]) -> None:
        self.path = path
        self.inner = ScriptedDriver(script)

    @property
    def requests(self) -> list[TurnRequest]:
        return self.inner.requests

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        n = len(self.inner.requests) + 1
        call = ToolCall(f"w{n}", "Write", {"file_path": str(self.path), "content": f"v{n}\n"})
        yield call
        decision = await request.approver.decide(ToolCallRequest(call.id, call.name, call.input))
        if decision.allow:
            self.path.write_text(f"revision {n}\n")
        said = "File written." if decision.allow else deny_text(decision)
        yield ToolResult(call.id, said, is_error=not decision.allow)
        async for event in self.inner.run_turn(request):
            yield event


class HoldAt:
    """A scripted panel whose turn `at` waits for `go` before it plays; `started` is set as
    that turn begins."""

    def __init__(self, script: list[Any], at: int, go: anyio.Event | None = None) -> None:
        self.inner = ScriptedDriver(script)
        self.at = at
        self.started = anyio.Event()
        self.go = go or anyio.Event()

    @property
    def requests(self) -> list[TurnRequest]:
        return self.inner.requests

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        if len(self.inner.requests) + 1 == self.at:
            self.started.set()
            await self.go.wait()
        async for event in self.inner.run_turn(request):
            yield event


async def test_two_panels_talking_in_circles_are_both_halted_naming_the_edge_and_ids(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b", "dog", dog="watchdog"),
                     extra="digest_interval_seconds = 3600")  # fmt: skip
    scripts = {"a": talk("b", 10), "b": talk("a", 10), "dog": [reply("seen")]}
    async with start_host(team, scripts, loops=QUICK) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "start"})
        (halt_a,) = await events.wait("halt", "a")
        (halt_b,) = await events.wait("halt", "b")
        assert host.panels["a"].halt is not None and host.panels["b"].halt is not None
        # The watchdog's digest carries the loop.
        assert await host.digests.send_due() == 1
        (digest,) = await events.wait("digest", "dog")
        await events.wait("turn_ended", "dog")
    sent = [e.id for e in events.of("send") if e.panel in ("a", "b")]
    for halt in (halt_a, halt_b):
        assert (halt.by, halt.source, halt.rule) == ("team", "team", "ping_pong")
        assert "a -> b -> a" in halt.message
        assert f"(messages {', '.join(str(i) for i in sent[:4])})" in halt.message
    record = host.panels["b"].halt
    assert record is not None and record.notice().startswith("[TEAM HALT] ping_pong:")
    # `a` was halted as its third turn (the one that consumed the fourth idle message)
    # ended; `b` before its next turn, not by ending one.
    assert len(drivers["a"].requests) == 3 and len(drivers["b"].requests) == 2
    loops = [a for a in digest.alerts if a.startswith("team loop, ping_pong (halted)")]
    assert loops and "a -> b -> a" in loops[0]
    digest_text = str(drivers["dog"].requests[0].blocks[-1]["text"])
    assert "team loop, ping_pong" in digest_text


async def test_a_panel_woken_while_its_resume_is_stored_does_not_take_the_old_halt_back(
    anyio_backend: str, tmp_path: Path, start_host: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    scripts = {"a": talk("b", 10), "b": talk("a", 10)}
    async with start_host(team, scripts, loops=QUICK) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "start"})
        await events.wait("halt", "b")
        b = host.panels["b"]
        assert b.session is not None
        store, write = b.session.store, b.session.store.set_meta

        async def set_meta(key: str, value: str) -> None:
            if key == HALT_META and not value:  # the resume's write: b's guard is clear now
                b.wakeup.set()  # its life wakes here, as a message arriving now would wake it
                await anyio.wait_all_tasks_blocked()  # and asks whether a turn may begin
            await write(key, value)

        monkeypatch.setattr(store, "set_meta", set_meta)
        assert (await host.dispatch(Resume(panel="b"))).ok
        assert b.halt is None and len(events.of("halt", "b")) == 1
        assert (await host.dispatch(Resume(panel="a"))).ok
        halts = await events.wait("halt", "b", count=2)  # b ran on, into a new loop
    assert halts[0].message != halts[1].message
    assert len(drivers["b"].requests) > 2


async def test_a_resume_lifts_a_loop_halt_owed_to_a_panel_whose_guard_has_not_taken_it(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    # b's third turn (the operator's message) is held open; a's third turn, the one that
    # closes the loop, waits until b is inside it. The halt owed to b then waits for b's guard
    # to ask (its next call, or its turn's end).
    b = HoldAt([*talk("a", 2), reply("noted")], at=3)
    a = HoldAt(talk("b", 10), at=3, go=b.started)
    async with start_host(team, {"a": a, "b": b}, loops=QUICK) as (host, events, _):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "start"})
        await events.wait("turn_ended", "b", count=2)
        await host.services.bus.submit(OPERATOR, operator_route("b"), {"text": "hold on"})
        await events.wait("halt", "a")
        assert host.panels["b"].halt is None and host.panels["b"].in_turn
        resumed = await host.dispatch(Resume(panel="b"))
        assert resumed.ok and "b is resumed" in resumed.text
        b.go.set()
        ended = (await events.wait("turn_ended", "b", count=3))[2]
        assert ended.outcome == "done"
        assert host.panels["b"].halt is None and not events.of("halt", "b")
    assert [e.rule for e in events.of("resumed", "b")] == ["ping_pong"]


async def test_an_exchange_with_file_changes_between_rounds_is_not_stopped(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, f'[[panels]]\nname = "a"\n{ALLOW_WRITE}\n' + panels("b"))
    target = tmp_path / "work" / "notes.txt"
    scripts = {"a": EditThenTalk(target, talk("b", 7, last_silent=True)), "b": talk("a", 6)}
    async with start_host(team, scripts, loops=QUICK) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "start"})
        await events.wait("turn_ended", "a", count=7, within=60)
        assert host.panels["a"].halt is None and host.panels["b"].halt is None
    assert not events.of("halt") and not events.of("loop_flag")
    assert len(drivers["b"].requests) == 6  # six rounds each way: more than twice the bound
    assert target.read_text() == "revision 7\n"


async def test_an_edge_over_its_rate_is_flagged_in_the_log_and_not_halted(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    sends = [ToolCall(f"s{n}", SEND, {"to": "b", "text": f"item {n} of the list"})
             for n in range(1, 5)]  # fmt: skip
    scripts = {"a": [reply("listing", *sends)], "b": [reply("read") for _ in sends]}
    async with start_host(team, scripts, loops=LoopSettings(rate_messages=3)) as (host, events, _):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "list"})
        (flag,) = await events.wait("loop_flag", "a")
        await events.wait("turn_ended", "b")
    ids = [e.id for e in events.of("send", "a")]
    assert (flag.rule, flag.edge, flag.ids) == ("edge_rate", "a -> b", tuple(ids))
    assert not events.of("halt")


async def test_a_resume_forgives_the_loop_and_a_new_run_of_it_halts_again(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    scripts = {"a": talk("b", 10), "b": talk("a", 10)}
    async with start_host(team, scripts, loops=QUICK) as (host, events, drivers):
        await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": "start"})
        await events.wait("halt", "b")
        for name in ("a", "b"):
            assert (await host.dispatch(Resume(panel=name))).ok
        halts = await events.wait("halt", "b", count=2)
        await events.wait("halt", "a", count=2)
    first, second = halts[0].message, halts[1].message
    assert first != second and "a -> b -> a" in second  # new evidence, not the old loop's
    # After the resume each ran more turns: the old messages no longer counted against them.
    assert len(drivers["a"].requests) > 3 and len(drivers["b"].requests) > 2
