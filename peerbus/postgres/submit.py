"""Putting messages on the PostgreSQL bus, and registering recipients.

The checks are the SQLite backend's (payload.py): sender and recipients are role names, the
payload a JSON object under the caps, a key 1-200 characters; a refused call writes
nothing and takes no id.

A submit is safe to run twice, which is what lets pool.py retry one whose COMMIT was cut
off without sending anything twice: its ids are drawn from the sequence (`allocate`) on
the first attempt and kept for the retries (sequence values are never rolled back), and
the write inserts rows with exactly those ids (`ON CONFLICT (id) DO NOTHING`). If the
cut-off commit went through, the retry finds its rows there and writes nothing; if not,
it writes them. No key is needed for that, so a submit without one is covered too. (A
message acked and pruned between the cut-off commit and the retry, a window of
milliseconds, would be written again; prune keeps recent rows in practice.)

A keyed message is recorded in `peerbus_sent` in the same transaction as its row; a key
already there returns the id it produced and writes nothing. The key is inserted first
with ON CONFLICT DO NOTHING, so two hosts sending one key at once serialise on it: the
second waits for the first to commit, then finds its id.

Each write NOTIFYs the channels of its recipients (see channels.py) inside the
transaction: PostgreSQL delivers them at the commit, so a listener never hears of a row
it cannot see yet.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from peerbus.model import BusOptions, Outgoing, iso
from peerbus.payload import check_key, check_role, encode_payload, topic_text
from peerbus.postgres.channels import channels_for
from peerbus.postgres.pool import Conn
from peerbus.routing import Route


@dataclass(frozen=True)
class Prepared:
    """One checked message: its stored text and cut topic."""

    message: Outgoing
    text: str
    topic: str | None


def prepare(sender: str, messages: Sequence[Outgoing], options: BusOptions) -> list[Prepared]:
    """Check everything before any I/O; raises the payload/role/key errors."""
    check_role(sender, field="sender")
    out = []
    for m in messages:
        if m.recipient is not None:
            check_role(m.recipient, field="recipient")
        if m.key is not None:
            check_key(m.key)
        text = encode_payload(
            m.payload, max_bytes=options.max_payload_bytes, max_depth=options.max_depth
        )
        out.append(Prepared(m, text, topic_text(m.topic)))
    return out


def notify(conn: Conn, recipients: Iterable[str | None]) -> None:
    conn.execute(
        "SELECT pg_notify(c, '') FROM unnest(%s::text[]) AS c", (channels_for(recipients),)
    )


def allocate(conn: Conn, sequence: str, batch: Sequence[Prepared]) -> list[int | None]:
    """Ids for the messages that will need a row: all but those whose key is already sent
    (or repeats an earlier key of the batch). Ascending, in the batch's order."""
    keys = [p.message.key for p in batch if p.message.key is not None]
    known = set()
    if keys:
        known = {
            str(r[0])
            for r in conn.execute("SELECT key FROM peerbus_sent WHERE key = ANY(%s)", (keys,))
        }
    need: list[bool] = []
    for p in batch:
        key = p.message.key
        need.append(key is None or key not in known)
        if key is not None:
            known.add(key)
    count = sum(need)
    ids: list[int] = []
    if count:
        ids = sorted(
            int(r[0])
            for r in conn.execute(
                "SELECT nextval(%s::regclass) FROM generate_series(1, %s)", (sequence, count)
            )
        )
    it = iter(ids)
    return [next(it) if n else None for n in need]


def write(
    conn: Conn,
    sender: str,
    batch: Sequence[Prepared],
    ids: Sequence[int | None],
    sequence: str,
    now: float,
) -> list[int]:
    """The submit transaction; safe to run again with the same `ids` (module docstring)."""
    when = iso(now)
    direct = sorted({p.message.recipient for p in batch if p.message.recipient is not None})
    epochs: dict[str, int] = {}
    if direct:
        epochs = {
            str(r[0]): int(r[1])
            for r in conn.execute(
                "SELECT recipient, epoch FROM peerbus_recipients WHERE recipient = ANY(%s)",
                (direct,),
            )
        }
    result: list[int] = []
    rows: list[tuple[object, ...]] = []
    for p, ident in zip(batch, ids, strict=True):
        m = p.message
        if m.key is not None:
            if ident is None:  # its key was sent: normally found below; pruned since: anew
                found = _sent(conn, m.key)
                if found is not None:
                    result.append(found)
                    continue
                ident = _next(conn, sequence)
            made = conn.execute(
                """INSERT INTO peerbus_sent (key, message_id, sent_at) VALUES (%s, %s, %s)
                   ON CONFLICT (key) DO NOTHING RETURNING message_id""",
                (m.key, ident, when),
            ).fetchone()
            if made is None:
                found = _sent(conn, m.key)
                if found is not None and found != ident:
                    result.append(found)
                    continue
        assert ident is not None
        epoch = m.recipient_epoch
        if epoch is None and m.recipient is not None:
            epoch = epochs.get(m.recipient)
        rows.append((ident, sender, m.recipient, p.topic, p.text, when, epoch))
        result.append(ident)
    if rows:
        conn.execute(
            """INSERT INTO returns (id, agent_role, recipient_role, task_id, payload_json,
                   status, submitted_at, recipient_epoch)
               SELECT i, s, r, t, p, 'pending', w, e
                 FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::text[],
                             %s::text[], %s::bigint[]) AS u(i, s, r, t, p, w, e)
               ON CONFLICT (id) DO NOTHING""",
            [list(col) for col in zip(*rows, strict=True)],
        )
    notify(conn, [p.message.recipient for p in batch])
    return result


def _sent(conn: Conn, key: str) -> int | None:
    row = conn.execute("SELECT message_id FROM peerbus_sent WHERE key = %s", (key,)).fetchone()
    return None if row is None else int(row[0])


def _next(conn: Conn, sequence: str) -> int:
    row = conn.execute("SELECT nextval(%s::regclass)", (sequence,)).fetchone()
    assert row is not None
    return int(row[0])


def register(
    conn: Conn,
    recipient: str,
    senders: Collection[str] | None,
    epoch: int | None,
    now: float,
    *,
    release: bool = True,
) -> int:
    """Record a (re)starting recipient, give back its previous incarnation's leases when
    `release` (no attempt counted), and return its new epoch (stored + 1, or max(stored,
    epoch)).

    Run twice after a cut-off commit, the epoch goes up twice: epochs only need to grow."""
    route = Route.of(recipient, senders)
    row = conn.execute(
        """INSERT INTO peerbus_recipients AS p (recipient, epoch, senders_json, registered_at)
           VALUES (%(r)s, coalesce(%(e)s, 1), %(s)s, %(w)s)
           ON CONFLICT (recipient) DO UPDATE SET
               epoch = CASE WHEN %(e)s::bigint IS NULL THEN p.epoch + 1
                            ELSE greatest(p.epoch, %(e)s::bigint) END,
               senders_json = excluded.senders_json, registered_at = excluded.registered_at
           RETURNING epoch""",
        {"r": route.recipient, "e": epoch, "s": route.senders_json, "w": iso(now)},
    ).fetchone()
    assert row is not None
    if not release:
        return int(row[0])
    released = conn.execute(
        """UPDATE peerbus_receipts
              SET state = 'waiting', available_at = 0, claim_token = NULL, lease_until = NULL
            WHERE recipient = %s AND state = 'leased'""",
        (route.recipient,),
    ).rowcount
    if released:
        notify(conn, [route.recipient])
    return int(row[0])
