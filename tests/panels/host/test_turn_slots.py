"""The host's turn slots (`[team] max_concurrent_turns`): a panel with work waits for one,
and readies its warm spare while it waits (panels/host/turns/life.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input
from runtime.turn.driver import TurnRequest
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import BlockingDriver, make_team, panels, reply

pytestmark = pytest.mark.anyio


class WarmScripted(ScriptedDriver):
    """A scripted driver that keeps (pretend) warm spares: it records each `prepare`."""

    def __init__(self, turns: list[Any]) -> None:
        super().__init__(turns)
        self.prepared: list[TurnRequest] = []
        self.on_prepare: Callable[[], None] = lambda: None

    async def prepare(
        self, request: TurnRequest, *, due: float | None, wake: Callable[[], None] | None = None
    ) -> bool:
        self.prepared.append(request)
        self.on_prepare()
        return True

    async def discard_spare(self) -> None:
        return None


async def test_a_panel_waiting_for_a_turn_slot_readies_its_spare_meanwhile(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"), extra="max_concurrent_turns = 1")
    holder = BlockingDriver()
    waiter = WarmScripted([reply("b done")])
    prepared = anyio.Event()
    async with start_host(team, {"a": holder, "b": waiter}) as (_, events, _):
        viewer = connect(team.hostdb_path)
        submit_command(viewer, Input(panel="a", text="hold the only slot"))
        with anyio.fail_after(30):
            await holder.started.wait()
        before = len(waiter.prepared)  # b has readied one while idle, maybe more
        waiter.on_prepare = prepared.set
        submit_command(viewer, Input(panel="b", text="wait for it"))
        with anyio.fail_after(30):
            await prepared.wait()  # b woke, found the slot taken, and readied its spare
        assert len(waiter.prepared) > before
        assert events.of("turn_started", "b") == []  # still waiting: the slot is a's
        holder.release.set()
        await events.wait("turn_ended", "b")
        assert [e.outcome for e in events.of("turn_ended", "b")] == ["done"]
        viewer.close()
