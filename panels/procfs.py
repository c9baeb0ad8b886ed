"""What /proc says of a process: alive or not (a zombie is not), and its stat fields.

Shared by the host's pid file (panels/host/process.py), its sweep of an earlier life's
leftovers (panels/host/turns/orphans.py), and the viewers that ask whether a team's host runs
(`mnemara teams`, the dashboard); on a system without /proc, only existence is checked.
"""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """The process exists and is not a zombie (one that exited and was not yet reaped).

    A zombie keeps its pid, so `kill(pid, 0)` succeeds on it; a host that was killed while
    its parent did not reap it would otherwise look alive forever. On Linux the state is read
    from /proc; where there is no /proc, only existence is checked.
    """
    if pid <= 0:
        return False
    fields = proc_stat(pid)
    if fields is None:
        # No such entry in a working /proc means no such process; no /proc: ask the kernel.
        return False if Path("/proc/self/stat").exists() else _pid_exists(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def proc_stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, ppid, ...); None when
    there is no such entry (no such process, or no /proc)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "PID (COMM) STATE PPID ...": COMM may hold spaces and ')', so split after the last ')'.
    return stat[stat.rfind(")") + 1 :].split()


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
