"""Processes an earlier life of a host left behind, found by a marker in their environment.

Every Claude Code CLI the host starts carries `marker_env(state_dir, life)`: the team's state
directory and the host's life id. The CLI's own children (Bash tools, the servers they start)
inherit both. A host killed with -9 takes none of them down; the next life of the team's host
finds them (`find_orphans`) by reading /proc/*/environ, and kills them (`sweep_orphans`).
Only one host of a team can run at a time (it leases every instance first), so a marked
process of another life is always a leftover.

Linux only: where there is no /proc, nothing is found and nothing is killed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from panels.procfs import pid_alive, proc_stat

STATE_VAR = "MNEMARA_HOST_STATE"
LIFE_VAR = "MNEMARA_HOST_LIFE"
COMMAND_WIDTH = 120  # characters of a command line kept for display
PROC = Path("/proc")


@dataclass(frozen=True)
class Orphan:
    """A leftover process: its pid, the life that started it, its command line (shortened)."""

    pid: int
    life: str
    command: str


def marker_env(state_dir: Path, life: str) -> dict[str, str]:
    """The variables that mark a process as started by life `life` of the host of `state_dir`."""
    return {STATE_VAR: str(state_dir.resolve()), LIFE_VAR: life}


def without_marker(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` minus the marker: for a host started from a panel's shell, which must not
    pass for that panel's leftover (and be killed when that panel's host starts again)."""
    return {k: v for k, v in environ.items() if k not in (STATE_VAR, LIFE_VAR)}


def read_marker(environ: bytes) -> tuple[str, str] | None:
    """(state dir, life) from a /proc/PID/environ blob, or None when it carries no marker."""
    found: dict[str, str] = {}
    for entry in environ.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and name in (STATE_VAR.encode(), LIFE_VAR.encode()):
            found[name.decode()] = value.decode("utf-8", "replace")
    if STATE_VAR not in found:
        return None
    return found[STATE_VAR], found.get(LIFE_VAR, "")


def shorten_command(cmdline: bytes, width: int = COMMAND_WIDTH) -> str:
    """A /proc/PID/cmdline blob as one line of at most `width` characters."""
    text = " ".join(part.decode("utf-8", "replace") for part in cmdline.split(b"\0") if part)
    text = "".join(c if c.isprintable() else "?" for c in text)
    return text if len(text) <= width else text[: width - 1] + "…"


def find_orphans(state_dir: Path, *, current_life: str) -> list[Orphan]:
    """The processes marked with `state_dir` and a life other than `current_life`.

    Processes whose environment cannot be read (another user's, or gone meanwhile) are
    skipped, as are this process and its ancestors (a host started from a leftover's shell
    must not kill the shell it prints to). Without /proc: [].
    """
    wanted = str(state_dir.resolve())
    spared = _self_and_ancestors()
    orphans: list[Orphan] = []
    for pid in _pids():
        if pid in spared:
            continue
        try:
            marker = read_marker((PROC / str(pid) / "environ").read_bytes())
            if marker is None or marker[0] != wanted or marker[1] == current_life:
                continue
            command = shorten_command((PROC / str(pid) / "cmdline").read_bytes())
        except OSError:
            continue
        orphans.append(Orphan(pid=pid, life=marker[1], command=command))
    return orphans


def sweep_orphans(state_dir: Path, *, current_life: str, wait: float = 2.0) -> list[Orphan]:
    """Kill (SIGKILL) every orphan of `state_dir`; wait up to `wait` seconds for them to go.

    Returns the orphans it sent the signal to. A killed process counts as gone once it is a
    zombie: its parent (init, or whatever adopted it) reaps it, not us. Without /proc: [].
    """
    killed: list[Orphan] = []
    for orphan in find_orphans(state_dir, current_life=current_life):
        try:
            os.kill(orphan.pid, signal.SIGKILL)
        except OSError:  # gone meanwhile, or not ours to kill
            continue
        killed.append(orphan)
    deadline = time.monotonic() + wait
    while any(pid_alive(o.pid) for o in killed) and time.monotonic() < deadline:
        time.sleep(0.02)  # bounded by `wait`; SIGKILL takes effect within milliseconds
    return killed


def _pids() -> Iterator[int]:
    try:
        names = os.listdir(PROC)
    except OSError:
        return
    for name in names:
        if name.isdigit():
            yield int(name)


def _self_and_ancestors() -> set[int]:
    pids = {os.getpid()}
    pid = os.getppid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        pid = _parent_of(pid)
    return pids


def _parent_of(pid: int) -> int:
    fields = proc_stat(pid)
    return int(fields[1]) if fields and len(fields) > 1 and fields[1].isdigit() else 0
