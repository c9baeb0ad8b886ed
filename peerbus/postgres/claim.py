"""Claiming a batch on PostgreSQL: lease a recipient's next messages, ack noise, dead-letter
bad rows.

The shape, and why it is correct. A claim transaction first locks the recipient's own row
in `peerbus_recipients` with `FOR UPDATE SKIP LOCKED`, then reads its candidates in id
order, plans with the pure `routing.plan_claim`, and writes receipts.
- Two claims of the same recipient never hold one message: the second cannot take the
  recipient's row while the first's transaction runs, and SKIP LOCKED makes it return an
  empty claim at once rather than wait. Once the first has committed, its leases are in
  `peerbus_receipts` and the candidate query skips leased rows, so the next claim reads
  past them. Its snapshot is taken after it got the lock (READ COMMITTED: each statement
  sees what committed before it started), so it always sees the previous claim's leases.
- Claims of different recipients never wait on each other: each locks only its own
  recipient row, and the message rows themselves are never locked (a broadcast's row is
  shared by every recipient; its per-recipient state lives in the receipt keyed by
  (message, recipient)). So a broadcast is claimed by every recipient in parallel.
- Id order per recipient holds without a watermark: every claim reads from the lowest
  claimable id, so a row that commits late (a sequence value handed out before a higher
  one that committed first) is still found on the next claim.
The read is bounded (SCAN_CAP rows per transaction), so a burst of noise is worked off in
short transactions until something is delivered or nothing is left. It is paged: the
first page is the batch size (plus one), later ones grow fourfold, and the planner pulls
them lazily, so a claim of one message reads a row or two, not SCAN_CAP of them.

A claim keeps its token across retries (pool.py runs a transaction again when the
connection drops), and rows already leased under that token count as claimable: if the
cut-off commit went through, the retry takes the same rows again instead of losing them
until their lease expires (its delivery count does not go up twice). Noise and dead
letters committed by the lost attempt are not reported again by the retry.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from peerbus.model import BusOptions, iso
from peerbus.postgres.candidates import CANDIDATE_COLUMNS, CLAIMABLE, route_params, rows_sql
from peerbus.postgres.pool import Conn
from peerbus.postgres.settle import finish_receipts
from peerbus.routing import Budget, Candidate, Plan, Route, plan_claim

log = logging.getLogger("peerbus")

SCAN_CAP = 1000


@dataclass(frozen=True)
class Step:
    plan: Plan
    epoch: int
    more: bool
    busy: bool = False  # another claim of this recipient holds its row right now
    # Broadcasts this step finished (noise, dead letters): their closure is checked after
    # the commit (settle.close_broadcasts).
    broadcasts: tuple[int, ...] = ()


def claim_step(
    conn: Conn,
    *,
    route: Route,
    budget: Budget,
    token: str,
    lease: float,
    now: float,
    options: BusOptions,
) -> Step:
    """One claim transaction (the caller opened it)."""
    when = iso(now)
    # Lock the recipient's row, skipping it if another claim holds it, and stamp it: one
    # statement. No row: the recipient is new (insert it, locked as ours) or busy.
    row = conn.execute(
        """UPDATE peerbus_recipients SET senders_json = %(s)s, last_claim_at = %(w)s
            WHERE recipient = (SELECT recipient FROM peerbus_recipients
                                WHERE recipient = %(r)s FOR UPDATE SKIP LOCKED)
        RETURNING epoch""",
        {"r": route.recipient, "s": route.senders_json, "w": when},
    ).fetchone()
    if row is None:
        row = conn.execute(
            """INSERT INTO peerbus_recipients
                   (recipient, epoch, senders_json, registered_at, last_claim_at)
               VALUES (%s, 1, %s, %s, %s) ON CONFLICT (recipient) DO NOTHING
               RETURNING epoch""",
            (route.recipient, route.senders_json, when, when),
        ).fetchone()
    if row is None:
        return Step(Plan(), epoch_of(conn, route.recipient), more=False, busy=True)
    epoch = int(row[0])
    params: dict[str, Any] = {
        **route_params(route),
        "now": now,
        "token": token,
        "cap": options.max_payload_bytes,
    }
    rows: list[tuple[Any, ...]] = []
    pages = _pages(conn, params, first=budget.max_messages + 1, into=rows)
    plan = plan_claim(_candidates(pages), epoch=epoch, budget=budget, options=options)
    if plan.deliver:
        # A claim counts a delivery, not an attempt (routing.py); a retry of this same
        # claim re-takes its own leases without counting them again.
        conn.cursor().executemany(
            """INSERT INTO peerbus_receipts AS d
                   (message_id, recipient, state, claim_token, lease_until, deliveries, epoch)
               VALUES (%s, %s, 'leased', %s, %s, 1, %s)
               ON CONFLICT (message_id, recipient) DO UPDATE SET
                   state = 'leased', claim_token = excluded.claim_token,
                   lease_until = excluded.lease_until, epoch = excluded.epoch,
                   deliveries = d.deliveries + CASE
                       WHEN d.state = 'leased' AND d.claim_token = excluded.claim_token
                       THEN 0 ELSE 1 END""",
            [(m.id, route.recipient, token, now + lease, epoch) for m in plan.deliver],
        )
    if plan.noise:
        finish_receipts(
            conn, route.recipient, [(i, None) for i, _ in plan.noise], "done", when, noise=True
        )
        conn.execute(
            """UPDATE peerbus_recipients SET noise_acked = noise_acked + %s
                WHERE recipient = %s""",
            (len(plan.noise), route.recipient),
        )
        log.info(
            "auto-acked %d protocol-noise message(s) for %s: %s",
            len(plan.noise),
            route.recipient,
            ", ".join(f"{i} ({t})" for i, t in plan.noise),
        )
    if plan.failed:
        finish_receipts(conn, route.recipient, plan.failed, "failed", when)
        for mid, reason in plan.failed:
            log.warning("dead-lettered message %d for %s: %s", mid, route.recipient, reason)
    shared = {int(r[0]) for r in rows if r[2] is None}
    finished = [i for i, _ in plan.noise] + [i for i, _ in plan.failed]
    return Step(
        plan,
        epoch,
        more=not plan.full and plan.examined >= SCAN_CAP,
        broadcasts=tuple(i for i in finished if i in shared),
    )


def epoch_of(conn: Conn, recipient: str) -> int:
    row = conn.execute(
        "SELECT epoch FROM peerbus_recipients WHERE recipient = %s", (recipient,)
    ).fetchone()
    return 1 if row is None else int(row[0])


PAGE_SQL = rows_sql(columns=CANDIDATE_COLUMNS, receipt=CLAIMABLE, limit="%(limit)s", paged=True)


def _pages(
    conn: Conn, params: dict[str, Any], *, first: int, into: list[tuple[Any, ...]]
) -> Iterator[tuple[Any, ...]]:
    """The claimable rows in id order, read a page at a time as they are pulled, no more
    than SCAN_CAP in all; each one read is also kept in `into`."""
    after, size = 0, max(1, first)
    while len(into) < SCAN_CAP:
        size = min(size, SCAN_CAP - len(into))
        page = conn.execute(PAGE_SQL, {**params, "after": after, "limit": size}).fetchall()
        into.extend(page)
        yield from page
        if len(page) < size:
            return
        after, size = int(page[-1][0]), size * 4


def _candidates(rows: Iterable[tuple[Any, ...]]) -> Iterator[Candidate]:
    for row in rows:
        yield Candidate(
            id=int(row[0]),
            sender=str(row[1]),
            recipient=None if row[2] is None else str(row[2]),
            topic=None if row[3] is None else str(row[3]),
            payload_json=None if row[4] is None else str(row[4]),
            nbytes=None if row[5] is None else int(row[5]),
            submitted_at=str(row[6]),
            recipient_epoch=None if row[7] is None else int(row[7]),
            attempts=int(row[8]),
        )
