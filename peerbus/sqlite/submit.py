"""Putting messages on the bus, and registering recipients with their epochs.

The sender is an argument set by the caller's host (the panel it runs, or `operator`),
never a field of the payload: a payload that says `"from": "watchdog"` is just data. The
payload must be a JSON object under the size cap; a refused payload raises before any
write. A direct message is stamped with the recipient's current epoch, so a message sent
to a panel that restarts before reading it is delivered flagged `stale_epoch`.

A submit can carry an idempotency key, so a sender that cannot tell whether its submit
went through (a turn cut off by the host's death, replayed after the restart) can send
again without sending twice. The key is recorded in `peerbus_sent`, in the same write
transaction as the row; a key already there returns the id it produced and writes
nothing. Keys are one namespace per bus: put the sender and what makes the send unique in
them (e.g. panel, turn and call). A key lasts until `prune` deletes its message.

In owned mode the row and its key commit together (one file). In compatibility mode the
key lives in the sidecar and the row in the foreign file, and SQLite does not commit two
files atomically when one is in WAL mode: a crash (or a power cut: the sidecar commits
without fsync) between the two files' commits can leave a foreign row whose key was not
recorded, and a retry with that key then sends a second copy. A foreign row also gets
what its table requires beyond the contract columns (a `session_id`, stamps in the table's
own format; see shape.py), and never a column the table lacks; its id goes to the
sidecar's `peerbus_own`, so our rows never decide that format.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from typing import Any

from peerbus.model import Outgoing, iso
from peerbus.payload import check_key, check_role, encode_payload, topic_text
from peerbus.routing import Route
from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.compat import session_id, writable_shape
from peerbus.sqlite.shape import ForeignShape, quote, stamp_style


def submit(
    bus: BusFile,
    sender: str,
    recipient: str | None,
    payload: dict[str, Any],
    *,
    topic: str | None = None,
    recipient_epoch: int | None = None,
    key: str | None = None,
) -> int:
    """Append one message; returns its id (with a `key` already sent: that message's id)."""
    message = Outgoing(recipient, payload, topic, recipient_epoch, key)
    return submit_many(bus, sender, [message])[0]


def submit_many(bus: BusFile, sender: str, messages: Sequence[Outgoing]) -> list[int]:
    """Append several messages in one transaction; returns their ids in order.

    A keyed message whose key was sent before (by an earlier call, or earlier in this one)
    is not written again: its place in the result holds the id the key produced.
    """
    check_role(sender, field="sender")
    rows = []
    for m in messages:
        if m.recipient is not None:
            check_role(m.recipient, field="recipient")
        if m.key is not None:
            check_key(m.key)
        text = encode_payload(
            m.payload, max_bytes=bus.options.max_payload_bytes, max_depth=bus.options.max_depth
        )
        topic = topic_text(m.topic)
        rows.append((m, text, topic))

    def work(conn: sqlite3.Connection) -> list[int]:
        now = bus.now()
        when = iso(now)
        if bus.mode == "compat":
            insert_sql, fills = _foreign_insert(bus, conn, writable_shape(bus, conn), now)
        ids = []
        for m, text, topic in rows:
            if m.key is not None:
                sent = _sent_id(conn, bus, m.key)
                if sent is not None:
                    ids.append(sent)
                    continue
            if bus.mode == "owned":
                epoch = m.recipient_epoch
                if epoch is None and m.recipient is not None:
                    epoch = _current_epoch(conn, bus, m.recipient)
                cursor = conn.execute(
                    """INSERT INTO main.returns (agent_role, recipient_role, task_id,
                           payload_json, status, submitted_at, recipient_epoch)
                       VALUES (?, ?, ?, ?, 'pending', ?, ?)""",
                    (sender, m.recipient, topic, text, when, epoch),
                )
            else:
                cursor = conn.execute(insert_sql, (sender, m.recipient, topic, text, *fills))
            ident = int(cursor.lastrowid or 0)
            if bus.mode == "compat":
                conn.execute("INSERT OR IGNORE INTO side.peerbus_own VALUES (?)", (ident,))
            if m.key is not None:
                conn.execute(
                    f"""INSERT INTO {bus.state}.peerbus_sent (key, message_id, sent_at)
                        VALUES (?, ?, ?)""",
                    (m.key, ident, when),
                )
            ids.append(ident)
        return ids

    ids = bus.write(work, durable=True)
    bus.touch(m.recipient for m in messages)  # after the commit: the rows are visible
    return ids


def _foreign_insert(
    bus: BusFile, conn: sqlite3.Connection, shape: ForeignShape, now: float
) -> tuple[str, tuple[str | int | float, ...]]:
    """The INSERT for a foreign table: the contract columns, then the extra NOT NULL ones it
    requires (shape.py says which we can fill honestly), stamps in the other writers' format
    (read in the caller's transaction, so a writer that just joined is followed)."""
    stamp = stamp_style(conn).format(now)
    extra = ("submitted_at", *shape.fills)
    fills = tuple(session_id(bus) if c == "session_id" else stamp for c in extra)
    names = ", ".join(quote(c) for c in extra)
    marks = ", ".join("?" * len(extra))
    sql = f"""INSERT INTO main.returns (agent_role, recipient_role, task_id, payload_json,
                  status, {names}) VALUES (?, ?, ?, ?, 'pending', {marks})"""
    return sql, fills


def _sent_id(conn: sqlite3.Connection, bus: BusFile, key: str) -> int | None:
    row = conn.execute(
        f"SELECT message_id FROM {bus.state}.peerbus_sent WHERE key = ?", (key,)
    ).fetchone()
    return None if row is None else int(row[0])


def _current_epoch(conn: sqlite3.Connection, bus: BusFile, recipient: str) -> int | None:
    row = conn.execute(
        f"SELECT epoch FROM {bus.state}.peerbus_recipients WHERE recipient = ?", (recipient,)
    ).fetchone()
    return None if row is None else int(row[0])


def register(
    bus: BusFile,
    recipient: str,
    *,
    senders: Collection[str] | None = None,
    epoch: int | None = None,
    release: bool = True,
) -> int:
    """Record a (re)starting recipient and return its new epoch.

    Without `epoch` the stored epoch goes up by one; with it, the epoch becomes
    max(stored, epoch). Registering before other panels ack broadcasts makes this
    recipient count for them: a broadcast is closed only when every registered recipient
    that takes it is finished with it. With `release`, leases the recipient's previous
    incarnation held are given back at once instead of at their expiry (one consumer per
    recipient role is the host's model), with no attempt counted: that incarnation's death
    says nothing about the messages.
    """
    route = Route.of(recipient, senders)
    released = 0

    def work(conn: sqlite3.Connection) -> int:
        nonlocal released
        when = iso(bus.now())
        row = conn.execute(
            f"""INSERT INTO {bus.state}.peerbus_recipients
                    (recipient, epoch, senders_json, registered_at)
                VALUES (:r, coalesce(:e, 1), :s, :w)
                ON CONFLICT (recipient) DO UPDATE SET
                    epoch = CASE WHEN :e IS NULL THEN epoch + 1 ELSE max(epoch, :e) END,
                    senders_json = excluded.senders_json, registered_at = excluded.registered_at
                RETURNING epoch""",
            {"r": route.recipient, "e": epoch, "s": route.senders_json, "w": when},
        ).fetchone()
        if release:
            released = conn.execute(
                f"""UPDATE {bus.state}.peerbus_receipts
                       SET state = 'waiting', available_at = 0, claim_token = NULL,
                           lease_until = NULL
                     WHERE recipient = ? AND state = 'leased'""",
                (route.recipient,),
            ).rowcount
        return int(row[0])

    epoch = bus.write(work, durable=True)
    if released:
        bus.touch([route.recipient])  # the released leases are claimable now
    return epoch
