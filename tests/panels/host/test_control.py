"""Viewers' commands through the control table, and headless approvals answered through it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.hostdb import connect, get_command, submit_command
from runtime.driver import Done, ToolCall, Usage
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

ASK_BASH = '[[panels.policy]]\ntool = "Bash"\nmode = "ask"\n'


async def command(host: Any, events: Any, verb: str, panel: str | None, **args: Any) -> Any:
    """Write a command on a viewer's own connection and wait for the host's answer."""
    viewer = connect(host.team.hostdb_path)
    ident = submit_command(viewer, verb, panel=panel, args=args)
    await events.wait("command", where=lambda e: e.data["id"] == ident)
    done = get_command(viewer, ident)
    viewer.close()
    return done


async def test_commands_from_another_connection_are_applied_and_answered(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    async with start_host(team, {"a": [reply("hi")]}) as (host, events, drivers):
        runner = host.services.panels["a"]
        assert (await command(host, events, "pause", "a")).state == "done"
        assert runner.state == "paused"
        assert (await command(host, events, "inbox", "a", on=False)).outcome == "inbox off"
        assert (await command(host, events, "model", "a", model="claude-haiku-4-5")).state == "done"
        queued = await command(host, events, "input", "a", text="hello")
        assert queued.outcome.startswith("queued as message")
        await command(host, events, "resume", "a")
        await events.wait("turn_ended", "a")
        halted = await command(host, events, "halt", "a", reason="enough")
        assert halted.state == "done" and runner.state == "halted"
        missing = await command(host, events, "pause", "ghost")
        assert missing.state == "failed" and "ghost" in missing.outcome
        assert (await command(host, events, "input", "a")).state == "failed"
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
        assert host.services.panels["a"].state == "approval"
        assert asked.data["tool"] == "Bash" and "make deploy" in asked.data["target"]
        answer = await command(host, events, "approve", "a", request=asked.data["request"])
        assert answer.state == "done"
        (answered,) = await events.wait("approval_answer", "a")
        await events.wait("turn_ended", "a")
    assert answered.data["answer"] == "yes"
    assert not [e for e in events.of("tool_result", "a") if e.data["error"]]


async def test_an_unanswered_approval_times_out_as_a_denial(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + ASK_BASH, extra="approval_timeout_seconds = 0.2")
    turn = [ToolCall("t1", "Bash", {"command": "make deploy"}), Usage(10, 1), Done()]
    async with start_host(team, {"a": [turn]}) as (host, events, _):
        await command(host, events, "input", "a", text="deploy")
        (answered,) = await events.wait("approval_answer", "a")
        (result,) = await events.wait("tool_result", "a")
        late = await command(host, events, "deny", "a", request=1)
    assert answered.data["answer"] == "timed out (denied)"
    assert result.data["error"] and "not approved" in result.data["content"]
    assert late.state == "failed"


async def test_shutdown_is_a_command_too(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    async with start_host(team, {"a": []}) as (host, events, _):
        viewer = connect(team.hostdb_path)
        submit_command(viewer, "shutdown")
        viewer.close()
        with anyio.fail_after(10):
            await host.stopped()
    assert events.of("host_stopped")
