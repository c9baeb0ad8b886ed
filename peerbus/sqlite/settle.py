"""Settling a claim: ack, nack, fail or extend it, fenced by its token.

Every statement matches a receipt only while it is `leased` under this claim's token, so
a claim whose lease expired and was re-claimed (after a restart, or by a slow turn) cannot
settle what the newer claim holds; those ids come back in `SettleResult.lost`. An expired
lease that nobody re-claimed can still be acked (the work was done) or failed.

How attempts count: a nack with count=True (the turn failed on its own) adds one to each
id's `attempts`; count=False (the host gives a batch back untouched: halted, stopping,
shutting down) adds nothing, and neither does an expired lease or a restart's release. A
claim finds `attempts >= max_attempts` and dead-letters the row as a backstop; `fail` is
the consumer's own way to give a message up at once, with its reason.

`only` narrows the call to some of the claim's ids; the host uses it to ack, without a
turn, the messages whose ids its turn store already holds after a restart.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Collection

from peerbus.model import Claim, SettleResult, iso
from peerbus.sqlite.busfile import BusFile
from peerbus.sqlite.compat import flush_status
from peerbus.sqlite.receipts import advance_watermark, ids_json, update_contract_status

log = logging.getLogger("peerbus")

# A dead letter's reason is for an operator to read, not a place to store output.
MAX_REASON = 500

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


def _finish_leased(
    conn: sqlite3.Connection,
    bus: BusFile,
    claim: Claim,
    wanted: tuple[int, ...],
    state: str,
    *,
    reason: str | None = None,
) -> SettleResult:
    """Make the claim's leased receipts `state` (done or failed), then update the contract
    status and the watermark. Ids this claim already finished that way count as settled:
    the token stays on a finished receipt, so a second call recognises its own."""
    when = iso(bus.now())
    key = (claim.recipient, claim.token, ids_json(wanted))
    already = [
        int(r[0])
        for r in conn.execute(
            f"SELECT message_id FROM {bus.state}.peerbus_receipts WHERE state = ? AND {_MINE}",
            (state, *key),
        )
    ]
    finished = [
        int(r[0])
        for r in conn.execute(
            f"""UPDATE {bus.state}.peerbus_receipts
                   SET state = ?, completed_at = ?, reason = coalesce(?, reason),
                       lease_until = NULL
                 WHERE state = 'leased' AND {_MINE}
             RETURNING message_id""",
            (state, when, reason, *key),
        ).fetchall()
    ]
    if finished:
        ids = ids_json(finished)
        update_contract_status(conn, bus, claim.recipient, ids, state=state, when=when)
        advance_watermark(conn, bus, claim.recipient)
    for mid in finished if state == "failed" else ():
        log.warning("dead-lettered message %d for %s: %s", mid, claim.recipient, reason)
    return _split(wanted, [*already, *finished])


def ack(bus: BusFile, claim: Claim, *, only: Collection[int] | None = None) -> SettleResult:
    """Mark the claim's messages processed. Call after the consuming turn has committed.

    Acking twice is harmless: ids this claim already acked count as settled.
    """
    wanted = _targets(claim, only)
    if not wanted:
        return SettleResult(())

    result = bus.write(lambda conn: _finish_leased(conn, bus, claim, wanted, "done"))
    flush_status(bus)
    return result


def nack(
    bus: BusFile,
    claim: Claim,
    *,
    delay: float = 0.0,
    only: Collection[int] | None = None,
    count: bool = True,
) -> SettleResult:
    """Give the claim's messages back, claimable again after `delay` seconds.

    `count`: the turn failed on its own, so each id given back has one attempt more toward
    `max_attempts`. Pass False when the batch goes back untouched (the panel halted or is
    stopping, the host shuts down): that says nothing about the messages. The watermark
    never passed them, so they are redelivered even when newer messages were acked meanwhile.
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
                           lease_until = NULL, attempts = attempts + ?
                     WHERE state = 'leased' AND {_MINE}
                 RETURNING message_id""",
                (
                    bus.now() + max(0.0, delay),
                    int(count),
                    claim.recipient,
                    claim.token,
                    ids_json(wanted),
                ),
            ).fetchall()
        ]
        return _split(wanted, back)

    result = bus.write(work)
    if delay <= 0 and result.settled:
        # Claimable again now: wake the recipient's waiters (after the commit). An ending
        # delay changes nothing on disk; the waiter's timeout covers it, as for leases.
        bus.touch([claim.recipient])
    return result


def fail(
    bus: BusFile, claim: Claim, *, reason: str, only: Collection[int] | None = None
) -> SettleResult:
    """Dead-letter the claim's messages now, with `reason` (one line, cut to MAX_REASON).

    For a consumer that knows a message will never go through (it cannot be handled, or
    the turn gave up on it): no more deliveries, no waiting for `max_attempts`. Like a
    claim-time dead letter it updates the contract status (owned mode) and lets the
    watermark pass, and `retry` puts it back. Failing twice is harmless: ids this claim
    already failed count as settled.
    """
    wanted = _targets(claim, only)
    if not wanted:
        return SettleResult(())
    text = " ".join(str(reason).split())[:MAX_REASON] or "given up by its consumer"

    return bus.write(lambda conn: _finish_leased(conn, bus, claim, wanted, "failed", reason=text))


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
