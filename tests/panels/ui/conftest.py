"""Dashboard test kit: a real host in a thread of its own (on trio) or a host.sqlite written by
hand, and a bounded wait for what the app shows. The dashboard tests run on asyncio only."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
import trio
from textual.pilot import Pilot

from panels.host import Host, RestartPolicy
from panels.hostdb import (
    HostEvent,
    PanelRow,
    append_events,
    connect,
    set_meta,
    submit_command,
    upsert_panels,
)
from panels.hostdb.verbs import Input
from panels.team import TeamSpec
from panels.ui.app import DashboardApp
from panels.ui.pane import PanelPane
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import FAST, make_team, panels

ASK_BASH = '[[panels.policy]]\ntool = "Bash"\nmode = "ask"\n'
START = 60.0  # seconds a host may take to start or stop (a deadline for what never comes)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # Textual runs on asyncio only


class LiveHost:
    """A `Host` with scripted drivers, run by `trio.run` in a thread, so the test's own event
    loop (asyncio, Textual's) only sees the host through its host.sqlite, as a viewer would."""

    def __init__(
        self, team: TeamSpec, scripts: dict[str, Sequence[Any]], *, policy: RestartPolicy = FAST
    ) -> None:
        self.team = team
        self.policy = policy
        self.drivers = {name: ScriptedDriver(script) for name, script in scripts.items()}
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, name="live-host", daemon=True)
        self._token: trio.lowlevel.TrioToken | None = None
        self._host: Host | None = None
        self.error: BaseException | None = None

    @property
    def hostdb_path(self) -> Path:
        return self.team.hostdb_path

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(START) or self.error is not None:
            raise RuntimeError(f"the host did not start: {self.error!r}")

    def stop(self) -> None:
        if self._token is not None and self._host is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._host.request_stop, trio_token=self._token)
        self._thread.join(START)
        assert not self._thread.is_alive(), "the host did not stop"
        if self.error is not None:
            raise self.error

    def _main(self) -> None:
        try:
            trio.run(self._serve)
        except BaseException as exc:  # reported by start() or stop() in the test's thread
            self.error = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        host = Host(
            self.team,
            drivers=lambda spec: self.drivers[spec.name],
            home=self.team.state_dir.parents[1],
            policy=self.policy,
            log_interval=0.01,
        )
        self._host = host
        async with anyio.create_task_group() as tg:
            await tg.start(host.serve)
            self._ready.set()
            await host.stopped()


@pytest.fixture
def live_host(tmp_path: Path) -> Iterator[Callable[..., LiveHost]]:
    """`live_host(a=[turn, ...], b=[...])`: a started host whose panels play those scripts;
    `policy=` is team.toml text added after each panel (e.g. `ASK_BASH`: its Bash calls ask)."""
    started: list[LiveHost] = []

    def start(*, policy: str = "", **scripts: Sequence[Any]) -> LiveHost:
        host = LiveHost(make_team(tmp_path, "".join(panels(n) + policy for n in scripts)), scripts)
        started.append(host)
        host.start()
        return host

    yield start
    for host in started:
        host.stop()


def write_host_db(
    path: Path,
    rows: Sequence[PanelRow],
    events: Sequence[HostEvent] = (),
    *,
    team: str = "t",
) -> None:
    """A host.sqlite as a host would leave it (no host runs: the pid in meta is not alive)."""
    conn = connect(path)
    try:
        set_meta(conn, {"team": team, "pid": "0"})
        upsert_panels(conn, rows)
        append_events(conn, [(time.time(), e) for e in events])
    finally:
        conn.close()


def say(path: Path, panel: str, text: str) -> None:
    """Operator input for `panel`, queued through the control table as `mnemara send` does."""
    conn = connect(path, create=False)
    try:
        submit_command(conn, Input(panel=panel, text=text))
    finally:
        conn.close()


def commands(path: Path) -> list[tuple[Any, ...]]:
    """(verb, args, state) of every command in the control table, oldest first."""
    conn = connect(path, create=False)
    try:
        return conn.execute("SELECT verb, args, state FROM commands ORDER BY id").fetchall()
    finally:
        conn.close()


def transcript(app: DashboardApp, panel: str) -> str:
    """What a pane's transcript holds, line by line."""
    pane = app.panes[panel]
    return pane.transcript.text


async def until(pilot: Pilot[Any], check: Callable[[], bool], *, within: float = 30.0) -> None:
    """Let the app run until `check()` holds; fail after `within` seconds. The deadline only
    catches what never happens: it is far above what a machine with both cores busy takes."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within}s: {check}")
        await pilot.pause(0.02)


def pane(app: DashboardApp, name: str) -> PanelPane:
    return app.panes[name]
