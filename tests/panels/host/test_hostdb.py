"""host.sqlite: event ids only grow (pruning, restarts), typed events and verbs round-trip,
rows this version cannot read are refused or shown as unknown, change detection."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from panels.hostdb import (
    SCHEMA_VERSION,
    HostDbError,
    PanelRow,
    UnknownEvent,
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
from panels.hostdb import schema as hostdb_schema
from panels.hostdb.catalogue import Halted, HostStarted, StateChanged
from panels.hostdb.verbs import Input, Pause, Shutdown


def test_events_get_growing_ids_that_survive_pruning_and_reopening(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    conn = connect(path)
    idle = StateChanged(panel="a", state="idle", detail="")
    ids = append_events(conn, [(1.0, idle)] * 10)
    assert ids == list(range(1, 11))
    assert prune_events(conn, keep=3) == 7
    assert [e.id for e in read_events(conn)] == [8, 9, 10]
    conn.close()
    conn = connect(path)
    halt = Halted(panel="b", by="sentinel", source="sentinel", rule="repeat", message="m", turn=1)
    assert append_events(conn, [(2.0, halt)]) == [11]
    assert last_event_id(conn) == 11
    assert [e.event.kind for e in read_events(conn, after=9)] == ["state", "halt"]
    assert [e.id for e in read_events(conn, panel="b")] == [11]
    assert [e.id for e in read_events(conn, kinds=["halt"])] == [11]
    assert [e.id for e in last_events(conn, count=2)] == [10, 11]
    assert read_events(conn, after=10)[0].event == halt


def test_commands_queue_until_finished_and_prune_keeps_pending(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    first = submit_command(conn, Input(panel="a", text="hi"))
    second = submit_command(conn, Pause(panel="b"))
    assert [c.id for c in pending_commands(conn)] == [first, second]
    finish_command(conn, first, ok=True, outcome="queued as message 1")
    command = get_command(conn, first)
    assert command is not None and command.state == "done" and command.outcome.startswith("queued")
    assert [c.id for c in pending_commands(conn)] == [second]
    assert prune_commands(conn, keep=0) == 1
    assert [c.id for c in pending_commands(conn)] == [second]
    (pending,) = pending_commands(conn)
    assert (pending.verb, pending.panel, pending.args, pending.by) == (
        "pause", "b", {"reason": ""}, "operator"
    )  # fmt: skip


def test_rows_this_version_cannot_read_come_back_as_unknown(tmp_path: Path) -> None:
    conn = connect(tmp_path / "host.sqlite")
    rows = [
        ("future_kind", "{}"),  # a kind from a newer version
        ("halt", '{"v": 99, "rule": "x"}'),  # a newer schema of a known kind
        ("halt", '{"rule": 3}'),  # a field of the wrong type (and others missing)
        ("state", "not json"),
    ]
    for kind, data in rows:
        conn.execute(
            "INSERT INTO events (ts, panel, kind, data) VALUES (1, 'a', ?, ?)", (kind, data)
        )
    read = [e.event for e in read_events(conn)]
    assert all(isinstance(e, UnknownEvent) for e in read)
    assert [e.stored_kind for e in read if isinstance(e, UnknownEvent)] == [k for k, _ in rows]


def test_a_schema_1_database_is_migrated(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    raw = sqlite3.connect(path)
    for statement in hostdb_schema.MIGRATION_STEPS[1]:  # the file as version 1 made it
        raw.execute(statement)
    raw.execute("INSERT INTO commands (ts, panel, verb, args) VALUES (1, 'a', 'pause', '{}')")
    raw.execute(
        "INSERT INTO panels (name, kind, state, updated_ts) VALUES ('a', 'worker', 'idle', 1)"
    )
    raw.execute("PRAGMA user_version = 1")
    raw.commit()
    raw.close()
    conn = connect(path)
    (old,) = pending_commands(conn)
    assert (old.verb, old.by) == ("pause", "operator")
    (row,) = read_panels(conn)  # version 3 added the dead-letter count
    assert (row.name, row.dead_letters) == ("a", 0)
    assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION


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
        since = await db.generation()
        assert not await db.wait_for_change(0.05, since=since)  # nothing happened
        await db.append([(1.0, HostStarted(team="t", bus="b", pid=1))])
        since = await db.generation()
        viewer = connect(path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: anyio.to_thread.run_sync(submit_command, viewer, Shutdown()))
            assert await db.wait_for_change(5.0, since=since)
        assert [c.verb for c in await db.pending_commands()] == ["shutdown"]
        viewer.close()
