"""What `status` and `events` show an external agent: the team as `mnemara ps` and
`mnemara logs` show it, read from host.sqlite (never from the host itself).

`status` is `ps`'s table (panels/host/control/account.py's `table`, with the sandbox warning)
under a first line that says whether the host runs; when it does not, messages still wait on
the bus, and the line says so. `events` renders the last events with the events catalogue's
own lines (`format_event`), never a repr. Both are sync reads over a connection of their own;
the tools run them in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from panels.host.control.account import format_event, table
from panels.host.process import read_pid
from panels.hostdb import connect, get_meta, last_event_id, read_events, read_panels
from panels.procfs import pid_alive
from panels.text import clean
from panels.unconfined import META_KEY, warning
from peerbus import redact

PAGE = 500  # events read per step while looking back for printable lines
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
    bus = meta.get("bus") or redact(place.bus)
    if pid is not None:
        head = [f"team {place.name}: host running (pid {pid}); bus {bus}"]
    else:
        head = [
            f"team {place.name}: host DOWN; bus {bus}",
            "messages you send wait on the bus until the host runs again; the table below "
            "is as the host left it",
        ]
    said = warning(meta.get(META_KEY, ""), rows)
    tail = [f"warning: {clean(said, 400)}"] if said is not None else []
    return head + table(rows) + tail


def event_lines(place: TeamPlace, count: int) -> list[str]:
    """The last `count` events (at most MAX_EVENTS) that `mnemara logs` would print."""
    if not place.hostdb.is_file():
        return []
    count = max(0, min(count, MAX_EVENTS))
    conn = connect(place.hostdb, create=False)
    try:
        lines: list[str] = []
        before = last_event_id(conn) + 1
        while len(lines) < count and before > 1:
            start = max(0, before - 1 - PAGE)
            page = [e for e in read_events(conn, after=start, limit=PAGE) if e.id < before]
            lines = [t for e in page if (t := format_event(e)) is not None] + lines
            before = start + 1
        return lines[-count:] if count else []
    finally:
        conn.close()
