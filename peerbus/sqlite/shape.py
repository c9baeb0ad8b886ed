"""The shape of a foreign `returns` table: the columns we must fill, and its timestamp format.

Tables in the wild carry more than the seven contract columns (the original's own tests use
`session_id TEXT NOT NULL`, `processed_at`, `completed_at`). Compatibility mode never alters
such a table, so it reads the shape once at open and writes rows the table accepts:
- an extra NOT NULL column without a default is filled when we can fill it honestly
  (`session_id`, and `*_at` stamps other than `completed_at` / `processed_at`, which would
  say the row is finished); any other such column makes the table unusable, said at open;
- stamps (`submitted_at`, the filled `*_at`, and `completed_at` / `processed_at` on ack) are
  written in the format the other writers' rows use, looked at in each writing
  transaction (`stamp_style`), so text comparisons by the table's other readers keep
  working. Our own rows are never that evidence (the sidecar lists them, `peerbus_own`):
  counted, the format of a host's first row on an empty table would stick for good. A
  table with no other writer's row gets the original's format, SQLite's `datetime('now')`
  (`YYYY-MM-DD HH:MM:SS`), whatever the column's default says.

Parsing is separate from formatting: `prune` must read every format it may meet (ISO with
`T` or a space, with or without fraction or zone, unix numbers), whoever wrote the row.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from peerbus.errors import BusOpenError
from peerbus.sqlite.schema import CONTRACT_COLUMNS

# Rows whose `submitted_at` decides the format: the newest ones of other writers, looked
# for among the newest WINDOW rows (a long run of our own rows ends the look: the format
# then stays the original's, never ours by count).
SAMPLE = 20
WINDOW = 200

_STAMP = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})"
    r"(?:([T ])(\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d*)?")
# Unix numbers this large are milliseconds (1e11 seconds is the year 5138).
_MILLIS = 1e11
_DONE_STAMPS = ("completed_at", "processed_at")


@dataclass(frozen=True)
class StampStyle:
    """How a table writes its stamps. The default is peerbus's own ISO form (receipts.iso)."""

    kind: str = "text"  # "text", or "unix" for numbers of seconds
    sep: str = "T"  # between date and time: "T" (ISO) or " " (SQLite's datetime('now'))
    fraction: int = 3  # digits after the seconds
    zone: str = "+00:00"  # "", "Z" or "+00:00": we always write UTC

    def format(self, ts: float) -> str | int | float:
        if self.kind == "unix":
            return round(ts, self.fraction) if self.fraction else int(ts)
        moment = datetime.fromtimestamp(ts, UTC)
        text = moment.strftime(f"%Y-%m-%d{self.sep}%H:%M:%S")
        if self.fraction:
            digits = min(self.fraction, 6)
            text += "." + f"{moment.microsecond:06d}"[:digits] + "0" * (self.fraction - digits)
        return text + self.zone


ISO = StampStyle()
SQLITE = StampStyle(sep=" ", fraction=0, zone="")


@dataclass(frozen=True)
class ForeignShape:
    """What compatibility mode must know about a foreign table to write to it correctly."""

    columns: tuple[str, ...]
    # Extra NOT NULL columns without a default that submit fills (session_id, *_at).
    fills: tuple[str, ...]
    has_completed_at: bool
    has_processed_at: bool
    # (column, why) for each NOT NULL column without a default we cannot fill honestly.
    unfillable: tuple[tuple[str, str], ...] = ()

    def refusal(self) -> str | None:
        """One sentence saying why the table cannot be written, or None when it can."""
        if not self.unfillable:
            return None
        column, why = self.unfillable[0]
        return (
            f"the `returns` table's column `{column}` is NOT NULL without a default and {why}; "
            "give it a DEFAULT or allow NULL, or point --db at another file "
            "(peerbus never alters a foreign table)"
        )


def quote(column: str) -> str:
    """A column name as an SQL identifier (names come from the foreign table's schema)."""
    return '"' + column.replace('"', '""') + '"'


def read_shape(conn: sqlite3.Connection) -> ForeignShape:
    """Read the shape of `main.returns`: its columns and what we must fill."""
    info = conn.execute("PRAGMA main.table_info(returns)").fetchall()
    columns = tuple(str(r[1]) for r in info)
    single_pk = sum(1 for r in info if r[5]) == 1
    fills: list[str] = []
    unfillable: list[tuple[str, str]] = []
    for _cid, name, decl, notnull, default, pk in info:
        name = str(name)
        has_default = default is not None and str(default).upper() != "NULL"
        if not notnull or has_default or (pk and single_pk and "INT" in str(decl).upper()):
            continue
        why = _why_unfillable(name)
        if why is None:
            if name not in CONTRACT_COLUMNS:
                fills.append(name)
        else:
            unfillable.append((name, why))
    return ForeignShape(
        columns=columns,
        fills=tuple(fills),
        has_completed_at="completed_at" in columns,
        has_processed_at="processed_at" in columns,
        unfillable=tuple(unfillable),
    )


def stamp_style(conn: sqlite3.Connection, own: str | None = "side.peerbus_own") -> StampStyle:
    """The format of the newest stamps other writers put in `main.returns`; the original's
    when there are none. `own`: the table listing our own rows (None: count every row)."""
    mine = f"WHERE id NOT IN (SELECT message_id FROM {own})" if own else ""
    samples = [
        r[0]
        for r in conn.execute(
            f"""SELECT submitted_at FROM (
                    SELECT id, submitted_at FROM main.returns
                     WHERE submitted_at IS NOT NULL ORDER BY id DESC LIMIT {WINDOW}
                ) {mine} LIMIT {SAMPLE}"""
        )
    ]
    return detect_style(samples)


def _why_unfillable(column: str) -> str | None:
    """None when submit can fill the NOT NULL column honestly; else the reason it cannot."""
    if column in ("recipient_role", "task_id"):
        # Contract columns we write NULL into: a broadcast, a message without a topic.
        meaning = "a broadcast" if column == "recipient_role" else "a message without a topic"
        return f"peerbus writes NULL there for {meaning}"
    if column in _DONE_STAMPS:
        return "a value there at submit would mark the message finished before anyone read it"
    if column in CONTRACT_COLUMNS or column == "session_id" or column.endswith("_at"):
        return None
    return "peerbus has no honest value to put there"


def require_writable(shape: ForeignShape, path: Path) -> None:
    """Refuse, at open, a table that submit could not write correctly."""
    refusal = shape.refusal()
    if refusal is not None:
        raise BusOpenError(refusal, path=path)


def detect_style(samples: list[object]) -> StampStyle:
    """The most common format among `samples`; for none, the original's (SQLite's
    `datetime('now')`): the original mnemara and its tools write and read that one."""
    styles = [s for s in (_style_of(v) for v in samples) if s is not None]
    if styles:
        return Counter(styles).most_common(1)[0][0]
    return SQLITE


def _style_of(value: object) -> StampStyle | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return StampStyle(kind="unix", fraction=0)
    if isinstance(value, float):
        return StampStyle(kind="unix", fraction=3)
    if not isinstance(value, str):
        return None
    text = value.strip()
    if _NUMBER.fullmatch(text):  # a number in a TEXT column: affinity made it text
        return StampStyle(kind="unix", fraction=len(text.partition(".")[2]))
    match = _STAMP.fullmatch(text)
    if match is None or match.group(4) is None:
        return None
    zone = match.group(9) or ""
    if zone and zone.upper() != "Z":
        zone = "+00:00"
    return StampStyle(
        sep=match.group(4).upper(), fraction=len(match.group(8) or ""), zone=zone.upper()
    )


def parse_stamp(value: object) -> float | None:
    """The latest unix time a stamp can denote (`2026-01-01 10:00:00` ends at 10:00:01), or
    None when it cannot be read. The latest, so a row is never taken for older than it is.

    Zone-less text is UTC, as SQLite's `datetime('now')` writes it.
    """
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return _unix(float(value), 0 if isinstance(value, int) else 6)
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    text = text.strip()
    if _NUMBER.fullmatch(text):
        places = len(text.partition(".")[2])
        return _unix(float(text), places)
    match = _STAMP.fullmatch(text)
    if match is None:
        return None
    year, month, day, sep, hour, minute, second, frac, zone = match.groups()
    try:
        y, mo, d, h, mi, sec = (int(f or 0) for f in (year, month, day, hour, minute, second))
        start = datetime(y, mo, d, h, mi, sec, tzinfo=UTC)
    except ValueError:
        return None
    # The unit of the last field written: a day, a minute, a second or a fraction of one.
    unit = 86400.0 if sep is None else 60.0 if second is None else 10.0 ** -len(frac or "")
    value_s = start.timestamp() + (float("0." + frac) if frac else 0.0)
    if zone and zone.upper() != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        value_s -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    return value_s + unit


def _unix(number: float, places: int) -> float:
    seconds = number / 1000 if abs(number) >= _MILLIS else number
    unit = (0.001 if abs(number) >= _MILLIS else 1.0) * 10.0**-places
    return seconds + unit
