"""The team graph's state lives in host.sqlite (schema v6, `loop_state`): a file an older host
wrote opens and learns the table; a restarted host continues every chain and rate window
where the last one left it; the table is bounded; a resume's forgiveness reaches the file.
All on real files made by the real schema code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import anyio
import pytest

from panels.host.loops.graph import Sent, TeamGraph, TurnEnd
from panels.host.loops.rules import LoopSettings, LoopVerdict
from panels.host.loops.state import decode, encode
from panels.host.loops.watch import LoopWatch
from panels.host.loops.world import NO_CHANGE
from panels.hostdb import SCHEMA_VERSION, connect, open_hostdb, read_panels
from panels.hostdb import schema as hostdb_schema
from panels.hostdb.loopstate import count_loop_rows, load_loop_rows, save_loop_rows
from peerbus import Message

pytestmark = pytest.mark.anyio


def store(graph: TeamGraph, path: Path) -> None:
    """Write what the graph changed to the file, as the loop watch's flush does."""
    conn = connect(path)
    try:
        rows, dropped = encode(graph.take_changes())
        save_loop_rows(conn, rows, dropped, keep=graph.settings.memory)
    finally:
        conn.close()


def reopen(path: Path, settings: LoopSettings | None = None) -> TeamGraph:
    """A restarted host's graph: fresh, restored from the file."""
    graph = TeamGraph(settings)
    conn = connect(path)
    try:
        graph.restore(decode(load_loop_rows(conn), graph.settings))
    finally:
        conn.close()
    return graph


def exchange(graph: TeamGraph, first: int, last: int) -> list[tuple[int, LoopVerdict]]:
    """Turns `first`..`last` alternating a and b, 30 s apart, each consuming the message
    before and replying with nothing new and no world change; what each turn found."""
    found = []
    for n in range(first, last + 1):
        me, other = ("a", "b") if n % 2 else ("b", "a")
        got = graph.turn_ended(TurnEnd(me, n, (n - 1,), NO_CHANGE, 30.0 * n))
        got += graph.sent(Sent(n, me, other, f"over to you ({n})", turn=n, at=30.0 * n))
        found += [(n, v) for v in got]
    return found


def test_a_version_5_file_opens_and_learns_the_loop_table(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    raw = sqlite3.connect(path)
    for step in range(1, 6):
        for statement in hostdb_schema.MIGRATION_STEPS[step]:
            raw.execute(statement)
    raw.execute("INSERT INTO panels (name, kind, state, updated_ts) VALUES ('a', 'worker', "
                "'idle', 1)")  # fmt: skip
    raw.execute("PRAGMA user_version = 5")
    raw.commit()
    raw.close()
    conn = connect(path)
    try:
        assert int(conn.execute("PRAGMA user_version").fetchone()[0]) == SCHEMA_VERSION == 6
        assert [row.name for row in read_panels(conn)] == ["a"]
        assert load_loop_rows(conn) == [] and count_loop_rows(conn) == {}
    finally:
        conn.close()


def test_a_loop_four_exchanges_in_before_a_restart_halts_at_the_sixth_after_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "host.sqlite"
    before = TeamGraph()
    assert exchange(before, 1, 5) == []  # messages 1 to 4 consumed, the 5th in flight
    store(before, path)
    after = reopen(path)
    found = exchange(after, 6, 8)
    # Turn 7 consumes the 6th idle message of the chain: the ping-pong closes there.
    assert [(n, v.rule) for n, v in found][:1] == [(7, "ping_pong")]
    assert found[0][1].message_ids == (1, 2, 3, 4, 5, 6)
    # A host that forgot the graph (the old in-memory one) would still be counting.
    assert exchange(TeamGraph(), 6, 8) == []


def test_a_rate_window_goes_on_across_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    graph = TeamGraph()
    verdicts = []
    for n in range(1, 41):  # 40 distinct messages on a -> b in 200 s: flagged above 30
        verdicts += graph.sent(Sent(n, "a", "b", f"task {n}", at=5.0 * n))
    assert [v.halt for v in verdicts] == [False]
    store(graph, path)
    graph = reopen(path)
    for n in range(41, 47):
        verdicts += graph.sent(Sent(n, "a", "b", f"task {n}", at=5.0 * n))
    # The 46th within 300 s halts the sender; the flag was not given a second time.
    assert [(v.halt, v.message_ids[-1]) for v in verdicts] == [(False, 31), (True, 46)]
    assert LoopSettings().rate_halt == 45


def test_a_reopened_graph_holds_what_the_first_one_held(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    graph = TeamGraph()
    exchange(graph, 1, 9)
    store(graph, path)
    again = reopen(path)
    assert list(again.nodes.items()) == list(graph.nodes.items())
    assert list(again.turns.items()) == list(graph.turns.items())
    assert [(e, list(w.sends), w.flagged, w.halted) for e, w in again.edges.items()] == [
        (e, list(w.sends), w.flagged, w.halted) for e, w in graph.edges.items()
    ]


def test_the_table_is_bounded_and_a_resume_reaches_the_file(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    settings = LoopSettings(memory=50)
    graph = TeamGraph(settings)
    for start in range(1, 600, 100):  # written in six batches, as a running host does
        exchange(graph, start, start + 99)
        store(graph, path)
    conn = connect(path)
    try:
        assert count_loop_rows(conn) == {"node": 50, "turn": 50, "edge": 2}
        newest = [int(r.key) for r in load_loop_rows(conn) if r.kind == "node"]
        assert newest == list(range(551, 601))  # the oldest were pruned
    finally:
        conn.close()
    graph.forgive("a")
    store(graph, path)
    conn = connect(path)
    try:
        # Every message and edge involved `a`; `b`'s own turns stay.
        assert count_loop_rows(conn) == {"turn": 25}
        assert all('"b"' in r.key for r in load_loop_rows(conn))
    finally:
        conn.close()


async def test_the_watch_writes_as_it_goes_and_when_it_stops(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    async with open_hostdb(path) as db:
        watch = LoopWatch(TeamGraph(), emit=lambda _: None, clock=lambda: 100.0, store=db,
                          interval=0.0)  # fmt: skip
        assert await watch.restore() == 0
        async with anyio.create_task_group() as tg:
            await tg.start(watch.serve)
            for n in range(1, 5):
                me, other = ("a", "b") if n % 2 else ("b", "a")
                before = [Message(n - 1, other, me, None, {"type": "message", "text": "x"}, "")]
                watch.turn_ended(me, n, (n, before if n > 1 else []), False)
                watch.published(me, n, other, {"type": "message", "text": f"to you {n}"}, n)
            tg.cancel_scope.cancel()  # the host stops: the last changes are written anyway
        rows = await db.load_loop_rows()
    assert sorted(r.key for r in rows if r.kind == "node") == ["1", "2", "3", "4"]
    async with open_hostdb(path) as db:
        restarted = LoopWatch(TeamGraph(), emit=lambda _: None, clock=lambda: 100.0, store=db)
        assert await restarted.restore() == len(rows)
    assert restarted.graph.knows(4) and restarted.graph.nodes[4].idle[0].id == 1
