"""The soak's invariants: pure checks over the end state that soak_state.py read.

Each check returns an `Invariant`: its count (0 when it holds), the parts that make up the
count, notes (a fallback used, a part that is n/a) and a few examples. Consumed ids are the
union of the `delivered` table and the `consumed_ids` of complete user rows (the soak sets
window limits that never trim, so the window keeps them all). Which panels there are and
what a consumed message owes is the protocol's (soak_protocol.py: the team, or the ring).
Rows of a table the soak dropped (`TeamState.gone`, soak_recreate.py) that no turn
consumed are gone by that act: noted, not lost, and never waited for.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from soak_protocol import PRODUCER_TEAM, Protocol
from soak_state import PanelStore, TeamState

from panels.host.delivery.feed import OPERATOR

EXAMPLES = 5


@dataclass
class Invariant:
    name: str
    what: str
    count: int = 0
    parts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def add(self, part: str, found: Sequence[object]) -> None:
        self.parts[part] = self.parts.get(part, 0) + len(found)
        self.examples.extend(f"{part}: {f}" for f in found[: EXAMPLES - len(self.examples)])

    def as_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "what": self.what,
            "parts": self.parts,
            "notes": self.notes,
            "examples": self.examples,
        }


def consumers(store: PanelStore) -> dict[int, set[int]]:
    """Message id -> the committed user rows that consumed it (window rows and `delivered`)."""
    found: dict[int, set[int]] = defaultdict(set)
    for row, ids in store.complete.items():
        for ident in ids:
            found[ident].add(row)
    for ident, row in store.delivered or ():
        found[ident].add(row)
    return found


def check_lost(state: TeamState, *, derived: bool, protocol: Protocol = PRODUCER_TEAM) -> Invariant:
    inv = Invariant(
        "lost",
        "messages no committed turn of their recipient consumed, dead letters, failed "
        "outbox entries, and (scripted) derived messages never sent",
    )
    by_panel = {p: consumers(s) for p, s in state.stores.items()}
    lost: set[int] = set()
    gone = 0
    for row in state.rows:
        owner = protocol.owner(row.recipient)
        if owner not in by_panel or row.sender not in (OPERATOR, *protocol.panels):
            continue
        if row.id in by_panel[owner]:
            continue
        if row.id in state.gone:
            gone += 1
        else:
            lost.add(row.id)
            inv.add(f"{protocol.kind(row.sender)} not consumed", [row.id])
    if state.gone:
        inv.notes.append(
            f"{gone} of the {len(state.gone)} rows of dropped tables were not consumed before "
            "their table went: gone by the operator's act, not lost"
        )
    dead = sorted(m for (m, _), s in state.receipts.items() if s == "failed")
    inv.add("dead letters", dead)
    failed = [e.key for s in state.stores.values() for e in s.outbox or () if e.failed]
    inv.add("outbox entries failed", failed)
    missing: list[str] = []
    if derived:
        missing = missing_derived(state, by_panel, protocol)
        inv.add("derived never sent", missing)
    inv.count = len(lost | set(dead)) + len(failed) + len(missing)
    return inv


def missing_derived(
    state: TeamState,
    by_panel: Mapping[str, Mapping[int, set[int]]],
    protocol: Protocol = PRODUCER_TEAM,
) -> list[str]:
    """Every consumed message has the one it owes on the bus (on any table, across a
    recreation): the team's op its forward and a forward its reply, a ring's hop the next."""
    texts = {(r.sender, r.recipient, r.text) for r in state.rows}
    missing = []
    for row in state.rows:
        owner = protocol.owner(row.recipient)
        if owner is None or row.recipient is None or row.id not in by_panel.get(owner, {}):
            continue  # not consumed: already counted as lost
        owed = protocol.owes(row.sender, row.recipient, row.text)
        if owed is not None and owed not in texts:
            missing.append(owed[2])
    return missing


def check_applied_twice(state: TeamState) -> Invariant:
    inv = Invariant(
        "applied twice", "message ids consumed by more than one committed turn of their recipient"
    )
    for panel, store in state.stores.items():
        twice = sorted(i for i, rows in consumers(store).items() if len(rows) > 1)
        inv.add(panel, twice)
        inv.count += len(twice)
        if store.delivered is None:
            inv.notes.append(f"{panel}: no `delivered` table; window rows' consumed_ids only")
    return inv


def check_published_twice(state: TeamState, protocol: Protocol = PRODUCER_TEAM) -> Invariant:
    inv = Invariant(
        "published twice",
        "bus rows of a panel beyond one per text (texts are unique) or beyond its published "
        "outbox entries; outbox entries with more than one bus row, or published with none",
    )
    ids = {r.id for r in state.rows}
    for panel in protocol.panels:
        sent = [r for r in state.rows if r.sender == panel]
        counts = Counter((r.recipient, r.text) for r in sent)
        extra = sum(n - 1 for n in counts.values())
        dup = [f"{t!r} x{n}" for (_, t), n in counts.items() if n > 1]
        store = state.stores.get(panel)
        excess = 0
        if store is not None and store.outbox is not None:
            published = [e for e in store.outbox if e.published]
            excess = max(0, len(sent) - len(published))
            multi, none = [], []
            for entry in published:
                found = {entry.message_id} if entry.message_id is not None else set()
                found |= set((state.sent or {}).get(entry.key, ()))
                found &= ids
                if len(found) > 1:
                    multi.append(entry.key)
                elif not found:
                    none.append(entry.key)
            if state.sent is None and all(e.message_id is None for e in published):
                inv.notes.append(f"{panel}: outbox keys cannot be matched to bus rows (n/a)")
                none = []
            inv.add(f"{panel} outbox key with >1 row", multi)
            inv.add(f"{panel} outbox published without a row", none)
            inv.count += len(multi) + len(none)
        else:
            inv.notes.append(f"{panel}: outbox check n/a (no outbox table)")
        inv.parts[f"{panel} rows repeating a text"] = extra
        inv.examples.extend(dup[: max(0, EXAMPLES - len(inv.examples))])
        inv.parts[f"{panel} rows beyond published outbox entries"] = excess
        inv.count += max(extra, excess)
    if state.sent is None:
        inv.notes.append("bus: no peerbus_sent table")
    return inv


def check_pending(state: TeamState, protocol: Protocol = PRODUCER_TEAM) -> Invariant:
    inv = Invariant(
        "claimed or pending",
        "receipts leased or waiting, rows to a running recipient never claimed, outbox "
        "entries not published, turns in flight",
    )
    claimed = sorted(m for (m, _), s in state.receipts.items() if s in ("leased", "waiting"))
    never = [
        r.id
        for r in state.rows
        if r.recipient in protocol.recipients
        and (r.id, r.recipient) not in state.receipts
        and r.id not in state.gone  # its table's receipts went with it
    ]
    unpublished = [
        e.key
        for s in state.stores.values()
        for e in s.outbox or ()
        if not e.published and not e.failed
    ]
    in_flight = [s.panel for s in state.stores.values() for _ in range(s.in_flight)]
    inv.add("leased or waiting", claimed)
    inv.add("never claimed", never)
    inv.add("outbox not published", unpublished)
    inv.add("user rows in flight", in_flight)
    inv.count = len(claimed) + len(never) + len(unpublished) + len(in_flight)
    unacked = {s.panel: s.unacked for s in state.stores.values() if s.unacked}
    if unacked:
        inv.notes.append(f"delivered rows without acked_at (not counted): {unacked}")
    return inv


def check_interrupted(state: TeamState) -> Invariant:
    inv = Invariant(
        "interrupted copies",
        "input rows left marked interrupted in a window: a killed try is replaced by the turn "
        "that runs its messages again, a failed one is deleted as its messages go back",
    )
    for panel, store in state.stores.items():
        inv.parts[panel] = store.interrupted
        inv.count += store.interrupted
    return inv


def check_integrity(state: TeamState) -> Invariant:
    inv = Invariant("integrity", "files whose PRAGMA integrity_check is not ok")
    bad = [f"{name}: {result}" for name, result in state.integrity.items() if result != "ok"]
    inv.add("files", bad)
    inv.count = len(bad)
    return inv


def check_event_log(state: TeamState) -> Invariant:
    inv = Invariant(
        "event log gaps",
        "committed turns in no turn_committed (nor redelivery_skipped) event of their "
        "panel; host_ready without an earlier host_started of its life",
    )
    logged: dict[str, set[int]] = defaultdict(set)
    started: set[str] = set()
    orphan_ready: list[str] = []
    for event in state.events:
        panel = event.panel or ""
        if event.kind == "turn_committed" and isinstance(event.data.get("user_row"), int):
            logged[panel].add(int(event.data["user_row"]))
        elif event.kind == "redelivery_skipped":
            logged[panel].update(int(t) for t in event.data.get("turns", ()) if isinstance(t, int))
        elif event.kind == "host_started":
            started.add(str(event.data.get("life", "")))
        elif event.kind == "host_ready":
            life = str(event.data.get("life", ""))
            if life and life not in started:
                orphan_ready.append(life)
    since = 0.0
    if state.events and state.events[0].id > 1:
        since = state.events[0].ts
        inv.notes.append("events were pruned: turns older than the oldest event not checked")
    for panel, store in state.stores.items():
        missing = sorted(
            r for r, ts in store.row_ts.items() if ts >= since and r not in logged[panel]
        )
        inv.add(f"{panel} turns not logged", missing)
        inv.count += len(missing)
    inv.add("host_ready without host_started", orphan_ready)
    inv.count += len(orphan_ready)
    if not any(e.data.get("life") for e in state.events if e.kind == "host_started"):
        inv.notes.append("lives are not recorded in host_started events")
    return inv


def check_all(
    state: TeamState, *, derived: bool, protocol: Protocol = PRODUCER_TEAM
) -> list[Invariant]:
    return [
        check_lost(state, derived=derived, protocol=protocol),
        check_applied_twice(state),
        check_published_twice(state, protocol),
        check_pending(state, protocol),
        check_interrupted(state),
        check_integrity(state),
        check_event_log(state),
    ]


def committed_turns(state: TeamState) -> int:
    return sum(len(s.complete) for s in state.stores.values())
