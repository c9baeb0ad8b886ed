"""The soak's end state, read: every SQLite file of the team copied into frozen values.

Plain `sqlite3`, read-only (`mode=ro`, `query_only`), so reading can never change what is
checked. Tables the product may not have (`delivered` and `outbox` in turns.sqlite,
`peerbus_sent` on the bus) are read when present and come back as None when absent; the
checks (soak_checks.py) then fall back or say "n/a". A foreign bus keeps its delivery
state in a sidecar (`--recreate`): it is attached, read-only, for receipts and sent keys.
`pending_now` and `unpublished_now` are what the last life waits on before it is stopped.
"""

from __future__ import annotations

import json
import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class BusRow:
    id: int
    sender: str
    recipient: str | None
    text: str  # the payload's "text", or its JSON when it has none


@dataclass(frozen=True)
class OutboxEntry:
    key: str
    published: bool
    failed: bool
    message_id: int | None
    source: str = ""  # the bus identity of the turn's input


@dataclass(frozen=True)
class PanelStore:
    panel: str
    complete: Mapping[int, tuple[int, ...]]  # complete user row -> its consumed ids
    row_ts: Mapping[int, float]  # complete user row -> its timestamp (epoch seconds)
    in_flight: int
    delivered: tuple[tuple[int, int], ...] | None  # (message id, user row); None: no table
    unacked: int  # delivered rows without acked_at (informational)
    outbox: tuple[OutboxEntry, ...] | None  # None: no table
    interrupted: int = 0  # user rows marked interrupted (a killed or failed try's input)
    sources: Mapping[int, str] = field(default_factory=dict)  # user row -> its bus identity


@dataclass(frozen=True)
class Event:
    id: int
    ts: float
    panel: str | None
    kind: str
    data: Mapping[str, Any]


@dataclass(frozen=True)
class TeamState:
    rows: tuple[BusRow, ...]
    receipts: Mapping[tuple[int, str], str]  # (message id, recipient) -> state
    sent: Mapping[str, tuple[int, ...]] | None  # peerbus_sent: key -> message ids
    stores: Mapping[str, PanelStore]
    events: tuple[Event, ...]
    integrity: Mapping[str, str]  # file -> "ok" or what integrity_check said
    # Ids of rows of tables dropped by the soak (soak_recreate.py): not consumed, not lost.
    gone: frozenset[int] = frozenset()


def connect_ro(path: Path, sidecar: Path | None = None) -> sqlite3.Connection:
    """A read-only connection (no writes, no journal changes); WAL content is seen. With
    `sidecar` (a foreign bus), that file is attached as `side` and its tables shadow none."""
    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=10)
    conn.execute("PRAGMA query_only = 1")
    if sidecar is not None:
        conn.execute("ATTACH DATABASE ? AS side", (f"{sidecar.resolve().as_uri()}?mode=ro",))
    return conn


def state_schema(conn: sqlite3.Connection) -> str:
    """Where the bus's peerbus_* tables are: the bus file, or its attached sidecar."""
    found = conn.execute(
        "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'peerbus_receipts'"
    ).fetchone()
    return "main" if found is not None else "side"


def has_table(conn: sqlite3.Connection, table: str, schema: str = "main") -> bool:
    found = conn.execute(
        f"SELECT 1 FROM {schema}.sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).fetchone()
    return found is not None


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def integrity(path: Path) -> str:
    if not path.exists():
        return "missing"
    try:
        conn = connect_ro(path)
    except sqlite3.DatabaseError as exc:
        return f"cannot open: {exc}"
    try:
        found = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        return f"unreadable: {exc}"
    finally:
        conn.close()
    return "ok" if found == ["ok"] else "; ".join(found[:3])


def payload_text(raw: object) -> str:
    try:
        payload = json.loads(str(raw))
    except ValueError:
        return str(raw)
    if isinstance(payload, dict) and isinstance(payload.get("text"), str):
        return str(payload["text"])
    return json.dumps(payload, sort_keys=True)


def iso_seconds(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return 0.0


Receipts = dict[tuple[int, str], str]
Sent = dict[str, tuple[int, ...]]


def read_bus(
    path: Path, sidecar: Path | None = None
) -> tuple[tuple[BusRow, ...], Receipts, Sent | None]:
    conn = connect_ro(path, sidecar)
    try:
        side = state_schema(conn)
        rows = tuple(
            BusRow(int(i), str(s), None if r is None else str(r), payload_text(p))
            for i, s, r, p in conn.execute(
                "SELECT id, agent_role, recipient_role, payload_json FROM returns ORDER BY id"
            )
        )
        receipts = {
            (int(m), str(r)): str(s)
            for m, r, s in conn.execute(
                f"SELECT message_id, recipient, state FROM {side}.peerbus_receipts"
            )
        }
        sent: Sent | None = None
        if has_table(conn, "peerbus_sent", side):
            grouped: dict[str, list[int]] = defaultdict(list)
            for key, message in conn.execute(f"SELECT key, message_id FROM {side}.peerbus_sent"):
                if message is not None:
                    grouped[str(key)].append(int(message))
            sent = {k: tuple(v) for k, v in grouped.items()}
        return rows, receipts, sent
    finally:
        conn.close()


def read_store(panel: str, path: Path) -> PanelStore:
    conn = connect_ro(path)
    try:
        complete: dict[int, tuple[int, ...]] = {}
        row_ts: dict[int, float] = {}
        in_flight = interrupted = 0
        for ident, ts, status, consumed in conn.execute(
            "SELECT id, ts, status, consumed_ids FROM window_rows WHERE role = 'user'"
        ):
            if status == "complete":
                complete[int(ident)] = tuple(int(i) for i in json.loads(consumed or "[]"))
                row_ts[int(ident)] = iso_seconds(str(ts))
            elif status == "in_flight":
                in_flight += 1
            elif status == "interrupted":
                interrupted += 1
        delivered, unacked, sources = None, 0, {}
        if has_table(conn, "delivered"):
            have = columns(conn, "delivered")
            where = " WHERE committed_at IS NOT NULL" if "committed_at" in have else ""
            source = "source" if "source" in have else "''"
            found = conn.execute(
                f"SELECT message_id, user_row_id, {source} FROM delivered{where}"
            ).fetchall()
            delivered = tuple((int(m), int(u)) for m, u, _ in found)
            sources = {int(u): str(s) for _, u, s in found}
            if "acked_at" in have:
                unacked = int(
                    conn.execute(
                        "SELECT count(*) FROM delivered WHERE acked_at IS NULL"
                    ).fetchone()[0]
                )
        outbox = read_outbox(conn) if has_table(conn, "outbox") else None
        return PanelStore(
            panel, complete, row_ts, in_flight, delivered, unacked, outbox, interrupted, sources
        )
    finally:
        conn.close()


def read_outbox(conn: sqlite3.Connection) -> tuple[OutboxEntry, ...]:
    have = columns(conn, "outbox")

    def col(name: str) -> str:
        return name if name in have else "NULL"

    sql = f"SELECT {col('key')}, {col('published_at')}, {col('failed')}, {col('message_id')}"
    sql += f", {col('source')}"
    entries = []
    for key, published, failed, message, source in conn.execute(sql + " FROM outbox"):
        entries.append(
            OutboxEntry(
                key=str(key),
                published=published is not None,
                failed=failed not in (None, 0, "", "0"),
                message_id=None if message is None else int(message),
                source=str(source or ""),
            )
        )
    return tuple(entries)


def read_events(path: Path) -> tuple[Event, ...]:
    conn = connect_ro(path)
    try:
        events = []
        for ident, ts, panel, kind, data in conn.execute(
            "SELECT id, ts, panel, kind, data FROM events ORDER BY id"
        ):
            try:
                decoded = json.loads(data)
            except ValueError:
                decoded = {}
            events.append(
                Event(
                    int(ident),
                    float(ts),
                    panel,
                    str(kind),
                    decoded if isinstance(decoded, dict) else {},
                )
            )
        return tuple(events)
    finally:
        conn.close()


def read_state(
    bus: Path, hostdb: Path, turns: Mapping[str, Path], sidecar: Path | None = None
) -> TeamState:
    files = {"bus.sqlite": bus, "host.sqlite": hostdb}
    if sidecar is not None:
        files[sidecar.name] = sidecar
    files.update({f"{panel}/turns.sqlite": path for panel, path in turns.items()})
    checked = {name: integrity(path) for name, path in files.items()}
    rows, receipts, sent = read_bus(bus, sidecar)
    stores = {panel: read_store(panel, path) for panel, path in turns.items()}
    return TeamState(rows, receipts, sent, stores, read_events(hostdb), checked)


def pending_now(conn: sqlite3.Connection, recipients: tuple[str, ...]) -> int:
    """Messages to a running recipient that are not finished (the final life waits on it)."""
    marks = ",".join("?" * len(recipients))
    side = state_schema(conn)
    row = conn.execute(
        f"""SELECT count(*) FROM main.returns AS r
              LEFT JOIN {side}.peerbus_receipts AS d
                ON d.message_id = r.id AND d.recipient = r.recipient_role
             WHERE r.recipient_role IN ({marks})
               AND (d.state IS NULL OR d.state IN ('leased', 'waiting'))""",
        recipients,
    ).fetchone()
    return int(row[0])


def unpublished_now(paths: Iterable[Path]) -> int:
    """Outbox entries neither published nor failed, over the stores that have the table."""
    total = 0
    for path in paths:
        conn = connect_ro(path)
        try:
            if has_table(conn, "outbox"):
                have = columns(conn, "outbox")
                where = "published_at IS NULL" if "published_at" in have else "0"
                if "failed" in have:
                    where += " AND (failed IS NULL OR failed IN (0, '', '0'))"
                total += int(
                    conn.execute(f"SELECT count(*) FROM outbox WHERE {where}").fetchone()[0]
                )
        finally:
            conn.close()
    return total
