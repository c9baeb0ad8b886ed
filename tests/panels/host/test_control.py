"""Viewers' commands through the control table, and headless approvals answered through it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.hostdb import connect, get_command, submit_command
from panels.hostdb.verbs import Shutdown
from runtime.turn.driver import Done, ToolCall, Usage
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

ASK_BASH = '[[panels.policy]]\ntool = "Bash"\nmode = "ask"\n'


async def command(host: Any, events: Any, verb: str, panel: str | None, **args: Any) -> Any:
    """Write a row into the control table on a viewer's own connection, as any process could
    (unchecked: the host must refuse what is wrong), and wait for the host's answer."""
    viewer = connect(host.team.hostdb_path)
    with viewer:
        cursor = viewer.execute(
            "INSERT INTO commands (ts, panel, verb, args) VALUES (0, ?, ?, ?)",
            (panel, verb, json.dumps(args)),
        )
    ident = cursor.lastrowid
    await events.wait("command", where=lambda e: e.id == ident)
    done = get_command(viewer, ident)
    viewer.close()
    return done


async def test_commands_from_another_connection_are_applied_and_answered(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    async with start_host(team, {"a": [reply("hi")]}) as (host, events, drivers):
        runner = host.panels["a"]
        assert (await command(host, events, "pause", "a")).state == "done"
        assert runner.state == "paused"
        off = await command(host, events, "inbox", "a", on=False)
        assert off.outcome == "inbox delivery is off"
        assert (await command(host, events, "model", "a", model="claude-haiku-4-5")).state == "done"
        queued = await command(host, events, "input", "a", text="hello")
        assert queued.outcome.startswith("queued as message")
        await command(host, events, "resume", "a")
        await events.wait("turn_ended", "a")
        halted = await command(host, events, "halt", "a", reason="enough")
        assert halted.state == "done" and runner.state == "halted"
        missing = await command(host, events, "pause", "ghost")
        assert missing.state == "failed" and "ghost" in missing.outcome
        assert (await command(host, events, "input", "a")).state == "failed"  # no text
        unknown = await command(host, events, "explode", "a")
        assert unknown.state == "failed" and "unknown verb 'explode'" in unknown.outcome
    assert drivers["a"].requests[0].model == "claude-haiku-4-5"
    assert drivers["a"].requests[0].blocks[-1]["text"] == "hello"  # passed the closed inbox


async def test_an_approval_request_waits_for_approve(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + ASK_BASH)
    turn = [ToolCall("t1", "Bash", {"command": "make deploy"}), Usage(10, 1), Done()]
    async with start_host(team, {"a": [turn]}) as (host, events, _):
        await command(host, events, "input", "a", text="deploy")
        (asked,) = await events.wait("approval_request", "a")
        assert host.panels["a"].state == "approval"
        assert asked.tool == "Bash" and "make deploy" in asked.target
        answer = await command(host, events, "answer", "a", request=asked.request, answer="yes")
        assert answer.state == "done"
        (answered,) = await events.wait("approval_answer", "a")
        await events.wait("turn_ended", "a")
    assert answered.answer == "yes"
    assert not [e for e in events.of("tool_result", "a") if e.error]


async def test_an_unanswered_approval_times_out_as_a_denial(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + ASK_BASH, extra="approval_timeout_seconds = 0.2")
    turn = [ToolCall("t1", "Bash", {"command": "make deploy"}), Usage(10, 1), Done()]
    async with start_host(team, {"a": [turn]}) as (host, events, _):
        await command(host, events, "input", "a", text="deploy")
        (answered,) = await events.wait("approval_answer", "a")
        (result,) = await events.wait("tool_result", "a")
        late = await command(host, events, "answer", "a", request=1, answer="no")
    assert answered.answer == "timed out (denied)"
    assert result.error and "not approved" in result.content
    assert late.state == "failed"


async def test_shutdown_is_a_command_too(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    async with start_host(team, {"a": []}) as (host, events, _):
        viewer = connect(team.hostdb_path)
        submit_command(viewer, Shutdown())
        viewer.close()
        with anyio.fail_after(10):
            await host.stopped()
    assert events.of("host_stopped")


@pytest.mark.parametrize("answer", ["nope", "YES", "", "true", 1])
async def test_an_answer_that_is_not_yes_no_session_or_always_is_refused(
    anyio_backend: str, tmp_path: Path, start_host: Any, answer: Any
) -> None:
    team = make_team(tmp_path, panels("a") + ASK_BASH)
    turn = [ToolCall("t1", "Bash", {"command": "make deploy"}), Usage(10, 1), Done()]
    async with start_host(team, {"a": [turn]}) as (host, events, _):
        await command(host, events, "input", "a", text="deploy")
        (asked,) = await events.wait("approval_request", "a")
        refused = await command(host, events, "answer", "a", request=asked.request, answer=answer)
        assert refused.state == "failed" and "answer" in refused.outcome
        assert host.services.approvals.pending("a") == [asked.request]  # still asked
        no = await command(host, events, "answer", "a", request=asked.request, answer="no")
        assert no.state == "done"
        (result,) = await events.wait("tool_result", "a")
    assert result.error and "not approved" in result.content
