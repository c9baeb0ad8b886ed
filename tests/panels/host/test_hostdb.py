"""host.sqlite: event ids only grow (pruning, restarts), commands round-trip, change detection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from panels.hostdb import (
    SCHEMA_VERSION,
    HostDbError,
    NewEvent,
    PanelRow,
    append_events,
    connect,
    finish_command,
    get_command,
    last_event_id,
    last_events,
    open_hostdb,
    pending_commands,
    prune_commands,
    prune_events,
    read_events,
    read_panels,
    submit_command,
    upsert_panels,
)


def test_events_get_growing_ids_that_survive_pruning_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    conn = connect(path)
    ids = append_events(conn, [NewEvent("state", "a", {"state": "idle"}, ts=1.0)] * 10)
    assert ids == list(range(1, 11))
    assert prune_events(conn, keep=3) == 7
    assert [e.id for e in read_events(conn)] == [8, 9, 10]
    conn.close()
    conn = connect(path)
    assert append_events(conn, [NewEvent("halt", "b", {"rule": "repeat"})]) == [11]
    assert last_event_id(conn) == 11
    assert [e.kind for e in read_events(conn, after=9)] == ["state", "halt"]
    assert [e.id for e in read_events(conn, panel="b")] == [11]
    assert [e.id for e in read_events(conn, kinds=["halt"])] == [11]
    assert [e.id for e in last_events(conn, count=2)] == [10, 11]
    assert read_events(conn, after=10)[0].data == {"rule": "repeat"}


def test_commands_queue_until_finished_and_prune_keeps_pending(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    first = submit_command(conn, "input", panel="a", args={"text": "hi"})
    second = submit_command(conn, "pause", panel="b")
    assert [c.id for c in pending_commands(conn)] == [first, second]
    finish_command(conn, first, ok=True, outcome="queued as message 1")
    command = get_command(conn, first)
    assert command is not None and command.state == "done" and command.outcome.startswith("queued")
    assert [c.id for c in pending_commands(conn)] == [second]
    assert prune_commands(conn, keep=0) == 1
    assert [c.id for c in pending_commands(conn)] == [second]
    with pytest.raises(ValueError, match="unknown command"):
        submit_command(conn, "explode")


def test_panel_rows_are_rewritten_in_place(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    upsert_panels(conn, [PanelRow("a", "worker", "idle"), PanelRow("b", "watchdog", "idle")])
    upsert_panels(conn, [PanelRow("a", "worker", "thinking", turns=3, usd=0.5, inbox=False)])
    rows = {r.name: r for r in read_panels(conn)}
    assert rows["a"].state == "thinking" and rows["a"].turns == 3 and rows["a"].inbox is False
    assert rows["b"].state == "idle"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    raw.close()
    with pytest.raises(HostDbError, match="newer"):
        connect(path)
    with pytest.raises(HostDbError, match="mnemara up"):
        connect(tmp_path / "absent.sqlite", create=False)


@pytest.mark.anyio
async def test_the_async_wrapper_notices_another_connections_command(
    anyio_backend: str, tmp_path: Path
) -> None:
    path = tmp_path / "host.sqlite"
    async with open_hostdb(path) as db:
        assert not await db.wait_for_change(0.05, poll=0.01)
        await db.append([NewEvent("host_started")])
        assert not await db.wait_for_change(0.05, poll=0.01)  # our own write is not a change
        viewer = connect(path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: anyio.to_thread.run_sync(submit_command, viewer, "shutdown"))
            assert await db.wait_for_change(5.0, poll=0.01)
        assert [c.verb for c in await db.pending_commands()] == ["shutdown"]
        viewer.close()
