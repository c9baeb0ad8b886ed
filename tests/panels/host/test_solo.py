"""Solo mode as a team of one (`mnemara run`), and the original's peer_poll config on a
foreign table: the instance's bus messages come between operator turns, shown on the face."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from panels.host.solo import solo_team
from panels.repl.face import run_face
from panels.repl.terminal import Terminal
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import reply
from tests.panels.repl.screen import Screen, drive_repl, feeder

pytestmark = pytest.mark.anyio

FOREIGN_DDL = """CREATE TABLE returns (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT,
    recipient_role TEXT, task_id TEXT, payload_json TEXT, status TEXT DEFAULT 'pending',
    submitted_at TEXT)"""


def make_instance(home: Path, name: str, **config: object) -> None:
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir(parents=True)
    save_config(paths.config, InstanceConfig(**config))  # type: ignore[arg-type]
    TurnStore.open(paths.turns).close()


async def test_a_peer_poll_instance_answers_a_foreign_table_without_a_poll_interval(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path
) -> None:
    db = tmp_path / "peer_messages.db"
    conn = sqlite3.connect(db)
    conn.execute(FOREIGN_DDL)
    conn.commit()
    make_instance(mnemara_home, "panel-b", peer_poll_enabled=True, peer_db_path=str(db),
                  peer_poll_roles="panel-a", peer_poll_interval_seconds=30)  # fmt: skip
    team = solo_team("panel-b", cwd=tmp_path)
    assert Path(team.bus) == db and team.panels[0].listens_to == ("panel-a",)
    driver = ScriptedDriver([reply("got it")])
    screen = Screen()
    terminal = Terminal(out=screen, read_line=feeder(["@got it@/quit"], screen))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_face(team, terminal, drivers=lambda spec: driver))
        await anyio.to_thread.run_sync(screen.wait_for, "/quit leaves")
        sent = time.monotonic()
        # The original's writer: a row addressed to this panel, straight into the table.
        conn.execute(
            "INSERT INTO returns (agent_role, recipient_role, payload_json, submitted_at) "
            "VALUES ('panel-a', 'panel-b', '{\"type\": \"task\", \"text\": \"hello b\"}', 'now')"
        )
        conn.commit()
        await anyio.to_thread.run_sync(screen.wait_for, "got it")
        delay = time.monotonic() - sent
    status = conn.execute("SELECT status FROM returns").fetchone()[0]
    conn.close()
    out = screen.getvalue()
    assert status == "done"  # acked into the foreign table's own status column
    assert delay < 5  # far under the original's 30 s polling
    assert 'from="panel-a"' in str(driver.requests[0].blocks[-1]["text"])
    assert "compatibility mode" in out
    assert "from panel-a]" in out and "assistant: got it" in out  # a peer's turn is shown


async def test_the_solo_face_sends_operator_input_and_quits(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path
) -> None:
    make_instance(mnemara_home, "me")
    driver = ScriptedDriver([reply("hi there")])
    out = await drive_repl(["/inbox off", "hello", "/quit"], driver, tmp_path, instance="me")
    assert "inbox delivery is off" in out and "assistant: hi there" in out
    assert driver.requests[0].blocks[-1]["text"] == "hello"
    bus = sqlite3.connect(Path(solo_team("me").bus))  # /quit left nothing claimed
    leased = bus.execute("SELECT count(*) FROM peerbus_receipts WHERE state = 'leased'")
    assert leased.fetchone()[0] == 0
    assert bus.execute("SELECT count(*) FROM peerbus_receipts WHERE state = 'done'").fetchone()[0]
    bus.close()


def test_a_solo_host_and_a_team_of_the_same_name_never_share_a_folder(
    mnemara_home: Path, tmp_path: Path
) -> None:
    """The defect: `init -i solo` + `run -i solo` started a second host in the `_teams/solo`
    folder of a running team named solo. A solo host's files are in its instance now."""
    from panels.team import parse_team

    make_instance(mnemara_home, "solo")
    team = parse_team('[team]\nname = "solo"\n[[panels]]\nname = "x"\n',
                      source=tmp_path / "team.toml", home=mnemara_home)  # fmt: skip
    solo = solo_team("solo", home=mnemara_home)
    assert solo.state_dir == mnemara_home / "solo" / "host"
    assert team.state_dir == mnemara_home / "_teams" / "solo"
    assert not {solo.hostdb_path, Path(solo.bus), solo.pid_path} & {
        team.hostdb_path,
        Path(team.bus),
        team.pid_path,
    }


async def test_a_second_run_of_an_instance_refuses_and_names_the_first(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path
) -> None:
    from panels.host import Host
    from runtime.instance.lease import InstanceLeasedError

    make_instance(mnemara_home, "me")
    first = Host(solo_team("me"), drivers=lambda spec: ScriptedDriver([]),
                 holder="`mnemara run` of instance 'me'")  # fmt: skip
    async with anyio.create_task_group() as tg:
        await tg.start(first.serve)
        with pytest.raises(InstanceLeasedError, match="in use by `mnemara run` of instance 'me'"):
            await run_face(solo_team("me", cwd=tmp_path), Terminal(read_line=lambda: ""),
                           drivers=lambda spec: ScriptedDriver([]))  # fmt: skip
        first.request_stop()


async def test_down_from_another_process_ends_the_solo_face(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path
) -> None:
    """A solo host writes its pid file like any host, so `mnemara down -t NAME` finds it;
    its shutdown verb stops the host, and the face leaves with it."""
    import threading

    from panels.host.process import read_pid
    from panels.hostdb import connect, submit_command
    from panels.hostdb.verbs import Shutdown
    from panels.procfs import pid_alive

    make_instance(mnemara_home, "me")
    team = solo_team("me", cwd=tmp_path)
    never = threading.Event()
    screen = Screen()

    def read_line() -> str:
        never.wait(30)  # the operator types nothing
        return ""

    async def shut_down() -> None:
        await anyio.to_thread.run_sync(screen.wait_for, "/help lists commands")
        pid = read_pid(team.pid_path)
        assert pid is not None and pid_alive(pid)
        viewer = connect(team.hostdb_path)
        submit_command(viewer, Shutdown())
        viewer.close()

    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(shut_down)
                await run_face(team, Terminal(out=screen, read_line=read_line),
                               drivers=lambda spec: ScriptedDriver([]))  # fmt: skip
    finally:
        never.set()
    assert "(the host was stopped: leaving)" in screen.getvalue()
    assert not team.pid_path.exists()


def _rows(db: Path, *texts: str) -> None:
    conn = sqlite3.connect(db)
    for text in texts:
        conn.execute(
            "INSERT INTO returns (agent_role, recipient_role, payload_json, submitted_at) "
            "VALUES ('panel-a', 'panel-b', ?, 'now')",
            (f'{{"type": "task", "text": "{text}"}}',),
        )
    conn.commit()
    conn.close()


@pytest.mark.parametrize("watermark", ["original", "none", "replay"])
async def test_switching_over_from_the_original_brings_no_history(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path, watermark: str
) -> None:
    db = tmp_path / "peer_messages.db"
    conn = sqlite3.connect(db)
    conn.execute(FOREIGN_DDL)
    conn.commit()
    conn.close()
    _rows(db, "old one", "old two", "seen by nobody")
    make_instance(mnemara_home, "panel-b", peer_poll_enabled=True, peer_db_path=str(db),
                  peer_poll_roles="panel-a")  # fmt: skip
    if watermark == "original":  # the original delivered rows 1 and 2, not 3
        (mnemara_home / "panel-b" / "peer_poll_watermark").write_text("2\n")
    team = solo_team("panel-b", cwd=tmp_path, replay_backlog=watermark == "replay")
    driver = ScriptedDriver([reply("got it"), reply("again")])
    screen = Screen()
    terminal = Terminal(out=screen, read_line=feeder(["@got it@/quit"], screen))
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_face(team, terminal, drivers=lambda spec: driver))
        await anyio.to_thread.run_sync(screen.wait_for, "/quit leaves")
        _rows(db, "new")
        await anyio.to_thread.run_sync(screen.wait_for, "got it")
    delivered = " ".join(str(r.blocks[-1]["text"]) for r in driver.requests)
    expected = {
        "original": ["seen by nobody", "new"],
        "none": ["new"],
        "replay": ["old one", "old two", "seen by nobody", "new"],
    }[watermark]
    for text in ("old one", "old two", "seen by nobody", "new"):
        assert (text in delivered) == (text in expected), (text, delivered)
