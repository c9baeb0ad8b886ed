"""The status line's and the team bar's figures, and a viewer on a file an older host wrote."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from panels.hostdb import PanelRow
from panels.hostdb import catalogue as ev
from panels.hostdb import schema as hostdb_schema
from panels.ui.app import make_app
from panels.ui.busread import bus_counts
from panels.ui.lines import (
    BusActivity,
    alert_line,
    approvals_line,
    grid_columns,
    header_line,
    spare_cells,
    status_line,
    tokens,
)
from panels.ui.panelfiles import latest_replay
from panels.ui.tail import open_tail
from peerbus import BusSnapshot, Flow
from tests.panels.ui.conftest import until

pytestmark = pytest.mark.anyio


def test_the_status_line_shows_window_spend_inbox_epoch_and_model() -> None:
    row = PanelRow("a", "worker", "idle", turns=3, usd=0.41, epoch=2, model="m-1",
                   window_tokens=12_345, token_cap=200_000, budget_usd=2.0, waiting=3)  # fmt: skip
    line = status_line(row)
    assert line == (
        "idle · turns 3 · window 12.3k/200k tok · $0.41/$2.00 · inbox 3 · epoch 2 · m-1"
    )
    plain = status_line(PanelRow("a", "worker", "paused", inbox=False, waiting=2, dead_letters=1))
    assert plain.startswith("paused · turns 0 · 1 dead · window 0 tok · $0.00 · inbox off (2 held)")
    assert [tokens(n) for n in (950, 1_000, 99_999, 1_500_000)] == ["950", "1k", "100k", "1.5M"]


def test_the_team_bar_sums_spend_against_the_budget_and_counts_the_bus() -> None:
    rows = [PanelRow("a", "worker", "idle", usd=0.25, input_tokens=900, dead_letters=1),
            PanelRow("b", "worker", "idle", usd=0.35, output_tokens=100)]  # fmt: skip
    events = [
        ev.MessageSent(panel="a", to="b", id=1, topic=None, terminal=False, text="x"),
        ev.MessageSent(panel="b", to="a", id=2, topic=None, terminal=False, text="y"),
        ev.Delivered(panel="b", turn=1, ids=(1, 7), senders=("a", "operator")),
        ev.DeadLettered(panel="a", id=2, reason="broke"),
        ev.Said(panel="a", text="not the bus"),
    ]
    bus = BusActivity().plus(events[:2]).plus(events[2:])
    assert (bus.sent, bus.delivered, bus.dead) == (2, 2, 1)
    meta = {"team": "crew", "budget_usd": "5.0", "budget_tokens": "1000000"}
    line = header_line(meta, running=True, panels=2, rows=rows, bus=bus, waiting=1)
    assert line == ("team crew · host running · 2 panel(s) · spent $0.60/$5.00 · 1k/1M tok · "
                    "bus 2 sent, 2 delivered, 1 dead · 1 approval(s) waiting")  # fmt: skip
    bare = header_line({"team": "crew"}, running=False, panels=0)
    assert bare == "team crew · host stopped · 0 panel(s) · spent $0.00"


def test_the_header_shows_the_latest_replay_of_any_panel(tmp_path: Path) -> None:
    meta = {"team": "crew", "instance:a": str(tmp_path / "a"), "instance:b": str(tmp_path / "b")}
    assert latest_replay(meta) is None
    for panel, at, patterns in (("a", "2026-12-01T09:14:03+00:00", 3),
                                ("b", "2026-11-30T10:00:00+00:00", 5)):  # fmt: skip
        record = {"at": at, "mode": "apply", "days": 7, "threshold": 3, "atoms": 9,
                  "patterns": patterns, "proposals": 1, "archived": 0, "amendments": 0,
                  "digest": "sleep/x.md"}  # fmt: skip
        (tmp_path / panel / "sleep").mkdir(parents=True)
        (tmp_path / panel / "sleep" / "last_replay.json").write_text(json.dumps(record))
    (tmp_path / "c" / "sleep").mkdir(parents=True)
    (tmp_path / "c" / "sleep" / "last_replay.json").write_text("{not json")
    meta["instance:c"] = str(tmp_path / "c")
    shown = latest_replay(meta)
    assert shown == "a 2026-12-01 09:14, 3 pattern(s)"
    line = header_line(meta, running=True, panels=3, replay=shown)
    assert line.endswith(" · replay a 2026-12-01 09:14, 3 pattern(s)")


def version_3_file(path: Path) -> None:
    raw = sqlite3.connect(path)
    for step in (1, 2, 3):
        for statement in hostdb_schema.MIGRATION_STEPS[step]:
            raw.execute(statement)
    raw.execute("INSERT INTO meta (key, value) VALUES ('team', 'old'), ('pid', '0')")
    raw.execute(
        "INSERT INTO panels (name, kind, state, turns, updated_ts, dead_letters) "
        "VALUES ('a', 'worker', 'idle', 4, 1, 2)"
    )
    raw.execute("PRAGMA user_version = 3")
    raw.commit()
    raw.close()


async def test_a_viewer_reads_a_file_an_older_host_wrote(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    version_3_file(path)
    async with open_tail(path) as tail:
        changes = await tail.poll()
    assert changes.panels is not None
    (row,) = changes.panels
    assert (row.name, row.turns, row.dead_letters, row.window_tokens) == ("a", 4, 2, 0)
    app = make_app(path, read_only=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: "a" in app.panes and app.panes["a"].status is not None)
        assert "turns 4" in status_line(app.panes["a"].status)
    raw = sqlite3.connect(path)
    assert raw.execute("PRAGMA user_version").fetchone()[0] == 3  # read, never migrated
    raw.close()


def test_the_team_cell_lines_and_the_spare_cells_of_the_grid() -> None:
    assert [spare_cells(n, grid_columns(n)) for n in range(0, 8)] == [0, 0, 0, 1, 0, 1, 0, 2]
    assert approvals_line(()) == "no approval waiting"
    waiting = (("engineer", 1), ("producer", 2), ("engineer", 4))
    assert approvals_line(waiting) == "3 approval(s) waiting: engineer (1, 4), producer (2)"
    said = ev.AlertRaised(panel=None, alert="quiet", text="the team is quiet\x1b[2J: [b]done")
    assert alert_line(said) == "quiet · team · the team is quiet[2J: [b]done"
    flow = tuple(Flow(i, "a", "b", "-", "", status, 1)
                 for i, status in enumerate(("queued", "claimed", "acked", "queued")))  # fmt: skip
    counts = bus_counts(BusSnapshot(flow=flow, dead=flow[:1]))
    assert (counts.pending, counts.dead, counts.shown) == (3, 1, 4)
    assert counts.by_status == (("acked", 1), ("claimed", 1), ("queued", 2))
