"""`HostThread` and `serve_host`: a real host (scripted drivers) under trio in a thread, driven
from this test's own thread the way the dashboard's main thread drives it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import anyio.abc
import pytest

from panels.host import Host
from panels.host.process import read_pid
from panels.host.thread import HostThread, StopFn, serve_host
from panels.hostdb import connect, read_panels, submit_command
from panels.hostdb.verbs import Shutdown
from panels.team import TeamSpec
from runtime.instance.lease import InstanceLeasedError
from runtime.turn.scripted import ScriptedDriver
from tests.panels.host.conftest import FAST, make_team, panels

WAIT = 30.0  # seconds a host may take to stop once asked


def solo_host_thread(team: TeamSpec) -> HostThread[Host]:
    async def work(*, task_status: anyio.abc.TaskStatus[StopFn]) -> Host:
        host = Host(team, drivers=lambda spec: ScriptedDriver([]), home=team.state_dir.parents[1],
                    policy=FAST, log_interval=0.01)  # fmt: skip
        return await serve_host(host, pid_file=True, task_status=task_status)

    return HostThread(work)


def test_stop_from_another_thread_stops_the_host_and_releases_the_pid_file(
    tmp_path: Path,
) -> None:
    team = make_team(tmp_path, panels("solo"))
    thread = solo_host_thread(team)
    thread.start()
    # Ready: the host serves, its file says so, and it is findable by its pid file.
    assert read_pid(team.pid_path) == os.getpid()
    conn = connect(team.hostdb_path)
    try:
        assert [row.name for row in read_panels(conn)] == ["solo"]
    finally:
        conn.close()
    assert not thread.done
    host = thread.stop()
    assert thread.done and host.stopping
    assert not team.pid_path.exists()


def test_a_host_stopped_from_outside_ends_the_work_and_calls_back(tmp_path: Path) -> None:
    """`mnemara down` writes Shutdown into the control table: the work ends on its own, and
    the face (here: an event) hears of it in time to close."""
    team = make_team(tmp_path, panels("solo"))
    thread = solo_host_thread(team)
    thread.start()
    ended = threading.Event()
    thread.when_done(ended.set)
    conn = connect(team.hostdb_path)
    try:
        submit_command(conn, Shutdown())
    finally:
        conn.close()
    assert ended.wait(WAIT), "the work did not end after a Shutdown verb"
    assert thread.done
    late = threading.Event()
    thread.when_done(late.set)  # registered after the end: called at once
    assert late.is_set()
    assert thread.stop().stopping  # nothing left to stop: the result all the same
    assert not team.pid_path.exists()


def test_an_error_before_ready_is_raised_by_start(tmp_path: Path) -> None:
    class Broken(Exception):
        pass

    async def work(*, task_status: anyio.abc.TaskStatus[StopFn]) -> None:
        raise Broken("no start")

    thread: HostThread[None] = HostThread(work)
    with pytest.raises(Broken):
        thread.start()
    assert thread.done


def test_a_second_host_of_the_same_team_is_refused_at_start(tmp_path: Path) -> None:
    team = make_team(tmp_path, panels("solo"))
    first = solo_host_thread(team)
    first.start()
    try:
        # The bare error, not a group: the CLI prints its message and exit code.
        with pytest.raises(InstanceLeasedError, match="is in use by the host of team 't'"):
            solo_host_thread(team).start()
    finally:
        first.stop()
