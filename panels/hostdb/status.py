"""Panel status rows (what `ps` and the dashboard show) and the host's meta values.

A viewer may read a file an older host wrote (schema before v5 lacks the sandbox, before v4
the window, budget and inbox figures, before v3 the dead-letter count) without migrating it
(it opens read-only): `panel_select` names only the columns the file has, and
`panel_from_row` leaves the missing ones at their defaults.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

from sqlitekit.txn import transaction

# `PanelRow.sandbox`: how the panel's tools run. "" is not known: a file an older host wrote,
# or a driver that starts no tools of its own (a scripted one in tests).
TOOLS_SANDBOXED = "sandboxed"  # inside bubblewrap (runtime/sandbox/)
TOOLS_UNCONFINED = "unconfined"  # with the user's full rights; the host's meta `sandbox` says why


@dataclass(frozen=True)
class PanelRow:
    name: str
    kind: str
    state: str
    detail: str = ""
    turns: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    usd: float = 0.0
    epoch: int = 0
    inbox: bool = True
    model: str = ""
    updated_ts: float = 0.0
    dead_letters: int = 0  # messages given up for the panel (both its routes), on the bus
    window_tokens: int = 0  # the tokens of the panel's window rows now
    token_cap: int = 0  # its max_window_tokens (0: not known yet, no session)
    budget_usd: float = 0.0  # its session dollar budget (0: none)
    waiting: int = 0  # messages waiting for it on the bus (both routes), not yet claimed
    position: int = 0  # its place in the team file: viewers list panels in this order
    label: str = ""  # the config's display_name (the original's /name), "" for none
    sandbox: str = ""  # TOOLS_SANDBOXED, TOOLS_UNCONFINED, or "" (not known)


_NAMES = [f.name for f in fields(PanelRow)]


def upsert_panels(conn: sqlite3.Connection, rows: Sequence[PanelRow]) -> None:
    """Write the latest status of each panel in one transaction."""
    if not rows:
        return
    marks = ", ".join("?" * len(_NAMES))
    updates = ", ".join(f"{n} = excluded.{n}" for n in _NAMES[1:])
    sql = (
        f"INSERT INTO panels ({', '.join(_NAMES)}) VALUES ({marks}) "
        f"ON CONFLICT (name) DO UPDATE SET {updates}"
    )
    values = [tuple(int(v) if isinstance(v, bool) else v for v in astuple(r)) for r in rows]
    transaction(conn, lambda c: c.executemany(sql, values))


PANEL_COLUMNS = ", ".join(_NAMES)
# What `PRAGMA table_info(panels)` returns the column names of (their position: 1).
PANEL_TABLE_INFO = "PRAGMA table_info(panels)"


def panel_select(present: Iterable[str]) -> list[str]:
    """The PanelRow columns that a file's panels table has (`present`: its column names),
    in PanelRow order: what to SELECT from a file of any version."""
    have = set(present)
    return [n for n in _NAMES if n in have]


def panel_from_row(row: Sequence[Any], names: Sequence[str] = _NAMES) -> PanelRow:
    """One `SELECT {names} FROM panels` row as a PanelRow (`names` defaults to every column;
    fields an older file lacks keep their defaults)."""
    values = dict(zip(names, row, strict=True))
    if "inbox" in values:
        values["inbox"] = bool(values["inbox"])
    return PanelRow(**values)


def panel_query(names: Sequence[str]) -> str:
    """The SELECT of these columns, in the team file's order when the file knows it (v4)."""
    order = "position, name" if "position" in names else "name"
    return f"SELECT {', '.join(names)} FROM panels ORDER BY {order}"


def read_panels(conn: sqlite3.Connection) -> list[PanelRow]:
    names = panel_select(str(r[1]) for r in conn.execute(PANEL_TABLE_INFO))
    return [panel_from_row(r, names) for r in conn.execute(panel_query(names))]


def clear_panels(conn: sqlite3.Connection, keep: Sequence[str]) -> None:
    """Forget panels that are no longer in the team."""
    marks = ",".join("?" * len(keep))
    transaction(
        conn, lambda c: c.execute(f"DELETE FROM panels WHERE name NOT IN ({marks})", list(keep))
    )


def set_meta(conn: sqlite3.Connection, values: dict[str, str]) -> None:
    transaction(
        conn,
        lambda c: c.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        ),
    )


def get_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
