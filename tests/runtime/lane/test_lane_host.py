"""A lane through the host: a malformed front matter halts the panel and consumes nothing; a
fixed doc and a resume run the turn on the body alone; an edited lane applies at the next
turn while the system prompt stays byte-identical. Real host, real bus and stores under
tmp_path, scripted model driver; a send outside `recipients` never reaches the outbox.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from runtime.turn.driver import ToolCall
from tests.panels.host.conftest import make_team, panels, reply, start_host

pytestmark = pytest.mark.anyio
__all__ = ["start_host"]  # the fixture, imported for this module

BODY = "# Role\nYou are a.\n"


def team_with_role(tmp_path: Path, front: str, *more: str) -> tuple[Any, Path]:
    role = tmp_path / "role.md"
    role.write_text(front + BODY, encoding="utf-8")
    team = make_team(tmp_path, panels("a", *more) .replace(
        '[[panels]]\nname = "a"\n', f'[[panels]]\nname = "a"\nrole = "{role}"\n'
    ))  # fmt: skip
    return team, role


async def operator_says(host: Any, text: str) -> int:
    return int(await host.services.bus.submit(OPERATOR, operator_route("a"), {"text": text}))


async def test_a_malformed_lane_halts_the_panel_and_a_fixed_one_runs(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team, role = team_with_role(tmp_path, "---\ntools: [Read, no]\n---\n")
    async with start_host(team, {"a": [reply("one"), reply("two")]}) as (host, events, drivers):
        runner = host.panels["a"]
        ident = await operator_says(host, "go")
        (halt,) = await events.wait("halt", "a")
        (ended,) = await events.wait("turn_ended", "a")
        assert ended.outcome == "refused"
        assert (halt.source, halt.rule) == ("lane", "lane")
        assert halt.message.startswith(f"{role}:2: lane field 'tools[1]': is a boolean")
        assert runner.state == "halted" and drivers["a"].requests == []
        # Nothing consumed: no row stored, the message given back uncounted, not dead.
        assert await runner.session.store.rows() == []
        (settled,) = events.of("settled", "a")
        assert settled.acked == () and settled.released == (ident,)
        assert not events.of("dead_letter", "a")
        stored = json.loads(await runner.session.store.get_meta("halt"))
        assert stored["source"] == "lane" and f"{role}:2:" in stored["message"]

        role.write_text("---\ntools: [Read]\n---\n" + BODY, encoding="utf-8")
        await runner.resume(by="operator")
        await events.wait("turn_ended", "a", where=lambda e: e.outcome == "done")
        assert drivers["a"].requests[0].system == BODY  # the body alone, the lane split off
        assert "go" in json.dumps(drivers["a"].requests[0].blocks)  # the same message again
        assert runner.guard.lane is not None and runner.guard.lane.tools == ("Read",)

        role.write_text("---\ntools: [Read, Bash]\n---\n" + BODY, encoding="utf-8")
        await operator_says(host, "again")
        await events.wait("turn_ended", "a", count=2, where=lambda e: e.outcome == "done")
        first, second = drivers["a"].requests
        assert second.system == first.system == BODY  # the prefix did not move
        assert runner.guard.lane is not None and runner.guard.lane.tools == ("Read", "Bash")


SEND = "mcp__mnemara__send_message"


async def test_a_send_outside_recipients_is_refused_and_never_queued(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team, _ = team_with_role(tmp_path, "---\nrecipients: [b]\n---\n", "b", "c")
    calls = [
        ToolCall("s1", SEND, {"to": "c", "text": "not for you"}),
        ToolCall("s2", SEND, {"to": "*", "text": "everyone"}),
        ToolCall("s3", SEND, {"to": "b", "text": "for b"}),
    ]
    scripts = {"a": [reply("sending", *calls)], "b": [reply()], "c": [reply()]}
    async with start_host(team, scripts) as (host, events, _):
        await operator_says(host, "send")
        await events.wait("turn_ended", "a")
        await events.wait("turn_ended", "b")  # b got its message
        assert [e.to for e in events.of("send_queued", "a")] == ["b"]
        answers = {e.id: e for e in events.of("tool_result", "a")}
        assert not events.of("turn_ended", "c")
    assert answers["s1"].error and "this panel may message only: b" in answers["s1"].content
    assert answers["s2"].error and "broadcast" in answers["s2"].content
    assert not answers["s3"].error
