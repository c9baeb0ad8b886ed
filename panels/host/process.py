"""The host as a process: its pid file, signal handling, and the headless entry point.

`run_headless` is what `mnemara up --headless` runs (and what a detached `up` starts in the
background): the pid file is taken (refused while another host of the team lives), events
are printed as plain lines as they are written, SIGINT / SIGTERM stop the host cleanly, and
a second signal stops it at once.

The pid file holds "PID LIFE\\n": the host's pid and its life id (`new_life_id`), which
`mnemara up` chooses, so it can tell this life's "host ready" from a previous life's. A file
with the pid alone (written before lives existed) still reads, with an empty life.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio

from panels.host.control.account import printer
from panels.host.errors import HostRunningError
from panels.procfs import pid_alive
from panels.team import TeamSpec

T = TypeVar("T")

if TYPE_CHECKING:
    from panels.host.services import DriverFactory


@dataclass(frozen=True)
class PidRecord:
    """What a pid file says: the host's pid and its life id ("" in an old file)."""

    pid: int
    life: str


def new_life_id() -> str:
    """A fresh id for one life of a host (one start, up to its stop or crash)."""
    return uuid.uuid4().hex


def read_pid_record(path: Path) -> PidRecord | None:
    """The pid file's record, or None when it is missing or unreadable."""
    try:
        words = path.read_text().split()
    except OSError:
        return None
    if not 1 <= len(words) <= 2:
        return None
    try:
        pid = int(words[0])
    except ValueError:
        return None
    return PidRecord(pid=pid, life=words[1] if len(words) == 2 else "")


def read_pid(path: Path) -> int | None:
    record = read_pid_record(path)
    return None if record is None else record.pid


def take_pid_file(team: TeamSpec, life: str = "") -> None:
    """Write this process's pid (and life) to the team's pid file; refused while a host lives."""
    team.state_dir.mkdir(parents=True, exist_ok=True)
    pid = read_pid(team.pid_path)
    if pid is not None and pid != os.getpid() and pid_alive(pid):
        raise HostRunningError(
            f"the host of team {team.name!r} is already running (pid {pid}); "
            f"stop it with `mnemara down --team {team.name}` first",
            team=team.name,
        )
    # Written whole and renamed into place: a reader never sees half a record.
    tmp = team.pid_path.with_name(f"{team.pid_path.name}.{os.getpid()}.tmp")
    tmp.write_text(f"{os.getpid()} {life}\n" if life else f"{os.getpid()}\n")
    os.replace(tmp, team.pid_path)


def release_pid_file(team: TeamSpec) -> None:
    if read_pid(team.pid_path) == os.getpid():
        team.pid_path.unlink(missing_ok=True)


async def until_interrupted(work: Callable[[], Awaitable[T]]) -> T:
    """Run `work`; Ctrl-C (SIGINT) cancels it, lets its cleanups finish, then raises
    KeyboardInterrupt from here.

    Left to itself, trio raises KeyboardInterrupt wherever the main task happens to be,
    which can be half way out of a nursery; caught as a signal, the stop is an ordinary
    cancellation and the interrupt is raised only once everything is closed.
    """
    interrupted = False
    result: list[T] = []
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        async with anyio.create_task_group() as tg:

            async def on_sigint() -> None:
                nonlocal interrupted
                async for _ in signals:
                    interrupted = True
                    tg.cancel_scope.cancel()
                    return

            async def run() -> None:
                result.append(await work())
                tg.cancel_scope.cancel()

            tg.start_soon(on_sigint)
            tg.start_soon(run)
    if interrupted or not result:
        raise KeyboardInterrupt
    return result[0]


async def run_headless(
    team: TeamSpec,
    *,
    out: Callable[[str], None] = print,
    life: str = "",
    drivers: DriverFactory | None = None,
) -> None:
    """Run the team's host in the foreground until a signal or `mnemara down`.

    `life` is the id `mnemara up` chose for this start (a fresh one when empty); `drivers`
    replaces the Claude Code CLI (tests, soak runs).
    """
    # Imported here, not at the top: the host imports orphans.py, which uses `pid_alive`.
    from panels.host.host import Host

    life = life or new_life_id()
    take_pid_file(team, life)
    try:
        # The listener and the signal handlers are in place before the host starts, so
        # "host ready" is always printed and a signal right after it is never missed.
        host = Host(team, listeners=[printer(out)], life=life, drivers=drivers)
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
