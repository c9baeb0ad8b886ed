"""The soak's table recreation (`--recreate K`): the team's `returns` table dropped and made
again, in the same file, while the host runs; and what the invariants mean across it.

The team's bus starts as a foreign table (the seven contract columns, as an operator or the
original mnemara makes it; WAL), so the host runs it in compatibility mode with a sidecar,
`bus.sqlite.peerbus` (peerbus/sqlite/sidecar_identity.py). A recreation takes the write
lock of the table's file, reads every row of the old table, drops it and creates it again,
in one transaction: nothing is written to the old table after the copy, and the new one
hands out ids from 1 again. Before it, the sidecar must hold the mark of the table being
dropped (the bus followed the last recreation), so each table, a generation, had its own
bus identity: that identity is what the turn stores' `delivered` rows and outbox entries
name, and what tells a row of one generation from the same id in another.

Across a recreation (`merge`): each generation's ids are made distinct (`generation *
SPAN + id`); rows of a dropped table that no committed turn consumed are gone by the
operator's own act, so they are not lost, only counted (`TeamState.gone`). Everything else
holds over all generations together: no message of any table consumed twice; every
consumed message, whatever its table, has the message it owes on some table (a turn that
committed owes its sends; its input's table going away does not cancel them); no text sent
twice, on one table or on two; and on the last table, every row to a running recipient is
consumed, none is claimed or pending, and no outbox entry of any generation is left
unpublished.

A file replaced by another one (`os.replace`) under a running host is not done here:
SQLite's locks belong to the file, so a writer still holding the old one can leave its
journal at the path for the new file (SQLite's "how to corrupt": unlinking a database in
use); the bus tests replace a file with no writer busy (tests/peerbus/test_table_identity.py).
"""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio
from soak_state import BusRow, OutboxEntry, PanelStore, TeamState, connect_ro, payload_text

from peerbus.sqlite.schema import CONTRACT_DDL

# The table as an operator makes it by hand (the original README's seven columns).
FOREIGN_DDL = CONTRACT_DDL
MARK_PREFIX = "peerbus_mark_"
SPAN = 1_000_000_000  # ids of generation g are g * SPAN + id
Key = Callable[[str, int], int]  # (bus identity, id) -> the id made distinct


@dataclass(frozen=True)
class Generation:
    """A table that was dropped: its bus identity and its rows at the moment it went."""

    identity: str
    rows: tuple[BusRow, ...]


def sidecar_of(bus: Path) -> Path:
    return bus.with_name(bus.name + ".peerbus")


def make_foreign_bus(path: Path) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        conn.execute(FOREIGN_DDL)
    finally:
        conn.close()


def _sidecar_meta(sidecar: Path) -> dict[str, str]:
    conn = connect_ro(sidecar)
    try:
        rows = conn.execute(
            "SELECT key, value FROM peerbus_meta WHERE key IN ('bus_id', 'table_mark')"
        )
        return {str(k): str(v) for k, v in rows}
    finally:
        conn.close()


def recreate(bus: Path) -> Generation | None:
    """Drop `returns` and make it again, under the table file's write lock; the old rows
    and identity come back. None when the bus has not yet followed the last recreation
    (the sidecar's mark is not on the table): try again later."""
    conn = sqlite3.connect(bus, isolation_level=None, timeout=30)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Read under the table's write lock: the bus marks a new table under it too.
            meta = _sidecar_meta(sidecar_of(bus))
            name = MARK_PREFIX + meta.get("table_mark", "")
            marked = conn.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'trigger' AND name = ?", (name,)
            ).fetchone()
            if marked is None or "bus_id" not in meta:
                conn.execute("ROLLBACK")
                return None
            rows = tuple(
                BusRow(int(i), str(s), None if r is None else str(r), payload_text(p))
                for i, s, r, p in conn.execute(
                    "SELECT id, agent_role, recipient_role, payload_json FROM returns ORDER BY id"
                )
            )
            conn.execute("DROP TABLE returns")
            conn.execute(FOREIGN_DDL)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return Generation(meta["bus_id"], rows)
    finally:
        conn.close()


def final_identity(bus: Path) -> str:
    return _sidecar_meta(sidecar_of(bus)).get("bus_id", "")


def merge(state: TeamState, dropped: Sequence[Generation], last: str) -> TeamState:
    """One end state over every generation, ids made distinct (the module docstring)."""
    gen = {g.identity: i for i, g in enumerate(dropped)}
    gen[last] = len(dropped)

    def key(source: str, ident: int) -> int:
        # A source no generation had (none expected) keeps its place past them all.
        return gen.get(source, len(dropped) + 1) * SPAN + ident

    def moved(rows: Sequence[BusRow], g: int) -> tuple[BusRow, ...]:
        return tuple(replace(r, id=g * SPAN + r.id) for r in rows)

    old = tuple(r for i, g in enumerate(dropped) for r in moved(g.rows, i))
    # A key the last table's sidecar holds was published there, whatever table fed its turn.
    on_last = frozenset(state.sent or ())
    stores = {p: _store(s, last, key, on_last) for p, s in state.stores.items()}
    sent = None
    if state.sent is not None:
        sent = {k: tuple(key(last, m) for m in ids) for k, ids in state.sent.items()}
    return replace(
        state,
        rows=old + moved(state.rows, len(dropped)),
        receipts={(key(last, m), r): s for (m, r), s in state.receipts.items()},
        sent=sent,
        stores=stores,
        gone=frozenset(r.id for r in old),
    )


def _store(store: PanelStore, last: str, key: Key, on_last: frozenset[str]) -> PanelStore:
    """A turn store's consumed ids and published ids, each keyed by its generation."""

    def source(row: int) -> str:
        return store.sources.get(row, last)

    complete = {row: tuple(key(source(row), i) for i in ids) for row, ids in store.complete.items()}
    delivered = None
    if store.delivered is not None:
        delivered = tuple((key(source(row), m), row) for m, row in store.delivered)
    outbox = None
    if store.outbox is not None:
        outbox = tuple(_entry(e, last, key, on_last) for e in store.outbox)
    return replace(store, complete=complete, delivered=delivered, outbox=outbox)


def _entry(entry: OutboxEntry, last: str, key: Key, on_last: frozenset[str]) -> OutboxEntry:
    """An entry's id is on the table it was published to: the last one when its sidecar
    has the key (a turn fed from a dropped table can publish on its successor), else the
    table its turn was fed from (the sent keys of a dropped table went with it)."""
    if entry.message_id is None:
        return entry
    table = last if entry.key in on_last else entry.source or last
    return replace(entry, message_id=key(table, entry.message_id))


async def recreate_when_followed(bus: Path, within: float) -> Generation | None:
    """`recreate`, tried again until the bus has followed the last one, for `within` s."""
    end = time.monotonic() + within
    while True:
        made = await anyio.to_thread.run_sync(recreate, bus)
        if made is not None or time.monotonic() >= end:
            return made
        await anyio.sleep(0.05)


def plan_recreations(count: int, lives: int) -> Counter[int]:
    """Life index (0-based; `lives - 1` is the last) -> recreations in it, spread evenly."""
    return Counter((i + 1) * lives // (count + 1) for i in range(count))
