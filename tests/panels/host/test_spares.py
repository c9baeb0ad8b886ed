"""Warm spares in a host (panels/host/turns/spares.py), with real CLIs on the rehearsal model.

One host of three panels and a limit of one spare: never more than one spare alive; the
spare goes to the panel expected to turn soonest (one that has turned twice, and so has a
due, before the idle ones that have none: theirs is killed first); the place a turn frees
by taking its spare goes at once to a refused panel; a paused or halted panel keeps none,
and its place goes to another; none is left once the host stops; and a spare an earlier
life left behind (its host killed with -9, simulated by a driver whose spare is never
discarded) carries the host's marker and is swept at the next start. Then real hosts,
killed with -9 and interrupted mid-build: no process and no sandbox directory is left.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import anyio
import pytest

from panels.host.turns.drivers import claude_drivers
from panels.host.turns.orphans import find_orphans, marker_env
from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Halt, Input, Pause, Resume
from panels.procfs import pid_alive
from runtime.claude import ClaudeDriver
from runtime.claude.pool import SparePool
from runtime.rehearsal import open_rehearsal_server, parse_script
from runtime.rehearsal.env import rehearsal_env
from runtime.sandbox.leftovers import SETTLE_S, WORK_PREFIX
from runtime.turn.driver import Decision, ToolCallRequest, TurnRequest
from tests.panels.host.conftest import make_team, panels
from tests.panels.host.test_lifecycle import CLI, LINUX

ROOT = Path(__file__).resolve().parents[3]

NAMES = ("p0", "p1", "p2")
SCRIPT = "".join(f'[panels.{n}]\nfallback_text = "ok"\n' for n in NAMES)

pytestmark = [
    LINUX,
    pytest.mark.e2e,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is absent ({CLI})"),
]


class Refuse:
    async def decide(self, call: ToolCallRequest) -> Decision:
        return Decision(allow=False)


@pytest.mark.parametrize("anyio_backend", ["trio"])
async def test_spares_are_bounded_go_to_the_panel_due_and_never_outlive_their_host(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels(*NAMES), extra="warm_spares = 1")
    assert team.warm_spares == 1
    state = team.state_dir
    async with open_rehearsal_server(parse_script(SCRIPT)) as server:
        # What a host killed with -9 leaves: a spare marked with its life, never discarded.
        url = server.base_url_for("p0")
        env = {**rehearsal_env(url, tmp_path / "cli-dead"), **marker_env(state, "dead")}
        leftover = ClaudeDriver(env=env, pool=SparePool(1))
        request = TurnRequest("role", (), "claude-sonnet-4-5", Refuse(), team.workdir)
        assert await leftover.prepare(request, due=None)
        assert leftover.spare is not None
        (left_pid,) = leftover.spare.pids()

        live = marker_env(state, "live")
        made = claude_drivers(rehearsal_url=server.base_url, state_dir=state, marker=live,
                              spares=team.warm_spares)  # fmt: skip
        drivers = {spec.name: cast(ClaudeDriver, made(spec)) for spec in team.panels}
        pool = drivers["p0"].pool
        assert pool is not None
        alive: list[int] = []
        changed = anyio.Event()

        def on_change() -> None:
            nonlocal changed
            alive.append(len(holders()))
            changed.set()
            changed = anyio.Event()

        def holders() -> list[str]:
            return [name for name, driver in drivers.items() if driver.spare is not None]

        async def until(check: Callable[[], bool]) -> None:
            with anyio.fail_after(30):
                while not check():
                    await changed.wait()

        pool.on_change = on_change
        async with start_host(team, drivers, life="live") as (_, events, _):
            (swept,) = await events.wait("orphans_swept")
            assert left_pid in swept.pids and not pid_alive(left_pid)
            # Idle since start, the three ask; one gets the spare, the others are refused.
            await until(lambda: len(holders()) == 1 and pool.refused >= 2)
            first = holders()[0]
            other = next(n for n in NAMES if n != first)
            viewer = connect(team.hostdb_path)
            refused = pool.refused
            submit_command(viewer, Input(panel=other, text="hello"))
            await events.wait("turn_ended", other)
            # One turn gives no due yet: the idle panel keeps its spare.
            await until(lambda: pool.refused > refused)
            assert holders() == [first]
            # A second turn gives `other` a due: it takes the place, the idle one's spare is
            # killed first.
            submit_command(viewer, Input(panel=other, text="again"))
            await events.wait("turn_ended", other, count=2)
            await until(lambda: holders() == [other])
            # Its next turn takes its spare; the freed place goes to a refused panel at once
            # (long before the idle recheck), and back to `other` when its turn has ended.
            refilled: list[list[str]] = []
            pool.on_change = lambda: (on_change(), refilled.append(holders()))
            submit_command(viewer, Input(panel=other, text="third"))
            await events.wait("turn_ended", other, count=3)
            await until(lambda: holders() == [other])
            assert any(h and other not in h for h in refilled)
            pool.on_change = on_change
            assert max(alive) == 1
            # A paused panel keeps no spare, and its place goes to another; one halted neither.
            submit_command(viewer, Pause(panel=other))
            await until(lambda: len(holders()) == 1 and other not in holders())
            submit_command(viewer, Resume(panel=other))
            await until(lambda: holders() == [other])
            submit_command(viewer, Halt(panel=other, reason="test"))
            await until(lambda: len(holders()) == 1 and other not in holders())
            assert max(alive) == 1
            viewer.close()
        assert holders() == [] and len(pool) == 0
        assert find_orphans(state, current_life="") == []  # nothing marked is left running
        await leftover.discard_spare()


def spare_clis(state: Path) -> list[int]:
    """The CLI processes (not their sandboxes' other processes) the team's host marked."""
    return [o.pid for o in find_orphans(state, current_life="") if "_bundled/claude" in o.command]


def sandbox_dirs(tmp: Path) -> set[Path]:
    return set(tmp.glob(f"{WORK_PREFIX}*"))


def test_a_host_killed_with_9_or_stopped_mid_build_leaves_no_spare_or_sandbox_behind(
    tmp_path: Path,
) -> None:
    """Real hosts (`mnemara up --headless`), real sandboxed spares. Killed with -9 while two
    spares wait: every process of theirs ends with the host (the relay's tie), and the
    directories they leave are removed by the next host's start. That host, interrupted as
    it builds its spares, leaves nothing either."""
    (tmp_path / "work").mkdir()
    for name in NAMES[:2]:
        (tmp_path / f"{name}.md").write_text(f"# Role\nYou are {name}.\n")
    (tmp_path / "script.toml").write_text(SCRIPT)
    team_file = tmp_path / "team.toml"
    team_file.write_text(
        '[team]\nname = "kill"\nworkdir = "work"\nrehearsal = "script.toml"\n'
        'sandbox = "required"\nwarm_spares = 2\n'
        + "".join(f'\n[[panels]]\nname = "{n}"\nrole = "{n}.md"\n' for n in NAMES[:2])
    )
    home = tmp_path / "home"
    state = home / "_teams" / "kill"
    # A temporary folder of the test's own, short: its sockets' paths must fit 108 bytes.
    tmp = Path(tempfile.mkdtemp(prefix="kill-", dir="/tmp"))
    env = {**os.environ, "MNEMARA_HOME": str(home), "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "panels.cli.main", "up", "--headless", str(team_file)]

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)  # fmt: skip

    def wait_for(check: Callable[[], bool], what: str, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while not check():
            assert time.monotonic() < deadline, f"timed out waiting for {what}"
            time.sleep(0.05)

    try:
        first = start()
        try:
            wait_for(lambda: len(spare_clis(state)) == 2, "two spares")
            time.sleep(1.0)  # their CLIs initialised, waiting for a prompt
            left = sandbox_dirs(tmp)
            assert len(left) == 2
        finally:
            first.kill()
            first.communicate(timeout=30)
        wait_for(lambda: find_orphans(state, current_life="") == [], "the spares to end", 15)
        assert sandbox_dirs(tmp) == left  # files outlive a -9; the next start removes them
        for folder in left:  # as if the host had died a while ago
            os.utime(folder, (time.time() - 2 * SETTLE_S,) * 2)
        second = start()
        try:
            assert second.stdout is not None
            for line in second.stdout:
                if "host ready" in line:
                    break
            assert not (sandbox_dirs(tmp) & left)
            os.killpg(second.pid, signal.SIGINT)  # Ctrl-C while its spares are being built
            output = second.communicate(timeout=60)[0]
        finally:
            if second.poll() is None:
                second.kill()
        # A Ctrl-C reaches the host alone: it stops cleanly, and no CLI died under it.
        assert second.returncode == 0 and "host stopped" in output, output
        assert not any(word in output for word in ("Traceback", "Fatal", "failed")), output
        # What the host stopped ends as it went (the relays stop their CLIs as their ties
        # close): nothing is left, however the stop met the builds.
        wait_for(lambda: find_orphans(state, current_life="") == [], "the spares to end", 15)
        assert sandbox_dirs(tmp) == set()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
