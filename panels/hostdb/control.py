"""The control table: verbs from viewers to the host, and the outcome the host records.

A viewer inserts a `pending` row holding a verb of the catalogue (verbs.py), checked before
it is written; the host reads pending rows in id order, parses each again (a row it cannot
read is failed with the reason, never guessed at), applies it and marks it `done` or
`failed` with an outcome text. A command still pending when the host stops is applied when
it starts again. Finished commands are pruned like events.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from typing import Any, Literal

from panels.hostdb.verbs import Verb
from sqlitekit.jsonload import load_json
from sqlitekit.txn import transaction

CommandState = Literal["pending", "done", "failed"]


@dataclass(frozen=True)
class Command:
    """A control-table row as stored: the verb is parsed by the host (`parse_verb`)."""

    id: int
    ts: float
    panel: str | None
    verb: str
    args: Any  # the decoded JSON; a row from elsewhere may hold anything
    state: CommandState
    outcome: str | None
    by: str = "operator"


INSERT_COMMAND = "INSERT INTO commands (ts, panel, verb, args, by) VALUES (?, ?, ?, ?, ?)"


def command_values(verb: Verb, *, by: str, now: float) -> tuple[Any, ...]:
    """The control-table row of a verb, for INSERT_COMMAND (every writer of verbs uses it)."""
    return (now, verb.panel, verb.name, json.dumps(verb.args(), sort_keys=True), by)


def submit_command(
    conn: sqlite3.Connection, verb: Verb, *, by: str = "operator", now: float | None = None
) -> int:
    """Queue a verb for the host; returns the command's id."""
    values = command_values(verb, by=by, now=time.time() if now is None else now)
    return transaction(conn, lambda c: int(c.execute(INSERT_COMMAND, values).lastrowid or 0))


def _command(row: tuple[Any, ...]) -> Command:
    try:
        args = load_json(row[4]) if row[4] else {}
    except ValueError:
        args = None  # refused by parse_verb, with the reason
    return Command(int(row[0]), float(row[1]), row[2], str(row[3]), args, row[5], row[6], row[7])


_COLUMNS = "id, ts, panel, verb, args, state, outcome, by"


def pending_commands(conn: sqlite3.Connection, *, limit: int = 100) -> list[Command]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM commands WHERE state = 'pending' ORDER BY id LIMIT ?", (limit,)
    )
    return [_command(r) for r in rows]


def get_command(conn: sqlite3.Connection, command_id: int) -> Command | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM commands WHERE id = ?", (command_id,)).fetchone()
    return None if row is None else _command(row)


@dataclass(frozen=True)
class CommandAnswer:
    """How a command ended: written with the events that report it, in one transaction."""

    command_id: int
    ok: bool
    outcome: str


def finish_command(
    conn: sqlite3.Connection, command_id: int, *, ok: bool, outcome: str, now: float | None = None
) -> None:
    transaction(conn, lambda c: answer_in(c, CommandAnswer(command_id, ok, outcome), now=now))


def answer_in(c: sqlite3.Connection, answer: CommandAnswer, *, now: float | None = None) -> None:
    """Mark a command done or failed inside the caller's write transaction."""
    c.execute(
        "UPDATE commands SET state = ?, outcome = ?, done_ts = ? WHERE id = ?",
        ("done" if answer.ok else "failed", answer.outcome, time.time() if now is None else now,
         answer.command_id),
    )  # fmt: skip


def prune_commands(conn: sqlite3.Connection, *, keep: int) -> int:
    """Delete finished commands beyond the newest `keep`; pending ones always stay."""

    def work(c: sqlite3.Connection) -> int:
        row = c.execute(
            "SELECT id FROM commands WHERE state != 'pending' ORDER BY id DESC LIMIT 1 OFFSET ?",
            (keep,),
        ).fetchone()
        if row is None:
            return 0
        return c.execute(
            "DELETE FROM commands WHERE state != 'pending' AND id <= ?", (int(row[0]),)
        ).rowcount

    return transaction(conn, work)
