"""The host as a process: its pid file, signal handling, and the headless entry point.

`run_headless` is what `mnemara up --headless` runs (and what a detached `up` starts in the
background): the pid file is taken (refused while another host of the team lives), events
are printed as plain lines as they are written, SIGINT / SIGTERM stop the host cleanly, and
a second signal stops it at once.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from pathlib import Path

import anyio

from panels.host.account import printer
from panels.host.errors import HostRunningError
from panels.host.host import Host
from panels.team import TeamSpec


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def take_pid_file(team: TeamSpec) -> None:
    team.state_dir.mkdir(parents=True, exist_ok=True)
    pid = read_pid(team.pid_path)
    if pid is not None and pid != os.getpid() and pid_alive(pid):
        raise HostRunningError(
            f"the host of team {team.name!r} is already running (pid {pid}); "
            f"stop it with `mnemara down --team {team.name}` first",
            team=team.name,
        )
    team.pid_path.write_text(f"{os.getpid()}\n")


def release_pid_file(team: TeamSpec) -> None:
    if read_pid(team.pid_path) == os.getpid():
        team.pid_path.unlink(missing_ok=True)


async def run_headless(team: TeamSpec, *, out: Callable[[str], None] = print) -> None:
    """Run the team's host in the foreground until a signal or `mnemara down`."""
    take_pid_file(team)
    try:
        # The listener and the signal handlers are in place before the host starts, so
        # "host ready" is always printed and a signal right after it is never missed.
        host = Host(team, listeners=[printer(out)])
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with anyio.create_task_group() as tg:

                async def on_signals() -> None:
                    count = 0
                    async for _ in signals:
                        count += 1
                        if count == 1:
                            out("stopping (again to stop at once)")
                            host.request_stop()
                        else:
                            tg.cancel_scope.cancel()

                tg.start_soon(on_signals)
                await tg.start(host.serve)
                await host.stopped()
                tg.cancel_scope.cancel()
    finally:
        release_pid_file(team)
