"""Every pane of the dashboard, in the terminal and in the browser, carries a badge when its
panel's tools run unconfined (a quiet one when they run in the sandbox), and a warning line
under the header says why and what to do. The app reads both from host.sqlite, so a viewer
in another process than the host (attach, the web page) shows them too."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from panels.hostdb import PanelRow, connect, set_meta
from panels.hostdb.status import TOOLS_SANDBOXED, TOOLS_UNCONFINED
from panels.ui.app import make_app
from panels.unconfined import UNCONFINED
from tests.panels.ui.conftest import until, write_host_db
from tests.panels.ui.test_web import TOKEN, chromium, load_and_read, served

NOTE = (
    f"{UNCONFINED} (with your full rights): bubblewrap (bwrap) is not installed; install "
    'bubblewrap (Debian/Ubuntu: apt-get install bubblewrap); or set sandbox = "required" '
    "under [team] in team.toml to refuse to start without it"
)
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio only


def host_db(path: Path, sandbox: str, note: str) -> Path:
    rows = [PanelRow(name=n, kind="worker", state="idle", sandbox=sandbox) for n in ("a", "b")]
    write_host_db(path, rows)
    conn = connect(path, create=False)
    try:
        set_meta(conn, {"sandbox": note})
    finally:
        conn.close()
    return path


@pytest.mark.anyio
async def test_unconfined_panes_carry_the_badge_and_the_line_says_why(tmp_path: Path) -> None:
    app = make_app(host_db(tmp_path / "host.sqlite", TOOLS_UNCONFINED, NOTE), read_only=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: len(app.panes) == 2 and app.panes["b"].status is not None)
        await pilot.pause()
        for pane in app.panes.values():
            assert pane.border_title == "UNCONFINED" and pane.has_class("unconfined")
        line = app.query_one("#unconfined", Static)
        assert line.display and line.has_class("shown")
        shown = str(line.render())
        assert "bubblewrap (bwrap) is not installed" in shown and "apt-get install" in shown


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("sandbox", "title"), [(TOOLS_SANDBOXED, "sandboxed"), ("", None)], ids=["confined", "unknown"]
)
async def test_confined_or_unknown_panes_have_no_warning(
    tmp_path: Path, sandbox: str, title: str | None
) -> None:
    note = "tools run in the sandbox (no network for commands)" if sandbox else ""
    app = make_app(host_db(tmp_path / "host.sqlite", sandbox, note), read_only=True)
    async with app.run_test(size=(160, 40)) as pilot:
        await until(pilot, lambda: len(app.panes) == 2 and app.panes["b"].status is not None)
        await pilot.pause()
        for pane in app.panes.values():
            assert pane.border_title == title and not pane.has_class("unconfined")
            assert pane.has_class("sandboxed") == (title is not None)
        line = app.query_one("#unconfined", Static)
        assert not line.display and str(line.render()) == ""


@pytest.fixture
def detached(tmp_path: Path) -> Iterator[Path]:
    """Team `t` with the sandbox off, started by `mnemara up --detach`; stopped at the end."""
    (tmp_path / "work").mkdir()
    team = tmp_path / "team.toml"
    team.write_text('[team]\nname = "t"\nworkdir = "work"\nsandbox = "off"\n'
                    '[[panels]]\nname = "kestrel"\n[[panels]]\nname = "osprey"\n')  # fmt: skip

    def mnemara(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "panels.cli.main", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=90)  # fmt: skip

    up = mnemara("up", str(team), "--detach")
    assert up.returncode == 0, up.stderr
    try:
        yield team
    finally:
        mnemara("down", "-t", "t")


@pytest.mark.slow
def test_a_browser_shows_the_badge_of_a_detached_unconfined_host(detached: Path) -> None:
    def marked(text: str) -> bool:
        return "kestrel" in text and "osprey" in text and text.count("UNCONFINED") == 2

    with chromium(detached.parent / "chromium") as devtools, served("--token", TOKEN) as url:
        text, _ = asyncio.run(load_and_read(devtools, url, marked))
    assert "warning: tools run unconfined: the sandbox is turned off" in text
    assert "host running" in text
