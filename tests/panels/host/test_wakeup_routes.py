"""The host's bus watch wakes only the panels a change concerns (issue 12)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from panels.host.turns.wakeup import BusWatch, Wakeup
from peerbus import open_bus
from tests.peerbus.conftest import in_another_process

pytestmark = pytest.mark.anyio

NO_BACKSTOP = 60.0  # only a signal can wake within the waits below


def send_from_another_process(bus_path: Path, recipient: str | None) -> None:
    in_another_process(bus_path, f"submit(bus, 'a', {recipient!r}, {{'n': 1}})")


async def test_a_message_wakes_the_panel_it_is_for_and_no_other(
    anyio_backend: str, tmp_path: Path
) -> None:
    path = tmp_path / "team.sqlite"
    async with open_bus(path, backstop_interval=NO_BACKSTOP) as bus:
        watch = BusWatch(bus, recheck=3600.0)  # no periodic wake-up
        flags = {name: Wakeup() for name in ("panel-a", "panel-b")}
        for name, flag in flags.items():
            watch.add(flag.set, [(bus, name)])
        anything = Wakeup()
        watch.add(anything.set)  # no routes: any change of the bus
        async with anyio.create_task_group() as tg:
            await tg.start(watch.serve)
            a, b, any_change = flags["panel-a"].event, flags["panel-b"].event, anything.event
            await anyio.to_thread.run_sync(send_from_another_process, path, "panel-b")
            with anyio.fail_after(30):
                await b.wait()
                await any_change.wait()
            with anyio.move_on_after(1.5):
                await a.wait()
            assert not a.is_set()  # panel-a slept through panel-b's message
            # A broadcast concerns every panel.
            a, b = flags["panel-a"].event, flags["panel-b"].event
            await anyio.to_thread.run_sync(send_from_another_process, path, None)
            with anyio.fail_after(30):
                await a.wait()
                await b.wait()
            tg.cancel_scope.cancel()


async def test_a_route_added_while_serving_is_watched(anyio_backend: str, tmp_path: Path) -> None:
    path = tmp_path / "team.sqlite"
    async with open_bus(path, backstop_interval=NO_BACKSTOP) as bus:
        watch = BusWatch(bus, recheck=3600.0)
        async with anyio.create_task_group() as tg:
            await tg.start(watch.serve)
            flag = Wakeup()
            watched = flag.event
            watch.add(flag.set, [(bus, "late")])
            with anyio.fail_after(30):
                await watched.wait()  # woken once when the watch is in place
            woken = flag.event
            await anyio.to_thread.run_sync(send_from_another_process, path, "late")
            with anyio.fail_after(30):
                await woken.wait()
            tg.cancel_scope.cancel()
