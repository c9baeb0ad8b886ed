"""Unconfined tools are said everywhere: the words (panels/unconfined.py, pure) and what a
real host records for the faces in other processes (each panel's status row, the meta note)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host import Host
from panels.hostdb import PanelRow, connect, get_meta, read_panels
from panels.hostdb.status import TOOLS_SANDBOXED, TOOLS_UNCONFINED
from panels.unconfined import PLAIN, UNCONFINED, badge, told, tools_state, warning
from runtime.sandbox import probe
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import FAST, make_team, panels

MISSING = f"{UNCONFINED} (with your full rights): bubblewrap (bwrap) is not installed; install it"


@pytest.fixture
def anyio_backend() -> str:
    return "trio"  # the host's own loop


def row(name: str, sandbox: str = "") -> PanelRow:
    return PanelRow(name=name, kind="worker", state="idle", sandbox=sandbox)


def test_the_note_says_what_to_do_for_a_team_file_and_for_run(tmp_path: Path) -> None:
    off = make_team(tmp_path, panels("a"), extra='sandbox = "off"')
    said = told(f"{UNCONFINED}: the sandbox is turned off", off)
    assert "full rights" in said
    assert f'set sandbox = "auto" under [team] in {tmp_path / "team.toml"}' in said
    auto = make_team(tmp_path, panels("a"))
    said = told(MISSING, auto)
    assert said.startswith(MISSING) and 'sandbox = "required"' in said
    # A team built in code (`mnemara run`'s) has no file: its switch is --sandbox.
    for mode, fix in (("off", "leave out --sandbox off"), ("auto", "--sandbox required")):
        team = replace(auto, source=None, sandbox=replace(auto.sandbox, mode=mode))
        assert fix in told(MISSING, team)
    confined = "tools run in the sandbox (no network for commands)"
    assert told(confined, auto) == confined


def test_a_row_decides_and_the_note_says_why() -> None:
    assert warning(MISSING, [row("a", TOOLS_UNCONFINED)]) == MISSING
    assert warning("", [row("a", TOOLS_UNCONFINED)]) == PLAIN  # a caller's own driver
    assert warning(MISSING, [row("a", TOOLS_SANDBOXED)]) is None
    mixed = warning(MISSING, [row("a", TOOLS_SANDBOXED), row("b", TOOLS_UNCONFINED)])
    assert mixed == f"b: {MISSING}"
    # Before any panel has said (not started yet), the host's note alone.
    assert warning(MISSING, [row("a")]) == MISSING and warning(MISSING, []) == MISSING
    assert warning("", [row("a")]) is None and warning("tools run in the sandbox", []) is None


def test_badges_and_driver_states() -> None:
    assert badge(row("a", TOOLS_UNCONFINED)) == "UNCONFINED"
    assert badge(row("a", TOOLS_SANDBOXED)) == "sandboxed"
    assert badge(row("a")) == "" and badge(None) == ""

    class Cli:
        def __init__(self, sandbox: object) -> None:
            self.sandbox = sandbox

    assert tools_state(Cli(None)) == TOOLS_UNCONFINED
    assert tools_state(Cli(object())) == TOOLS_SANDBOXED
    assert tools_state(ScriptedDriver([])) == ""  # starts no tools of its own


async def recorded(team: Any, **options: Any) -> tuple[dict[str, str], list[PanelRow], Host]:
    """Start a host that builds its own drivers (the Claude Code CLI's; no turn runs), and
    read back what it recorded for the faces."""
    host = Host(team, home=team.state_dir.parents[1], policy=FAST, log_interval=0.01, **options)
    async with anyio.create_task_group() as tg:
        await tg.start(host.serve)
        host.request_stop()
    conn = connect(team.hostdb_path, create=False)
    try:
        return get_meta(conn), read_panels(conn), host
    finally:
        conn.close()


async def test_an_unconfined_host_records_why_for_every_face(
    anyio_backend: str, tmp_path: Path
) -> None:
    team = make_team(tmp_path, panels("a", "b"), extra='sandbox = "off"')
    meta, rows, host = await recorded(team)
    assert [r.sandbox for r in rows] == [TOOLS_UNCONFINED, TOOLS_UNCONFINED]
    assert meta["sandbox"] == host.sandbox_note
    assert meta["sandbox"].startswith(UNCONFINED) and 'sandbox = "auto"' in meta["sandbox"]
    said = warning(meta["sandbox"], rows)
    assert said is not None and "turned off" in said


@pytest.mark.skipif(not probe().available, reason="bubblewrap cannot build a sandbox here")
async def test_a_confined_host_records_no_warning_and_a_later_life_forgets_the_old_one(
    anyio_backend: str, tmp_path: Path
) -> None:
    off = make_team(tmp_path, panels("a"), extra='sandbox = "off"')
    await recorded(off)
    meta, rows, _ = await recorded(make_team(tmp_path, panels("a")))
    assert [r.sandbox for r in rows] == [TOOLS_SANDBOXED]
    assert not meta["sandbox"].startswith(UNCONFINED)
    assert warning(meta["sandbox"], rows) is None
