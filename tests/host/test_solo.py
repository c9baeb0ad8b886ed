"""Solo mode as a team of one, and the original's peer_poll config on a foreign table."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from panels.host.solo import run_solo_host, solo_team
from runtime.config import InstanceConfig, save_config
from runtime.home import InstancePaths
from runtime.scripted import ScriptedDriver
from runtime.store import TurnStore
from tests.host.conftest import reply

pytestmark = pytest.mark.anyio

FOREIGN_DDL = """CREATE TABLE returns (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT,
    recipient_role TEXT, task_id TEXT, payload_json TEXT, status TEXT DEFAULT 'pending',
    submitted_at TEXT)"""


class Printed:
    """The face's output lines, with a way to wait for one without polling."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._changed = anyio.Event()

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        self._changed, changed = anyio.Event(), self._changed
        changed.set()

    async def wait_for(self, text: str) -> None:
        with anyio.fail_after(10):
            while True:
                changed = self._changed
                if any(text in line for line in self.lines):
                    return
                await changed.wait()


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
    assert team.bus_path == db and team.panels[0].listens_to == ("panel-a",)
    driver = ScriptedDriver([reply("got it")])
    typed: anyio.abc.ObjectSendStream[str]
    typed, lines = anyio.create_memory_object_stream[str](10)
    out = Printed()

    async def line_stream() -> AsyncIterator[str]:
        async with lines:
            async for line in lines:
                yield line

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_solo_host(team, line_stream(), out,
                                            drivers=lambda spec: driver))  # fmt: skip
        sent = time.monotonic()
        # The original's writer: a row addressed to this panel, straight into the table.
        conn.execute(
            "INSERT INTO returns (agent_role, recipient_role, payload_json, submitted_at) "
            "VALUES ('panel-a', 'panel-b', '{\"type\": \"task\", \"text\": \"hello b\"}', 'now')"
        )
        conn.commit()
        await out.wait_for("got it")
        delay = time.monotonic() - sent
        await typed.send("/quit")
        await typed.aclose()
    status = conn.execute("SELECT status FROM returns").fetchone()[0]
    conn.close()
    assert status == "done"  # acked into the foreign table's own status column
    assert delay < 5  # far under the original's 30 s polling
    assert 'from="panel-a"' in str(driver.requests[0].blocks[-1]["text"])
    assert any("compatibility mode" in line for line in out.lines)


async def test_the_solo_face_sends_operator_input_and_quits(
    anyio_backend: str, tmp_path: Path, mnemara_home: Path
) -> None:
    make_instance(mnemara_home, "me")
    team = solo_team("me", cwd=tmp_path)
    driver = ScriptedDriver([reply("hi there")])
    typed, lines = anyio.create_memory_object_stream[str](10)
    out = Printed()

    async def line_stream() -> AsyncIterator[str]:
        async with lines:
            async for line in lines:
                yield line

    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: run_solo_host(team, line_stream(), out,
                                            drivers=lambda spec: driver))  # fmt: skip
        await typed.send("/inbox off")
        await typed.send("hello")
        await out.wait_for("hi there")
        await typed.send("/quit")
        await typed.aclose()
    assert "inbox off" in out.lines
    assert driver.requests[0].blocks[-1]["text"] == "hello"
