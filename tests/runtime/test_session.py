"""A session's turns, through the ScriptedDriver: what is stored, what is sent, what survives."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

import anyio
import pytest

from runtime.errors import CredentialsError, ServiceBusyError
from runtime.instance.config import load_config, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import (
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    ToolCall,
    ToolResult,
    TurnRequest,
    Usage,
)
from runtime.turn.events import STOPPED_NOTE, TurnCommitted
from runtime.turn.open import open_session
from runtime.turn.prompt import strip_cache_markers
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import NewRow

pytestmark = pytest.mark.anyio


def reply(text: str, out: int = 7) -> list[DriverEvent]:
    return [TextDelta(text), Usage(100, out), Done()]


async def run(session: object, text: str) -> list[object]:
    return [e async for e in session.turn(text)]  # type: ignore[attr-defined]


async def test_turn_stores_input_and_reply_with_reported_tokens(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver([[TextDelta("hel"), TextDelta("lo"), Usage(100, 7), Done()]])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        events = await run(s, "hi")
        rows = await s.store.rows()
    assert isinstance(events[-1], TurnCommitted)
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[0].status == "complete"
    assert rows[1].blocks == ({"type": "text", "text": "hello"},)
    assert rows[1].tokens == 7 and rows[1].tokens_exact
    assert driver.requests[0].system == "ROLE v1"


async def test_role_doc_edit_reaches_the_next_request(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver([reply("a"), reply("b")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "one")
        instance.role.write_text("ROLE v2 - edited", encoding="utf-8")
        await run(s, "two")
    assert [r.system for r in driver.requests] == ["ROLE v1", "ROLE v2 - edited"]


async def test_consecutive_requests_share_a_byte_identical_prefix(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver([reply("a"), reply("b"), reply("c")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        for text in ("one", "two", "three"):
            await run(s, text)
    second, third = driver.requests[1], driver.requests[2]
    assert second.system == third.system
    stable = len(second.blocks) - 1  # everything before the input block of turn two
    dump = lambda blocks: json.dumps(strip_cache_markers(blocks), sort_keys=True).encode()  # noqa: E731
    assert dump(second.blocks[:stable]) == dump(third.blocks[:stable])
    assert "cache_control" in third.blocks[stable + 1]  # the marker moved to the newest row


async def test_tool_results_are_stored_capped_for_the_next_turn(
    instance: InstancePaths, approver: object
) -> None:
    config = load_config(instance.config).model_copy(update={"tool_result_max_chars": 500})
    save_config(instance.config, config)
    big = "x" * 5_000
    driver = ScriptedDriver(
        [
            [
                ToolCall("t1", "Read", {"file_path": "/etc/hostname"}),
                ToolResult("t1", big),
                TextDelta("done"),
                Usage(10, 3),
                Done(),
            ],
            reply("ok"),
        ]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "read it")
        await run(s, "again")
        rows = await s.store.rows()
    result = next(b for b in rows[1].blocks if b["type"] == "tool_result")
    assert len(result["content"]) < 1_000 and "truncated" in result["content"]
    assert any("[tool_result for=t1]" in b["text"] for b in driver.requests[1].blocks)


async def test_credentials_error_keeps_the_input_marked(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver([[ErrorEvent("credentials", "no key")]])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        with pytest.raises(CredentialsError):
            await run(s, "hello?")
        rows = await s.store.rows()
    assert [(r.role, r.status) for r in rows] == [("user", "interrupted")]


async def test_overloaded_keeps_input_and_next_turn_sees_it(
    instance: InstancePaths, approver: object
) -> None:
    driver = ScriptedDriver(
        [[ErrorEvent("overloaded", "529 overloaded", retryable=True)], reply("ok")]
    )
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        with pytest.raises(ServiceBusyError, match="kept"):
            await run(s, "important input")
        await run(s, "retry")
    texts = [b["text"] for b in driver.requests[1].blocks]
    assert any("important input" in t and "no reply was recorded" in t for t in texts)


async def test_prompt_too_long_evicts_bulk_and_retries_once(
    instance: InstancePaths, approver: object
) -> None:
    with TurnStore.open(instance.turns) as store:
        store.append(
            [
                NewRow("user", ({"type": "text", "text": "read"},), 2),
                NewRow(
                    "assistant",
                    (
                        {
                            "type": "tool_use",
                            "id": "r",
                            "name": "Read",
                            "input": {"file_path": "/a"},
                        },
                        {"type": "tool_result", "tool_use_id": "r", "content": "y" * 3000},
                    ),
                    800,
                ),
            ]
        )
    driver = ScriptedDriver([[ErrorEvent("prompt_too_long", "prompt is too long")], reply("fits")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "go on")
        rows = await s.store.rows()
    first, second = (len(json.dumps(r.blocks)) for r in driver.requests)
    assert second < first
    assert rows[-1].blocks[0]["text"] == "fits"


class HangingDriver:
    """Streams one delta and then waits forever: a turn that only a stop can end."""

    def __init__(self) -> None:
        self.started = anyio.Event()

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        yield TextDelta("partial answer")
        self.started.set()
        await anyio.sleep_forever()


async def test_stop_mid_turn_leaves_the_store_consistent(
    instance: InstancePaths, approver: object
) -> None:
    driver = HangingDriver()
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        async with anyio.create_task_group() as tg:

            async def turn() -> None:
                await run(s, "long job")

            tg.start_soon(turn)
            await driver.started.wait()
            tg.cancel_scope.cancel()
        rows = await s.store.rows()
        spend = json.loads(await s.store.get_meta("spend") or "{}")
    assert [(r.role, r.status) for r in rows] == [("user", "complete"), ("assistant", "complete")]
    texts = [b["text"] for b in rows[1].blocks]
    assert texts == ["partial answer", STOPPED_NOTE]
    assert spend["turns"] == 1  # the stopped turn counts in the spend `show` prints


async def test_input_of_a_killed_process_is_recovered_as_interrupted(
    instance: InstancePaths, approver: object
) -> None:
    with TurnStore.open(instance.turns) as store:
        store.begin_turn(NewRow("user", ({"type": "text", "text": "lost?"},), 2))  # then "killed"
    driver = ScriptedDriver([reply("back")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "hello again")
        rows = await s.store.rows()
    assert rows[0].status == "interrupted"
    assert "no reply was recorded" in driver.requests[0].blocks[1]["text"]


@pytest.mark.parametrize("care", [False, True], ids=["with-the-commit", "after-care"])
async def test_window_is_trimmed_in_steps_after_a_turn(
    instance: InstancePaths, approver: object, care: bool
) -> None:
    """Without post-turn care the trim goes in the commit's hop; with it, after the care."""
    changes = {"max_window_turns": 4, "compress_repeated_reads": care}
    save_config(instance.config, load_config(instance.config).model_copy(update=changes))
    driver = ScriptedDriver([reply(str(i)) for i in range(3)])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "a")
        await run(s, "b")
        events = await run(s, "c")  # 6 rows > 4: drop to int(4 * 0.6) = 2 (the low-water mark)
        rows = await s.store.rows()
    assert len(rows) == 2
    assert any(type(e).__name__ == "Trimmed" for e in events)
    assert "window_trim" in instance.debug_log.read_text(encoding="utf-8")


async def test_slots_reach_the_tail_of_every_request(
    instance: InstancePaths, approver: object
) -> None:
    with TurnStore.open(instance.turns) as store:
        store.upsert_slot("health", "tool", "HP 73/100")
    driver = ScriptedDriver([reply("ok")])
    async with open_session("t1", driver=driver, approver=approver) as s:  # type: ignore[arg-type]
        await run(s, "status?")
    assert "HP 73/100" in driver.requests[0].blocks[-2]["text"]
