"""Settling a claim: ack, nack or extend it, fenced by its token.

Every statement matches a receipt only while it is `leased` under this claim's token, so
a claim whose lease expired and was re-claimed (after a restart, or by a slow turn) cannot
ack, nack or extend what the newer claim holds; those ids come back in `SettleResult.lost`.
An expired lease that nobody re-claimed can still be acked: the work was done.

`only` narrows the call to some of the claim's ids; the host uses it to ack, without a
turn, the messages whose ids its turn store already holds after a restart.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection

from peerbus.busfile import BusFile
from peerbus.compat import flush_status
from peerbus.model import Claim, SettleResult
from peerbus.receipts import advance_watermark, ids_json, iso, update_contract_status

_MINE = """recipient = ? AND claim_token = ?
           AND message_id IN (SELECT value FROM json_each(?))"""


def _targets(claim: Claim, only: Collection[int] | None) -> tuple[int, ...]:
    if only is None:
        return claim.ids
    wanted = set(only)
    return tuple(i for i in claim.ids if i in wanted)


def _split(wanted: tuple[int, ...], settled: Collection[int]) -> SettleResult:
    done = set(settled)
    return SettleResult(
        settled=tuple(i for i in wanted if i in done),
        lost=tuple(i for i in wanted if i not in done),
    )


def ack(bus: BusFile, claim: Claim, *, only: Collection[int] | None = None) -> SettleResult:
    """Mark the claim's messages processed. Call after the consuming turn has committed.

    Acking twice is harmless: ids this claim already acked count as settled.
    """
    wanted = _targets(claim, only)
    if not wanted:
        return SettleResult(())

    def work(conn: sqlite3.Connection) -> SettleResult:
        now = bus.now()
        key = (claim.recipient, claim.token, ids_json(wanted))
        already = [
            int(r[0])
            for r in conn.execute(
                f"SELECT message_id FROM {bus.state}.peerbus_receipts "
                f"WHERE state = 'done' AND {_MINE}",
                key,
            )
        ]
        acked = [
            int(r[0])
            for r in conn.execute(
                f"""UPDATE {bus.state}.peerbus_receipts
                       SET state = 'done', completed_at = ?, lease_until = NULL
                     WHERE state = 'leased' AND {_MINE}
                 RETURNING message_id""",
                (iso(now), *key),
            ).fetchall()
        ]
        if acked:
            update_contract_status(
                conn, bus, claim.recipient, ids_json(acked), state="done", when=iso(now)
            )
            advance_watermark(conn, bus, claim.recipient)
        return _split(wanted, [*already, *acked])

    result = bus.write(work)
    flush_status(bus)
    return result


def nack(
    bus: BusFile, claim: Claim, *, delay: float = 0.0, only: Collection[int] | None = None
) -> SettleResult:
    """Give the claim's messages back, claimable again after `delay` seconds.

    The delivery still counts toward `max_attempts`. The watermark never passed them, so
    they are redelivered even when newer messages were acked meanwhile.
    """
    wanted = _targets(claim, only)
    if not wanted:
        return SettleResult(())

    def work(conn: sqlite3.Connection) -> SettleResult:
        back = [
            int(r[0])
            for r in conn.execute(
                f"""UPDATE {bus.state}.peerbus_receipts
                       SET state = 'waiting', available_at = ?, claim_token = NULL,
                           lease_until = NULL
                     WHERE state = 'leased' AND {_MINE}
                 RETURNING message_id""",
                (bus.now() + max(0.0, delay), claim.recipient, claim.token, ids_json(wanted)),
            ).fetchall()
        ]
        return _split(wanted, back)

    return bus.write(work)


def extend(
    bus: BusFile, claim: Claim, *, lease: float, only: Collection[int] | None = None
) -> SettleResult:
    """Push the lease of the messages this claim still holds to now + `lease` seconds."""
    wanted = _targets(claim, only)
    until = bus.now() + lease
    if not wanted:
        return SettleResult((), lease_until=until)

    def work(conn: sqlite3.Connection) -> SettleResult:
        kept = [
            int(r[0])
            for r in conn.execute(
                f"""UPDATE {bus.state}.peerbus_receipts SET lease_until = ?
                     WHERE state = 'leased' AND {_MINE}
                 RETURNING message_id""",
                (until, claim.recipient, claim.token, ids_json(wanted)),
            ).fetchall()
        ]
        result = _split(wanted, kept)
        return SettleResult(result.settled, result.lost, until)

    return bus.write(work)
