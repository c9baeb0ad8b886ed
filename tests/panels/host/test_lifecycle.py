"""A host's lives: the pid file, liveness (zombies are dead), `up` waiting for its own life's
ready, and the processes a killed life left behind being swept by the next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import claude_agent_sdk
import pytest

from panels.cli.host import _ready
from panels.cli.teams import running_pid
from panels.host.errors import HostRunningError
from panels.host.process import (
    PidRecord,
    new_life_id,
    read_pid,
    read_pid_record,
    take_pid_file,
)
from panels.host.turns.drivers import claude_drivers
from panels.host.turns.orphans import find_orphans, marker_env, read_marker, sweep_orphans
from panels.hostdb import append_events, connect, read_events
from panels.hostdb.catalogue import HostReady, HostStarted
from panels.procfs import pid_alive
from tests.panels.host.conftest import make_team, panels

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
LINUX = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")


@pytest.fixture
def zombie() -> Iterator[int]:
    """The pid of a child that has exited and is not reaped yet."""
    child = subprocess.Popen([sys.executable, "-c", ""])
    # WNOWAIT: wait until it has exited but leave it unreaped, a zombie.
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    yield child.pid
    child.wait()


@pytest.fixture
def spawn() -> Iterator[Any]:
    """`spawn(env)`: a `sleep 60` in its own session with `env` added; all killed at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def run(env: dict[str, str]) -> subprocess.Popen[bytes]:
        child = subprocess.Popen(["sleep", "60"], env={**os.environ, **env},
                                 start_new_session=True)  # fmt: skip
        started.append(child)
        return child

    yield run
    for child in started:
        if child.poll() is None:
            child.kill()
        child.wait()


# -- liveness and the pid file -----------------------------------------------------------------


@LINUX
def test_a_zombie_is_not_alive_and_a_live_process_is(zombie: int) -> None:
    assert not pid_alive(zombie)
    assert pid_alive(os.getpid())
    with subprocess.Popen(["sleep", "60"]) as live:
        try:
            assert pid_alive(live.pid)
        finally:
            live.kill()


@LINUX
def test_a_pid_file_naming_a_zombie_does_not_stop_a_start(tmp_path: Path, zombie: int) -> None:
    team = make_team(tmp_path, panels("eng"))
    team.state_dir.mkdir(parents=True)
    team.pid_path.write_text(f"{zombie} deadlife\n")
    take_pid_file(team, "next")  # the killed host's pid file is stale, not "already running"
    assert read_pid_record(team.pid_path) == PidRecord(os.getpid(), "next")


def test_the_pid_file_holds_pid_and_life_and_reads_the_old_format(tmp_path: Path) -> None:
    team = make_team(tmp_path, panels("eng"))
    life = new_life_id()
    assert len(life) == 32 and life != new_life_id()
    take_pid_file(team, life)
    assert team.pid_path.read_text() == f"{os.getpid()} {life}\n"
    assert read_pid_record(team.pid_path) == PidRecord(os.getpid(), life)
    assert read_pid(team.pid_path) == os.getpid()
    team.pid_path.write_text("4242\n")  # as a host before lives wrote it
    assert read_pid_record(team.pid_path) == PidRecord(4242, "")
    assert read_pid(team.pid_path) == 4242
    for junk in ("", "x y", "1 2 3", "12 life extra\n"):
        team.pid_path.write_text(junk)
        assert read_pid_record(team.pid_path) is None and read_pid(team.pid_path) is None
    team.pid_path.unlink()
    assert read_pid_record(team.pid_path) is None


def test_a_live_host_in_the_pid_file_still_refuses_a_start(tmp_path: Path) -> None:
    team = make_team(tmp_path, panels("eng"))
    team.state_dir.mkdir(parents=True)
    with subprocess.Popen(["sleep", "60"]) as other:
        try:
            team.pid_path.write_text(f"{other.pid} somelife\n")
            with pytest.raises(HostRunningError, match="already running"):
                take_pid_file(team, "mine")
        finally:
            other.kill()


@LINUX
def test_running_pid_names_a_live_host_and_not_a_zombie(tmp_path: Path, zombie: int) -> None:
    (tmp_path / "host.pid").write_text(f"{os.getpid()} {new_life_id()}\n")
    assert running_pid(tmp_path) == os.getpid()
    (tmp_path / "host.pid").write_text(f"{zombie} {new_life_id()}\n")
    assert running_pid(tmp_path) is None


# -- `up` waits for its own life ----------------------------------------------------------------


def test_ready_needs_a_host_ready_of_this_life(tmp_path: Path) -> None:
    path = tmp_path / "host.sqlite"
    conn = connect(path)
    append_events(conn, [(1.0, HostStarted(team="t", bus="b", pid=1, life="before")),
                         (1.1, HostReady(panels=("eng",), life="before"))])  # fmt: skip
    assert not _ready(path, "now")  # a killed life's "ready" is not this one's
    assert _ready(path, "before")
    append_events(conn, [(2.0, HostStarted(team="t", bus="b", pid=2, life="now"))])
    assert not _ready(path, "now")  # started is not ready
    append_events(conn, [(2.1, HostReady(panels=("eng",), life="now"))])
    conn.close()
    assert _ready(path, "now")


# -- leftovers of another life ----------------------------------------------------------------


@LINUX
def test_find_and_sweep_kill_only_another_lifes_processes_of_this_state_dir(
    tmp_path: Path, spawn: Any
) -> None:
    state, elsewhere = tmp_path / "state", tmp_path / "other-state"
    leftover = spawn(marker_env(state, "before"))
    current = spawn(marker_env(state, "now"))
    other_team = spawn(marker_env(elsewhere, "before"))
    found = find_orphans(state, current_life="now")
    assert [(o.pid, o.life, o.command) for o in found] == [(leftover.pid, "before", "sleep 60")]
    swept = sweep_orphans(state, current_life="now")
    assert swept == found
    assert leftover.wait(timeout=30) == -signal.SIGKILL
    assert current.poll() is None and other_team.poll() is None
    assert find_orphans(state, current_life="now") == []
    assert sweep_orphans(state, current_life="now") == []


def test_claude_drivers_put_the_marker_in_every_cli_environment(tmp_path: Path) -> None:
    team = make_team(tmp_path, panels("eng"))
    marker = marker_env(team.state_dir, "life1")
    (spec,) = team.panels
    live = claude_drivers(marker=marker)(spec)
    rehearsal = claude_drivers(rehearsal_url="http://127.0.0.1:9", state_dir=tmp_path,
                               marker=marker)(spec)  # fmt: skip
    # ClaudeDriver keeps the environment it adds to each CLI's; there is no public view of it.
    for driver in (live, rehearsal):
        env = driver._env  # type: ignore[attr-defined]
        assert env["MNEMARA_HOST_STATE"] == str(team.state_dir.resolve())
        assert env["MNEMARA_HOST_LIFE"] == "life1"
    assert rehearsal._env["ANTHROPIC_BASE_URL"].startswith("http://127.0.0.1:9")  # type: ignore[attr-defined]


@LINUX
@pytest.mark.anyio
async def test_a_host_sweeps_what_an_earlier_life_left_and_logs_it(
    anyio_backend: str, tmp_path: Path, start_host: Any, spawn: Any
) -> None:
    team = make_team(tmp_path, panels("eng"))
    leftover = spawn(marker_env(team.state_dir, "killed-life"))
    mine = spawn(marker_env(team.state_dir, "this-life"))
    async with start_host(team, {"eng": []}, life="this-life") as (_, events, _):
        (swept,) = await events.wait("orphans_swept")
        assert swept.pids == (leftover.pid,) and swept.commands == ("sleep 60",)
        assert leftover.wait(timeout=30) == -signal.SIGKILL
        assert mine.poll() is None


# -- end to end: `mnemara up` after the host was killed with -9 -----------------------------------

CRASH_TEAM = '[team]\nname = "crash"\nrehearsal = "script.toml"\nworkdir = "work"\n' \
    '[[panels]]\nname = "worker"\n'  # fmt: skip
# The first life's turn runs a long Bash command; the host is killed under it.
LONG_TURN = """
[panels.worker]
fallback_text = "Done."
[[panels.worker.replies]]
when = { user_text_contains = "job" }
content = [{ tool_use = "Bash", input = { command = "sleep 90" } }]
"""
QUICK_TURN = '[panels.worker]\nfallback_text = "Done."\n'


def logged(state: Path, kind: str) -> list[Any]:
    conn = connect(state / "host.sqlite")
    try:
        return [e.event for e in read_events(conn, kinds=[kind])]
    finally:
        conn.close()


def sleeping(state: Path) -> list[Any]:
    return [o for o in find_orphans(state, current_life="") if "sleep 90" in o.command]


@LINUX
@pytest.mark.e2e
@pytest.mark.slow
@pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}")
@pytest.mark.parametrize("sandbox", ["off", "required"])
def test_up_after_a_kill_9_waits_for_the_new_life_and_sweeps_the_old_lifes_cli(
    tmp_path: Path, sandbox: str
) -> None:
    """Unconfined, a kill -9 of the host leaves its CLI and the command running, and the next
    life sweeps them. In the sandbox they die with the host (the relay's tie to its gateway ends):
    nothing is left to sweep."""
    root = Path(__file__).resolve().parents[3]
    (tmp_path / "work").mkdir()
    (tmp_path / "team.toml").write_text(
        CRASH_TEAM.replace("[[panels]]", f'sandbox = "{sandbox}"\n[[panels]]')
    )
    (tmp_path / "script.toml").write_text(LONG_TURN)
    # `up` run from a panel's shell (of another team): its host must not carry that marker.
    outer = marker_env(tmp_path / "outer-team", "outer-life")
    env = {**os.environ, **outer, "MNEMARA_HOME": str(tmp_path / "home"), "PYTHONPATH": str(root)}
    state = tmp_path / "home" / "_teams" / "crash"

    def mnemara(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "panels.cli.main", *args], env=env,
                              cwd=root, capture_output=True, text=True, timeout=90)  # fmt: skip

    def poll(what: str, check: Any, within: float) -> Any:
        deadline = time.monotonic() + within
        while not (found := check()):
            assert time.monotonic() < deadline, f"not seen in {within:g}s: {what}"
            time.sleep(0.1)
        return found

    try:
        first_up = mnemara("up", str(tmp_path / "team.toml"))
        assert first_up.returncode == 0, first_up.stderr + first_up.stdout
        first = read_pid_record(state / "host.pid")
        assert first is not None and first.life
        assert read_marker(Path(f"/proc/{first.pid}/environ").read_bytes()) is None
        assert mnemara("send", "-t", "crash", "--to", "worker", "do the job").returncode == 0
        if sandbox == "off":  # unconfined the Bash call asks; confined the sandbox contains it
            (asked,) = poll("the Bash call asking", lambda: logged(state, "approval_request"), 60)
            approved = mnemara("approve", "-t", "crash", "-p", "worker", "-r", str(asked.request))
            assert approved.returncode == 0, approved.stderr
        # The CLI and the shell running `sleep 90` carry the first life's marker.
        left = poll("the turn's sleep", lambda: sleeping(state), within=60)
        marked = find_orphans(state, current_life="")
        assert {o.life for o in marked} == {first.life} and len(marked) >= 2
        os.kill(first.pid, signal.SIGKILL)
        poll("the killed host gone", lambda: not pid_alive(first.pid), within=30)
        if sandbox == "required":
            poll("the sandbox gone", lambda: not any(pid_alive(o.pid) for o in marked), 30)
        else:
            assert all(pid_alive(o.pid) for o in left)  # a kill -9 leaves them running

        (tmp_path / "script.toml").write_text(QUICK_TURN)  # the next life answers at once
        second_up = mnemara("up", str(tmp_path / "team.toml"))
        assert second_up.returncode == 0, second_up.stderr + second_up.stdout
        # `up` returned on the new life's own "ready": its pid file is written, its sweep done.
        second = read_pid_record(state / "host.pid")
        assert second is not None and second.life not in ("", first.life)
        assert f"(pid {second.pid})" in second_up.stdout and pid_alive(second.pid)
        assert _ready(state / "host.sqlite", second.life)
        assert not any(pid_alive(o.pid) for o in marked)
        if sandbox == "off":
            (swept,) = logged(state, "orphans_swept")
            # The shell and its sleep were swept (the CLI too, unless it ended first).
            assert {o.pid for o in left} <= set(swept.pids) <= {o.pid for o in marked}
        else:
            assert not logged(state, "orphans_swept")
    finally:
        stopped = mnemara("down", "-t", "crash")
        sweep_orphans(state, current_life="")  # whatever a failed run left
    assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
