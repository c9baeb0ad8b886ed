"""Whole turns through the real CLI: role doc edits, stops mid-turn, and an overloaded service."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from runtime.errors import ServiceBusyError
from runtime.rehearsal import Faults, Reply, Script
from runtime.store import TurnStore
from runtime.turn.events import STOPPED_NOTE, SessionEvent, TurnCommitted
from runtime.turn.prompt import HEAD_TEXT, INTERRUPTED_NOTE
from runtime.window.rows import text_of

from .conftest import ROLE_DOC, Rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


def system_texts(body: dict[str, Any]) -> list[str]:
    return [str(block["text"]) for block in body["system"]]


async def test_a_role_doc_edit_reaches_the_next_request(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    edited = "# Role\nYou are the e2e panel, now reviewing instead of writing.\n"
    async with rehearse("[panels.eng]\n") as rig, rig.session() as session:
        [e async for e in session.turn("first")]
        rig.paths.role.write_text(edited, encoding="utf-8")
        [e async for e in session.turn("second")]

    first, second = rig.requests()
    assert ROLE_DOC in system_texts(first) and edited not in system_texts(first)
    assert edited in system_texts(second) and ROLE_DOC not in system_texts(second)


async def test_the_cli_puts_nothing_volatile_before_our_head_block(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    # DESIGN.md section 5: CLAUDE.md files and the git attribution reminder would land at the
    # start of the first user message, ahead of our transcript, and break its cached prefix.
    async with rehearse("[panels.eng]\n") as rig, rig.session() as session:
        (rig.work / "CLAUDE.md").write_text("PROJECT-CLAUDE-MD\n", encoding="utf-8")
        user_dir = Path(rig.env["HOME"]) / ".claude"
        user_dir.mkdir()
        (user_dir / "CLAUDE.md").write_text("USER-CLAUDE-MD\n", encoding="utf-8")
        [e async for e in session.turn("first")]
        [e async for e in session.turn("second")]

    heads = []
    for body in rig.requests():
        texts = [str(block["text"]) for block in body["messages"][0]["content"]]
        heads.append(texts[: texts.index(HEAD_TEXT)])
    first, second = heads
    assert first == second  # what the CLI adds before our blocks is the same on every turn
    injected = "\n".join(first)
    for volatile in ("CLAUDE-MD", "Attribution", "Co-Authored-By", "MEMORY.md"):
        assert volatile not in injected


async def test_a_stop_mid_turn_leaves_the_store_consistent(
    rehearse: Rehearse, anyio_backend: str, cli_children: Any
) -> None:
    request_arrived = anyio.Event()
    calls = 0

    def slow_then_quick(body: dict[str, Any]) -> Reply:
        nonlocal calls
        calls += 1
        if calls == 1:
            request_arrived.set()  # the server runs on this event loop: no thread crossing
            return Reply(Reply.text("too late").content, faults=Faults(delay_first_token=60))
        return Reply.text("Picking up again.")

    events: list[SessionEvent] = []
    script = Script.from_hooks({"eng": slow_then_quick})
    async with rehearse(script) as rig, rig.session() as session:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:

                async def run() -> None:
                    async for event in session.turn("a long job"):
                        events.append(event)

                tg.start_soon(run)
                await request_arrived.wait()  # the CLI now waits on the model: mid-turn
                assert cli_children() != []
                tg.cancel_scope.cancel()
        assert cli_children() == []
        assert not any(isinstance(e, TurnCommitted) for e in events)

        with TurnStore.open(rig.paths.turns) as store:  # what is on disk, not in memory
            rows = store.rows()
        assert [(r.role, r.status) for r in rows] == [
            ("user", "complete"),
            ("assistant", "complete"),
        ]
        assert text_of(rows[0].blocks) == "a long job"
        assert text_of(rows[1].blocks) == STOPPED_NOTE

        # The next turn runs normally and shows the model what happened.
        [e async for e in session.turn("carry on")]
    sent = json.dumps(rig.requests()[-1]["messages"])
    assert "a long job" in sent and STOPPED_NOTE in sent


async def test_an_overloaded_service_is_a_clear_error_and_loses_no_input(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    script = """
[[panels.eng.replies]]
error = "overloaded"

[[panels.eng.replies]]
text = "Back again."
"""
    async with rehearse(script, retries=0) as rig, rig.session() as session:
        with pytest.raises(ServiceBusyError) as raised:
            [e async for e in session.turn("deploy the fix")]
        message = str(raised.value)
        assert "overloaded" in message.lower() and "input is kept" in message
        rows = await session.store.rows()
        assert [(r.role, r.status, text_of(r.blocks)) for r in rows] == [
            ("user", "interrupted", "deploy the fix")
        ]
        [e async for e in session.turn("are you back?")]

    assert [r.status for r in rig.server.requests("eng")] == [529, 200]
    retry = json.dumps(rig.requests()[-1]["messages"])
    assert "deploy the fix" in retry and INTERRUPTED_NOTE in retry
