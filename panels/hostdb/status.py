"""Panel status rows (what `ps` shows) and the host's meta values (pid, team, start time)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import astuple, dataclass, fields
from typing import Any

from panels.hostdb.schema import write


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
    write(conn, lambda c: c.executemany(sql, values))


PANEL_COLUMNS = ", ".join(_NAMES)


def panel_from_row(row: Sequence[Any]) -> PanelRow:
    """One `SELECT {PANEL_COLUMNS} FROM panels` row as a PanelRow."""
    values = dict(zip(_NAMES, row, strict=True))
    values["inbox"] = bool(values["inbox"])
    return PanelRow(**values)


def read_panels(conn: sqlite3.Connection) -> list[PanelRow]:
    rows = conn.execute(f"SELECT {PANEL_COLUMNS} FROM panels ORDER BY name")
    return [panel_from_row(r) for r in rows]


def clear_panels(conn: sqlite3.Connection, keep: Sequence[str]) -> None:
    """Forget panels that are no longer in the team."""
    marks = ",".join("?" * len(keep))
    write(conn, lambda c: c.execute(f"DELETE FROM panels WHERE name NOT IN ({marks})", list(keep)))


def set_meta(conn: sqlite3.Connection, values: dict[str, str]) -> None:
    write(
        conn,
        lambda c: c.executemany(
            "INSERT INTO meta (key, value) VALUES (?, ?) "
            "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            list(values.items()),
        ),
    )


def get_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute("SELECT key, value FROM meta")}
