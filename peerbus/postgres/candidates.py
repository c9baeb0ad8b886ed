"""Which rows are a recipient's, as PostgreSQL SQL: shared by claim, inbox and stats.

A recipient's rows are its direct rows plus broadcasts (recipient_role NULL) from its
sender roles (every sender when it gave none), never its own broadcasts, still `pending`
in the contract column. Each arm is its own ORDER BY id LIMIT over the partial index
`returns_pending (recipient_role, id) WHERE status = 'pending'`, and the outer ORDER BY
merges the two streams (a Merge Append), so a claim reads a handful of index entries and
never the done rows. There is no id watermark: sequence values commit out of order, so a
row with a lower id can appear after a higher one was acked; the receipts alone say what
is finished.
"""

from __future__ import annotations

from peerbus.routing import Route

_DIRECT = "r.recipient_role = %(me)s"
_BROADCAST = """r.recipient_role IS NULL AND r.agent_role IS DISTINCT FROM %(me)s
       AND (%(all_senders)s OR r.agent_role = ANY(%(senders)s))"""

# Receipt states that still owe the recipient a delivery or an ack.
OPEN = "d.message_id IS NULL OR d.state IN ('leased', 'waiting')"
# Claimable now: never delivered, a nack whose delay is over, an expired lease, or a lease
# this same claim token already holds (a claim retried after its commit was cut off).
CLAIMABLE = """d.message_id IS NULL
        OR (d.state = 'waiting' AND d.available_at <= %(now)s)
        OR (d.state = 'leased' AND (d.lease_until <= %(now)s OR d.claim_token = %(token)s))"""

CANDIDATE_COLUMNS = """r.id, coalesce(r.agent_role, ''), r.recipient_role, r.task_id,
       CASE WHEN octet_length(r.payload_json) <= %(cap)s THEN r.payload_json END,
       octet_length(r.payload_json), coalesce(r.submitted_at, ''), r.recipient_epoch,
       coalesce(d.attempts, 0)"""


def rows_sql(*, columns: str, receipt: str, limit: str | None, paged: bool = False) -> str:
    """Both arms over returns + this recipient's receipt, merged in id order. Without a
    limit the arms are a plain UNION ALL (for counting). `paged`: only ids past
    %(after)s, so a claim reads its candidates a page at a time."""
    page = " AND r.id > %(after)s" if paged else ""
    arm = f"""SELECT {columns}
      FROM returns AS r
      LEFT JOIN peerbus_receipts AS d ON d.message_id = r.id AND d.recipient = %(me)s
     WHERE r.status = 'pending'{page} AND {{who}} AND ({receipt})"""
    if limit is None:
        return f"{arm.format(who=_DIRECT)}\nUNION ALL\n{arm.format(who=_BROADCAST)}"
    tail = f" ORDER BY 1 LIMIT {limit}"
    return (
        f"({arm.format(who=_DIRECT)}{tail})\nUNION ALL\n({arm.format(who=_BROADCAST)}{tail}){tail}"
    )


def route_params(route: Route) -> dict[str, object]:
    return {
        "me": route.recipient,
        "all_senders": route.senders is None,
        "senders": list(route.senders or ()),
    }
