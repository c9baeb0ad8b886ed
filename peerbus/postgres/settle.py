"""Settling a claim on PostgreSQL: ack, nack, fail or extend it, fenced by its token.

The rules are the SQLite backend's (settle.py there): every statement matches a receipt
only while it is `leased` under this claim's token, so a newer claim's messages come back
as `lost`; an expired lease nobody re-claimed can still be acked or failed; `count` says
whether a nack adds an attempt.

Each of these is safe to run twice (pool.py retries a transaction whose COMMIT was cut
off): a receipt this token already finished that way, or already gave back, counts as
settled, so the retry reports what the first run did. For that a nacked receipt keeps
its token while `waiting`; the next claim replaces it.

Broadcast closure (the contract `status` of a broadcast turns `done` once every registered
recipient that takes it is finished with it) runs after the commit, in a statement of its
own: two recipients acking one broadcast at once each check after their own commit, so the
later check sees both receipts. Inside the transaction neither would see the other's.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence

from peerbus.model import Claim, SettleResult
from peerbus.postgres.pool import Conn

log = logging.getLogger("peerbus")

# A dead letter's reason is for an operator to read, not a place to store output.
MAX_REASON = 500

_MINE = "recipient = %(me)s AND claim_token = %(token)s AND message_id = ANY(%(ids)s)"


def targets(claim: Claim, only: Collection[int] | None) -> tuple[int, ...]:
    if only is None:
        return claim.ids
    wanted = set(only)
    return tuple(i for i in claim.ids if i in wanted)


def split(wanted: tuple[int, ...], settled: Collection[int]) -> SettleResult:
    done = set(settled)
    return SettleResult(
        settled=tuple(i for i in wanted if i in done),
        lost=tuple(i for i in wanted if i not in done),
    )


def finish_receipts(
    conn: Conn,
    recipient: str,
    finished: Sequence[tuple[int, str | None]],
    state: str,
    when: str,
    *,
    noise: bool = False,
) -> None:
    """Make receipts terminal (done / failed with a reason) whatever they were, and the
    contract status of the direct rows with them (claim-time noise and dead letters)."""
    conn.cursor().executemany(
        """INSERT INTO peerbus_receipts
               (message_id, recipient, state, completed_at, reason, noise)
           VALUES (%s, %s, %s, %s, %s, %s)
           ON CONFLICT (message_id, recipient) DO UPDATE SET
               state = excluded.state, completed_at = excluded.completed_at,
               reason = excluded.reason, noise = excluded.noise,
               claim_token = NULL, lease_until = NULL""",
        [(mid, recipient, state, when, reason, noise) for mid, reason in finished],
    )
    direct_status(conn, recipient, [mid for mid, _ in finished], state, when)


def direct_status(conn: Conn, recipient: str, ids: Sequence[int], state: str, when: str) -> None:
    """A direct row's contract status follows its one receipt."""
    conn.execute(
        """UPDATE returns SET status = %s, completed_at = %s
            WHERE id = ANY(%s) AND recipient_role = %s AND status = 'pending'""",
        (state, when, list(ids), recipient),
    )


def finish_leased(
    conn: Conn, claim: Claim, wanted: tuple[int, ...], state: str, when: str, reason: str | None
) -> tuple[SettleResult, list[int]]:
    """Ack (done) or fail the claim's leased receipts; returns the result and the ids this
    run finished (for broadcast closure after the commit)."""
    # One statement: the receipts this run finishes, the direct rows' status with them, and
    # those this token had finished that way before (read from the statement's snapshot,
    # where the ones finished now were still leased).
    rows = conn.execute(
        f"""WITH finished AS (
                UPDATE peerbus_receipts
                   SET state = %(state)s, completed_at = %(when)s,
                       reason = coalesce(%(reason)s, reason), lease_until = NULL
                 WHERE state = 'leased' AND {_MINE}
             RETURNING message_id),
            status AS (
                UPDATE returns SET status = %(state)s, completed_at = %(when)s
                 WHERE id = ANY(ARRAY(SELECT message_id FROM finished))
                   AND recipient_role = %(me)s AND status = 'pending')
            SELECT message_id, true FROM finished
            UNION ALL
            SELECT message_id, false FROM peerbus_receipts
             WHERE state = %(state)s AND {_MINE}""",
        {
            "me": claim.recipient, "token": claim.token, "ids": list(wanted),
            "state": state, "when": when, "reason": reason,
        },
    ).fetchall()  # fmt: skip
    finished = [int(r[0]) for r in rows if r[1]]
    return split(wanted, [int(r[0]) for r in rows]), finished


def give_back(
    conn: Conn, claim: Claim, wanted: tuple[int, ...], available_at: float, count: bool
) -> SettleResult:
    """Nack: the leased receipts go back to `waiting` (the token stays, see above)."""
    rows = conn.execute(
        f"""WITH back AS (
                UPDATE peerbus_receipts
                   SET state = 'waiting', available_at = %(at)s, lease_until = NULL,
                       attempts = attempts + %(add)s
                 WHERE state = 'leased' AND {_MINE}
             RETURNING message_id)
            SELECT message_id FROM back
            UNION ALL
            SELECT message_id FROM peerbus_receipts WHERE state = 'waiting' AND {_MINE}""",
        {
            "me": claim.recipient, "token": claim.token, "ids": list(wanted),
            "at": available_at, "add": int(count),
        },
    ).fetchall()  # fmt: skip
    return split(wanted, [int(r[0]) for r in rows])


def extend_leases(conn: Conn, claim: Claim, wanted: tuple[int, ...], until: float) -> SettleResult:
    kept = [
        int(r[0])
        for r in conn.execute(
            f"""UPDATE peerbus_receipts SET lease_until = %(until)s
                 WHERE state = 'leased' AND {_MINE}
             RETURNING message_id""",
            {"me": claim.recipient, "token": claim.token, "ids": list(wanted), "until": until},
        )
    ]
    result = split(wanted, kept)
    return SettleResult(result.settled, result.lost, until)


def close_broadcasts(conn: Conn, ids: Sequence[int], when: str) -> None:
    """Mark broadcasts `done` once no registered recipient that takes them still owes one.
    Run after the commit that finished receipts of `ids` (see the module docstring)."""
    conn.execute(
        """UPDATE returns AS r SET status = 'done', completed_at = %s
            WHERE r.id = ANY(%s) AND r.recipient_role IS NULL AND r.status = 'pending'
              AND NOT EXISTS (
                SELECT 1 FROM peerbus_recipients AS p
                 WHERE p.recipient IS DISTINCT FROM r.agent_role
                   AND (p.senders_json IS NULL OR p.senders_json::jsonb ? r.agent_role)
                   AND NOT EXISTS (
                     SELECT 1 FROM peerbus_receipts AS d
                      WHERE d.message_id = r.id AND d.recipient = p.recipient
                        AND d.state IN ('done', 'failed')))""",
        (when, list(ids)),
    )
