"""What `status` and `events` show an external agent: the team as `mnemara ps` and
`mnemara logs` show it, read from host.sqlite (never from the host itself).

`status` is what `ps` prints (panels/host/control/account.py's `ps_header` and `table`, and
the sandbox warning); when the host does not run, a line says that messages still wait on
the bus. `events` renders the last events with the events catalogue's own lines
(account.py's `last_lines`, as `logs` prints them), never a repr. Both are sync reads over
a connection of their own; the tools run them in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from panels.host.control.account import last_lines, ps_header, table
from panels.host.process import read_pid
from panels.hostdb import connect, get_meta, read_panels
from panels.procfs import pid_alive
from panels.text import clean
from panels.unconfined import META_KEY, warning
from peerbus import redact

MAX_EVENTS = 200


@dataclass(frozen=True)
class TeamPlace:
    """Where a team's host keeps its state, and its bus."""

    name: str
    state_dir: Path
    bus: str

    @property
    def hostdb(self) -> Path:
        return self.state_dir / "host.sqlite"

    def host_pid(self) -> int | None:
        """The running host's pid, None when no host runs."""
        pid = read_pid(self.state_dir / "host.pid")
        return pid if pid is not None and pid_alive(pid) else None


def status_lines(place: TeamPlace) -> list[str]:
    """The team's status, as `ps` shows it, with whether the host runs."""
    pid = place.host_pid()
    if not place.hostdb.is_file():
        return [
            f"team {place.name}: its host has never run (the operator starts it with "
            f"`mnemara up TEAM.toml`); bus {redact(place.bus)}",
            "messages you send wait on the bus until the host runs",
        ]
    conn = connect(place.hostdb, create=False)
    try:
        meta = get_meta(conn)
        rows = read_panels(conn)
    finally:
        conn.close()
    head = [ps_header(place.name, pid, meta, str(place.state_dir / "host.log"))]
    if pid is None:
        head.append(
            "the host is DOWN: messages you send wait on the bus until it runs again; the "
            "table is as the host left it"
        )
    said = warning(meta.get(META_KEY, ""), rows)
    tail = [f"warning: {clean(said, 400)}"] if said is not None else []
    return head + table(rows, place.name) + tail


def event_lines(place: TeamPlace, count: int) -> list[str]:
    """The last `count` events (at most MAX_EVENTS) that `mnemara logs` would print."""
    if not place.hostdb.is_file():
        return []
    conn = connect(place.hostdb, create=False)
    try:
        return last_lines(conn, max(0, min(count, MAX_EVENTS)))[0]
    finally:
        conn.close()
