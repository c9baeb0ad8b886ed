"""Operator input stays on the host's own bus when the team's bus is a foreign table.

A solo instance with the original's `peer_poll_*` config (or a team file naming `bus`) runs
on a table other programs read. Operator input goes to `bus.sqlite` in the host's state dir
instead, and a turn then takes from one bus only (the turn store keeps consumed ids per bus):
operator input first, in a turn of its own. With the default bus, nothing changes: operator
input and peer messages share one turn.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from panels.host.delivery.feed import OPERATOR, operator_route
from panels.host.delivery.inboxes import bus_counts
from panels.host.solo import solo_team
from panels.host.turns.wakeup import BusWatch, Wakeup
from panels.hostdb.verbs import Input
from panels.team import TeamSpec
from peerbus import open_bus
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import ToolCall
from runtime.window.rows import Consumed, NewRow
from tests.panels.host.conftest import make_team, panels, reply
from tests.panels.host.test_solo import FOREIGN_DDL, make_instance

pytestmark = pytest.mark.anyio
SEND = "mcp__mnemara__send_message"
WORDS = "operator words: write the plan"  # no quote: the SQL dump would double it


def foreign_solo(tmp_path: Path, home: Path) -> tuple[TeamSpec, Path]:
    """A solo instance `panel-b` on a seven-column foreign table, taking panel-a's rows."""
    db = tmp_path / "peer_messages.db"
    conn = sqlite3.connect(db)
    conn.execute(FOREIGN_DDL)
    conn.commit()
    conn.close()
    make_instance(home, "panel-b", peer_poll_enabled=True, peer_db_path=str(db),
                  peer_poll_roles="panel-a")  # fmt: skip
    return solo_team("panel-b", home=home, cwd=tmp_path), db


def write_row(db: Path, text: str) -> None:
    """The original's writer: a row from panel-a to panel-b, straight into the table."""
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO returns (agent_role, recipient_role, payload_json, submitted_at) "
        "VALUES ('panel-a', 'panel-b', ?, datetime('now'))",
        (f'{{"type": "task", "text": "{text}"}}',),
    )
    conn.commit()
    conn.close()


def dump(path: Path) -> str:
    """Every row of every table in the SQLite file at `path`, as SQL text."""
    conn = sqlite3.connect(path)
    try:
        return "\n".join(conn.iterdump())
    finally:
        conn.close()


def foreign_files(db: Path) -> list[Path]:
    """The foreign table's file and our sidecar next to it (what other programs can read)."""
    return [p for p in (db, db.with_name(db.name + ".peerbus")) if p.is_file()]


def last_text(request: Any) -> str:
    return str(request.blocks[-1]["text"])


async def test_operator_input_on_a_foreign_table_stays_on_the_hosts_own_bus(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    team, db = foreign_solo(tmp_path, mnemara_home)
    script = {"panel-b": [reply("answered the operator"), reply("answered panel-a")]}
    # No periodic wake-up: the panel must be woken by the change on the operator's bus.
    async with start_host(team, script, bus_recheck=3600.0) as (host, events, drivers):
        services = host.services
        assert services.operator_bus is not services.bus
        assert services.operator_bus.file.path == team.state_dir / "bus.sqlite"
        # The panels wake on a change of either bus (test_the_bus_watch_wakes_...).
        assert {id(b) for b in services.watch.buses} == {
            id(services.bus),
            id(services.operator_bus),
        }
        outcome = await host.dispatch(Input(panel="panel-b", text=WORDS))
        assert outcome.ok and outcome.ticket is not None, outcome.text
        with anyio.fail_after(10):
            ticket = await outcome.ticket.wait()
        assert ticket.outcome == "done"
        write_row(db, "hello b")  # peer traffic still comes from the foreign table
        await events.wait("turn_ended", "panel-b", count=2)
        assert await services.operator_bus.inbox(operator_route("panel-b"), senders=()) == []
    texts = [last_text(r) for r in drivers["panel-b"].requests]
    assert texts[0] == WORDS and 'from="panel-a"' in texts[1] and "hello b" in texts[1]
    assert [e.outcome for e in events.of("turn_ended", "panel-b")] == ["done", "done"]
    assert events.of("settled", "panel-b")[0].acked == (outcome.message,)  # once, not again
    for path in foreign_files(db):
        text = dump(path)
        assert "@operator" not in text and WORDS not in text, path
    (row,) = sqlite3.connect(db).execute("SELECT agent_role, status FROM returns").fetchall()
    assert row == ("panel-a", "done")
    assert WORDS in dump(team.state_dir / "bus.sqlite")


async def test_a_team_file_bus_gets_no_operator_input_either(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    shared = tmp_path / "shared-bus.sqlite"
    team = make_team(tmp_path, panels("a", "b"), extra=f'bus = "{shared}"')
    assert not team.bus_is_default
    async with start_host(team, {"a": [reply("done")], "b": []}) as (host, _, drivers):
        outcome = await host.dispatch(Input(panel="a", text=WORDS))
        assert outcome.ticket is not None
        with anyio.fail_after(10):
            assert (await outcome.ticket.wait()).outcome == "done"
    assert last_text(drivers["a"].requests[0]) == WORDS
    text = dump(shared)
    assert "@operator" not in text and WORDS not in text


async def test_operator_input_and_a_peer_row_pending_at_once_take_two_turns_operator_first(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    team, db = foreign_solo(tmp_path, mnemara_home)
    script = {"panel-b": [reply("one"), reply("two")]}
    async with start_host(team, script) as (host, events, drivers):
        runner = host.panels["panel-b"]
        runner.pause()
        # Held so that no claim is in flight while both arrive: a claim begun before the
        # pause could take the peer row and, finding the panel resumed, run it first.
        async with runner.between_turns():
            write_row(db, "hello b")
            outcome = await host.dispatch(Input(panel="panel-b", text=WORDS))
        await runner.resume(by="operator")
        await events.wait("turn_ended", "panel-b", count=2)
    deliveries = events.of("delivery", "panel-b")
    assert [d.senders for d in deliveries] == [("operator",), ("panel-a",)]
    assert deliveries[0].ids == (outcome.message,)
    first, second = (last_text(r) for r in drivers["panel-b"].requests)
    assert first == WORDS
    assert "hello b" in second and WORDS not in second
    assert [e.outcome for e in events.of("turn_ended", "panel-b")] == ["done", "done"]


async def test_an_operator_turn_on_a_foreign_table_sends_its_message_there(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    """The turn was fed from the operator's bus; its send belongs on the team's bus."""
    team, db = foreign_solo(tmp_path, mnemara_home)
    send = ToolCall("c1", SEND, {"to": "panel-a", "text": "news for a"})
    async with start_host(team, {"panel-b": [reply("sent", send)]}) as (host, events, _):
        await host.dispatch(Input(panel="panel-b", text="tell panel-a the news"))
        (sent,) = await events.wait("send", "panel-b")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT id, agent_role, recipient_role, payload_json FROM returns")
    (row,) = rows.fetchall()
    conn.close()
    assert row[:3] == (sent.id, "panel-b", "panel-a") and "news for a" in row[3]


async def test_operator_input_waiting_on_the_hosts_own_bus_is_counted_for_the_panel(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    team, db = foreign_solo(tmp_path, mnemara_home)
    async with start_host(team, {"panel-b": []}) as (host, _, _):
        host.panels["panel-b"].pause()
        write_row(db, "hello b")
        await host.dispatch(Input(panel="panel-b", text=WORDS))
        services = host.services
        # A claim begun before the pause may hold the row a moment (then gives it back,
        # untouched): count again at each change of the bus until both are waiting.
        with anyio.fail_after(20):
            while True:
                since = await services.bus.generation(recipient="panel-b")
                counts = await bus_counts(services.bus, services.operator_bus, host.panels)
                if counts["panel-b"].waiting == 2:
                    break
                await services.bus.wait_for_change(5, recipient="panel-b", since=since)
        # What an operator lists: the REPL's /inbox and `mnemara inbox` read both buses.
        listed = await anyio.to_thread.run_sync(
            lambda: CliRunner().invoke(app, ["inbox", "-t", "panel-b", "-p", "panel-b"])
        )
    assert counts["panel-b"].waiting == 2  # one on each bus
    assert listed.exit_code == 0, listed.output
    assert "2 waiting" in listed.output and "(operator input): " in listed.output
    assert WORDS.split(":")[0] in listed.output and "hello b" in listed.output


async def test_the_bus_watch_wakes_panels_on_a_change_of_the_operators_bus(
    anyio_backend: str, tmp_path: Path
) -> None:
    async with (
        open_bus(tmp_path / "team.sqlite") as team_bus,
        open_bus(tmp_path / "own.sqlite") as own,
    ):
        assert BusWatch(team_bus, team_bus).buses == (team_bus,)  # one bus, one watcher
        watch = BusWatch(team_bus, own, recheck=3600.0)  # no periodic wake-up
        flag = Wakeup()
        watch.add(flag.set)
        async with anyio.create_task_group() as tg:
            await tg.start(watch.serve)
            woken = flag.event
            await own.submit(OPERATOR, operator_route("a"), {"text": WORDS})
            with anyio.fail_after(10):
                await woken.wait()
            tg.cancel_scope.cancel()


async def _claim_and_leave(host: Any) -> Any:
    """Claim the operator input as a turn would, and never settle it (the host dies). The
    paused panel may be inside a claim of its own when the input lands (it gives the batch
    back untouched once it sees the pause): claim again until the input is free, within a
    deadline far above what a busy machine takes."""
    bus = host.services.operator_bus
    deadline = anyio.current_time() + 30.0
    while True:
        claim = await bus.claim(operator_route("panel-b"), senders=(), lease=900.0)
        if claim.ids or anyio.current_time() > deadline:
            return claim
        await anyio.sleep(0.05)


async def test_operator_input_committed_before_a_crash_is_not_run_again(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    # The host died between the turn's commit and its ack: the store has the id under the
    # operator bus's identity, the operator bus still has it leased.
    team, _ = foreign_solo(tmp_path, mnemara_home)
    async with start_host(team, {"panel-b": []}) as (host, _, _):
        host.panels["panel-b"].pause()
        ident = (await host.dispatch(Input(panel="panel-b", text=WORDS))).message
        claim = await _claim_and_leave(host)
        assert claim.ids == (ident,)
        source = host.services.operator_bus.identity
        assert source != host.services.bus.identity
    paths = InstancePaths.for_name("panel-b", mnemara_home)
    with TurnStore.open(paths.turns) as store:
        row = store.begin_turn(
            NewRow("user", ({"type": "text", "text": WORDS},), 1, consumed_ids=(ident,))
        )
        store.commit_turn(row, [], consumed=Consumed(source, (ident,)))
    async with start_host(team, {"panel-b": []}) as (host, events, drivers):
        (skipped,) = await events.wait("redelivery_skipped", "panel-b")
        assert await host.services.operator_bus.inbox(operator_route("panel-b"), senders=()) == []
        stats = await host.services.operator_bus.stats()
    assert skipped.ids == (ident,) and skipped.turns == (row,)
    assert drivers["panel-b"].requests == []  # not run a second time
    assert sum(r.leased for r in stats.recipients) == 0
    with TurnStore.open(paths.turns) as store:
        assert store.unacked(source) == []


async def test_operator_input_claimed_by_a_host_that_crashed_before_its_commit_comes_again(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, start_host: Any
) -> None:
    team, _ = foreign_solo(tmp_path, mnemara_home)
    async with start_host(team, {"panel-b": []}) as (host, _, _):
        host.panels["panel-b"].pause()
        ident = (await host.dispatch(Input(panel="panel-b", text=WORDS))).message
        assert (await _claim_and_leave(host)).ids == (ident,)
    async with start_host(team, {"panel-b": [reply("now")]}) as (host, events, drivers):
        await events.wait("turn_ended", "panel-b")
        assert await host.services.operator_bus.inbox(operator_route("panel-b"), senders=()) == []
    assert [e.ids for e in events.of("delivery", "panel-b")] == [(ident,)]
    assert [last_text(r) for r in drivers["panel-b"].requests] == [WORDS]
    assert events.of("settled", "panel-b")[0].acked == (ident,)


async def test_with_the_default_bus_operator_input_and_peers_share_one_turn(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a") + "paused = true\n" + panels("b"))
    async with start_host(team, {"a": [reply("both")], "b": []}) as (host, events, drivers):
        assert host.services.operator_bus is host.services.bus
        peer = await host.services.bus.submit("b", "a", {"type": "message", "text": "from b"})
        outcome = await host.dispatch(Input(panel="a", text=WORDS))
        await host.panels["a"].resume(by="operator")
        await events.wait("turn_ended", "a")
    assert outcome.message is not None
    (delivery,) = events.of("delivery", "a")
    assert delivery.ids == tuple(sorted((peer, outcome.message)))
    (request,) = drivers["a"].requests
    assert last_text(request).startswith(WORDS) and "from b" in last_text(request)
    assert sorted(p.name for p in team.state_dir.glob("*.sqlite")) == ["bus.sqlite", "host.sqlite"]
