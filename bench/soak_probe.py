"""What the soak's parent watches while a life runs, and what it finds left over at the end.

`Probe.read()` is cheap enough to call every few milliseconds: it tails the driver's marks
file and host.sqlite's events table (read-only, from a cursor), and counts complete user
rows in each turns.sqlite and done receipts on the bus. The event log alone is too late to
aim with (the host writes it in batches, 0.1 s apart), so each signal takes the earliest
source: a turn start is a driver mark (or, with the CLI, a `turn_started` event); a commit
is a new complete user row (or a `turn_committed` event); an ack a new done receipt (or a
`settled` event). A file that is missing or busy keeps its last figures until next time.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from soak_driver import REFUSED
from soak_state import BusRow, Event, connect_ro

RAISED_MARK = "raised"  # soak_driver.py marks a raise so

EVENT_KINDS = ("turn_started", "turn_committed", "settled", "host_ready")


@dataclass(frozen=True)
class Signals:
    starts: int
    commits: int
    acks: int
    ready: frozenset[str]  # lives whose host_ready is in the log


class Probe:
    def __init__(self, *, marks: Path, hostdb: Path, bus: Path, turns: Mapping[str, Path]) -> None:
        self.marks = marks
        self.paths = {"host": hostdb, "bus": bus, **{f"turns:{p}": t for p, t in turns.items()}}
        self._conns: dict[str, sqlite3.Connection] = {}
        self._versions: dict[str, int] = {}
        self._offset = 0
        self._partial = b""
        self._marked_starts = 0
        self._cursor = 0
        self._events = dict.fromkeys(EVENT_KINDS, 0)
        self._ready: set[str] = set()
        self._rows: dict[str, int] = {}
        self._done = 0

    def close(self) -> None:
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()

    def read(self) -> Signals:
        self._read_marks()
        self._query("host", self._read_events)
        self._query("bus", self._read_acks)
        for name in self.paths:
            if name.startswith("turns:"):
                self._query(name, lambda c, name=name: self._read_rows(name, c))
        return Signals(
            # Each turn start shows as a mark and (later) an event: whichever came first.
            starts=max(self._marked_starts, self._events["turn_started"]),
            commits=sum(self._rows.values()) + self._events["turn_committed"],
            acks=self._done + self._events["settled"],
            ready=frozenset(self._ready),
        )

    def _read_marks(self) -> None:
        try:
            with self.marks.open("rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        self._marked_starts += sum(1 for line in lines if line.startswith(b"start "))

    def _query(self, name: str, work: Callable[[sqlite3.Connection], None]) -> None:
        path = self.paths[name]
        try:
            conn = self._conns.get(name)
            if conn is None:
                if not path.exists():
                    return
                conn = self._conns[name] = connect_ro(path)
                self._versions.pop(name, None)
            # Changes only when another connection commits: skip the query when nothing did.
            version = int(conn.execute("PRAGMA data_version").fetchone()[0])
            if self._versions.get(name) == version:
                return
            work(conn)
            self._versions[name] = version
        except sqlite3.Error:
            # Not created yet, locked for a moment, or mid-recovery: ask again next time.
            conn = self._conns.pop(name, None)
            if conn is not None:
                conn.close()

    def _read_events(self, conn: sqlite3.Connection) -> None:
        marks = ",".join("?" * len(EVENT_KINDS))
        for ident, kind, data in conn.execute(
            f"SELECT id, kind, data FROM events WHERE id > ? AND kind IN ({marks}) ORDER BY id",
            (self._cursor, *EVENT_KINDS),
        ):
            self._cursor = max(self._cursor, int(ident))
            self._events[str(kind)] += 1
            if kind == "host_ready":
                life = _life_of(str(data))
                if life:
                    self._ready.add(life)
        top = conn.execute("SELECT max(id) FROM events").fetchone()[0]
        self._cursor = max(self._cursor, int(top or 0))

    def _read_acks(self, conn: sqlite3.Connection) -> None:
        found = conn.execute("SELECT count(*) FROM peerbus_receipts WHERE state = 'done'")
        self._done = int(found.fetchone()[0])

    def _read_rows(self, name: str, conn: sqlite3.Connection) -> None:
        found = conn.execute(
            "SELECT count(*) FROM window_rows WHERE role = 'user' AND status = 'complete'"
        )
        self._rows[name] = int(found.fetchone()[0])


def _life_of(data: str) -> str:
    try:
        value = json.loads(data)
    except ValueError:
        return ""
    return str(value.get("life", "")) if isinstance(value, dict) else ""


# A refused call as the driver marks it: "{'to': 'producer', 'text': 'done op-4'}: why".
_CALL = re.compile(r"'to': '([^']*)', 'text': '([^']*)'")


def count_marks(marks: Path, what: str) -> int:
    """How many lines of the marks file say `what` (the driver's `follow_up`, say)."""
    try:
        lines = marks.read_bytes().splitlines()
    except FileNotFoundError:
        return 0
    return sum(1 for line in lines if line.startswith(f"{what} ".encode()))


def limits_hit(
    marks: Path, events: Sequence[Event], rows: Sequence[BusRow]
) -> dict[str, dict[str, Any]]:
    """The host's limits the run ran into, each {"count", "examples", "fails", "why"}.

    A send refused whose text is on the bus all the same was refused for the turn's limit
    and sent by the follow-up turn the host owed (followup.py): the limit worked, nothing
    was lost, so it does not fail the run. A send refused and never sent, and a panel
    halted (`halt` events: it claims nothing more), fail it: the harness left the host's
    limits, or a promise of the host was not kept."""
    try:
        lines = marks.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        lines = []
    on_bus = {(r.sender, r.recipient, r.text) for r in rows}
    later, never, raised = [], [], []
    for line in lines:
        what, panel, _, detail = [*line.split(" ", 3), "", "", ""][:4]
        if what == REFUSED:
            call = _CALL.search(detail)
            sent = call is not None and (panel, call[1], call[2]) in on_bus
            (later if sent else never).append(f"{panel}: {detail}")
        elif what == RAISED_MARK:
            raised.append(f"{panel}: {detail}")
    halted = [f"{e.panel}: {e.data.get('message')}" for e in events if e.kind == "halt"]
    hit = {
        "sends refused, then sent by a follow-up turn": (
            later,
            False,
            (
                "a turn sent more than per_turn (a chatty panel); the host owed and ran a "
                "follow-up turn listing them, which sent them"
            ),
        ),
        "drivers that raised": (
            raised,
            False,
            (
                "a fault injected on purpose: the turn's batch came again, counted, and its "
                "partial send never went out (the invariants check both)"
            ),
        ),
        "sends refused and never sent": (
            never,
            True,
            (
                "a reply owed and never sent: the harness left the host's limits or a "
                "follow-up was not run"
            ),
        ),
        "panels halted": (halted, True, "a halted panel claims nothing more"),
    }
    return {
        name: {"count": len(found), "examples": found[:5], "fails": fails, "why": why}
        for name, (found, fails, why) in hit.items()
    }


# -- leftovers --------------------------------------------------------------------------------


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:  # gone meanwhile, or another user's process
        return b""


def leftover_processes(*, scratch: Path, state_dir: Path, parent: int) -> list[str]:
    """Processes this soak left behind, each as "pid command: why".

    A process whose environment has MNEMARA_HOST_STATE=<this team's state dir> (what the
    host puts in every CLI it starts), or any variable pointing into the soak's temp dir
    (MNEMARA_HOME, HOME), or whose command line names that dir; and every child of the soak
    still there (a zombie is one that was not reaped).
    """
    state_entry = f"MNEMARA_HOST_STATE={state_dir}".encode()
    root = str(scratch).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        environ = _read(entry / "environ").split(b"\0")
        cmdline = _read(entry / "cmdline").replace(b"\0", b" ").strip()
        stat = _read(entry / "stat")
        fields = stat[stat.rfind(b")") + 2 :].split()
        state, ppid = (fields[0].decode(), int(fields[1])) if len(fields) > 1 else ("?", 0)
        why = []
        if state_entry in environ:
            why.append("MNEMARA_HOST_STATE")
        elif any(root in e for e in environ):
            why.append("environment names the soak's dir")
        if root in cmdline:
            why.append("command line names the soak's dir")
        if ppid == parent:
            why.append("zombie child of the soak" if state == "Z" else "child of the soak")
        if why:
            command = cmdline.decode(errors="replace")[:100]
            found.append(f"{entry.name} {command}: {', '.join(why)}")
    return found
