"""The event log's writer task: it writes what is emitted, and the status rows that change,
without waking every `interval` while the host has nothing to write."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from panels.host.control.eventlog import EventLog
from panels.hostdb import Logged, PanelRow, open_hostdb
from panels.hostdb.catalogue import StateChanged
from panels.hostdb.status import read_panels

pytestmark = pytest.mark.anyio


class Status:
    """A status source that counts how often it is asked."""

    def __init__(self) -> None:
        self.asked = 0
        self.state = "idle"

    def __call__(self) -> list[PanelRow]:
        self.asked += 1
        return [PanelRow(name="a", kind="worker", state=self.state)]


async def test_an_idle_log_sleeps_until_an_event_and_then_writes_it(tmp_path: Path) -> None:
    status, written, got = Status(), list[Logged](), anyio.Event()
    async with open_hostdb(tmp_path / "host.sqlite") as db, anyio.create_task_group() as tg:
        log = EventLog(db, interval=0.01, idle_interval=60)
        log.track_status(status)
        log.listen(lambda logged: (written.append(logged), got.set()))
        await tg.start(log.serve)
        await anyio.sleep(0.5)  # fifty intervals with nothing to write
        assert status.asked == 0
        log.emit(StateChanged(panel="a", state="busy", detail=""))
        with anyio.fail_after(10):
            await got.wait()
        assert [type(w.event) for w in written] == [StateChanged]
        assert status.asked == 1  # the rows were looked at with the batch
        tg.cancel_scope.cancel()


async def test_status_that_changes_without_an_event_is_written_while_idle(
    tmp_path: Path,
) -> None:
    status = Status()
    async with open_hostdb(tmp_path / "host.sqlite") as db, anyio.create_task_group() as tg:
        log = EventLog(db, interval=0.01, idle_interval=0.05)
        log.track_status(status)
        await tg.start(log.serve)
        status.state = "waiting"  # an inbox that filled, say: no event says so
        with anyio.fail_after(10):
            while [r.state for r in await db.run(read_panels)] != ["waiting"]:
                await log.flushed()
        tg.cancel_scope.cancel()
