"""Two hosts, one PostgreSQL bus: the end state, read, and the invariants over it.

The bus is read only through the `BusBackend` protocol (`export_dump`, `stats`, `inbox`),
the hosts' own SQLite files read-only (soak_state.py). The soak's checks (soak_checks.py)
then run over the whole team, both hosts' stores together, plus what only this run has:
every op of the dispatcher is followed through (op, task, done: each on the bus once and
consumed by its recipient), and the bus itself, asked through the protocol, has nothing
waiting, leased or failed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from multihost_team import DISPATCHER, HostDir
from soak_checks import (
    Invariant,
    check_applied_twice,
    check_event_log,
    check_integrity,
    check_pending,
    check_published_twice,
    consumers,
)
from soak_driver import ENGINEERS, PRODUCER, engineer_for, forward_text, reply_text
from soak_state import (
    BusRow,
    Event,
    PanelStore,
    TeamState,
    integrity,
    payload_text,
    read_events,
    read_store,
)

from peerbus import BusBackend, BusDump, BusStats, Pending

RECIPIENTS = (PRODUCER, *ENGINEERS)


@dataclass(frozen=True)
class BusEnd:
    """The shared bus at the end, as the protocol shows it."""

    dump: BusDump
    stats: BusStats
    inboxes: Mapping[str, Sequence[Pending]]  # recipient -> messages still waiting for it


async def read_bus_end(bus: BusBackend) -> BusEnd:
    inboxes = {r: await bus.inbox(r) for r in RECIPIENTS}
    return BusEnd(await bus.export_dump(), await bus.stats(), inboxes)


def bus_rows(dump: BusDump) -> tuple[BusRow, ...]:
    return tuple(
        BusRow(r.id, str(r.agent_role), r.recipient_role, payload_text(r.payload_json))
        for r in sorted(dump.rows, key=lambda r: r.id)
    )


def host_state(bus: BusEnd, hosts: Sequence[HostDir]) -> TeamState:
    """The soak's TeamState over `hosts` (their stores, events and files) and the bus."""
    receipts = {(r.message_id, r.recipient): r.state for r in bus.dump.receipts}
    grouped: dict[str, list[int]] = defaultdict(list)
    for key in bus.dump.sent:
        grouped[key.key].append(key.message_id)
    stores: dict[str, PanelStore] = {}
    events: list[Event] = []
    files: dict[str, Path] = {}
    for host in hosts:
        for panel, path in host.turns().items():
            stores[panel] = read_store(panel, path)
            files[f"host {host.name} {panel}/turns.sqlite"] = path
        events.extend(read_events(host.team.hostdb_path))
        files[f"host {host.name} host.sqlite"] = host.team.hostdb_path
    checked = {name: integrity(path) for name, path in files.items()}
    sent = {k: tuple(v) for k, v in grouped.items()}
    return TeamState(bus_rows(bus.dump), receipts, sent, stores, tuple(events), checked)


def check_every_op(state: TeamState, ops: int) -> Invariant:
    """Each op n: `op-n` (dispatcher to producer), `task op-n` (producer to its engineer)
    and `done op-n` (engineer to producer) are on the bus and every row of them was
    consumed by a committed turn of its recipient; no receipt failed."""
    inv = Invariant(
        "lost",
        "ops whose op, task or done row is missing from the bus or was consumed by no "
        "committed turn of its recipient; dead letters; outbox entries that failed",
    )
    by_panel = {p: consumers(s) for p, s in state.stores.items()}
    rows: dict[tuple[str, str | None, str], list[int]] = defaultdict(list)
    for row in state.rows:
        rows[(row.sender, row.recipient, row.text)].append(row.id)
    for n in range(ops):
        engineer = engineer_for(n)
        legs = (
            ("op", (DISPATCHER, PRODUCER, f"op-{n}")),
            ("task", (PRODUCER, engineer, forward_text(n))),
            ("done", (engineer, PRODUCER, reply_text(n))),
        )
        for kind, (sender, recipient, text) in legs:
            ids = rows.get((sender, recipient, text), [])
            if not ids:
                inv.add(f"{kind} never on the bus", [text])
                continue
            eaten = by_panel.get(recipient, {})
            inv.add(f"{kind} not consumed by {recipient}", [i for i in ids if i not in eaten])
    dead = sorted(m for (m, _), s in state.receipts.items() if s == "failed")
    inv.add("dead letters", dead)
    failed = [e.key for s in state.stores.values() for e in s.outbox or () if e.failed]
    inv.add("outbox entries failed", failed)
    inv.count = sum(inv.parts.values())
    return inv


def check_bus_idle(bus: BusEnd) -> Invariant:
    """What the protocol itself says is left: stats per recipient and the inboxes."""
    inv = Invariant(
        "bus not idle",
        "per the protocol: messages waiting, leased or failed in stats(); any inbox() entry",
    )
    for r in bus.stats.recipients:
        left = [f"{r.recipient}: {what}" for what, n in (
            ("waiting", r.waiting), ("leased", r.leased), ("failed", r.failed)) for _ in range(n)
        ]  # fmt: skip
        inv.add(f"{r.recipient} stats", left)
    for recipient, pending in bus.inboxes.items():
        inv.add(f"{recipient} inbox", [f"id {p.id} ({p.state})" for p in pending])
    inv.count = sum(inv.parts.values())
    known = {r.recipient for r in bus.stats.recipients}
    missing = [r for r in RECIPIENTS if r not in known]
    if missing:
        inv.notes.append(f"stats() names no recipient {missing} (never registered?)")
        inv.count += len(missing)
    return inv


def check_event_logs(bus: BusEnd, hosts: Sequence[HostDir]) -> Invariant:
    """The soak's event-log check, per host (each host has its own host.sqlite)."""
    inv = Invariant("event log gaps", "per host: committed turns not in its event log")
    for host in hosts:
        one = check_event_log(host_state(bus, [host]))
        for part, count in one.parts.items():
            inv.parts[f"host {host.name} {part}"] = count
        inv.examples.extend(f"host {host.name} {e}" for e in one.examples)
        inv.notes.extend(f"host {host.name}: {n}" for n in one.notes)
        inv.count += one.count
    return inv


def check_multihost(bus: BusEnd, hosts: Sequence[HostDir], ops: int) -> list[Invariant]:
    state = host_state(bus, hosts)
    return [
        check_every_op(state, ops),
        check_applied_twice(state),
        check_published_twice(state),
        check_pending(state),
        check_bus_idle(bus),
        check_integrity(state),
        check_event_logs(bus, hosts),
    ]


def describe(invariants: Sequence[Invariant]) -> str:
    """The invariants that do not hold, one line each, with their parts and examples."""
    lines = [
        f"{i.name}: {i.count} ({i.what}); parts "
        f"{ {k: v for k, v in i.parts.items() if v} }; e.g. {i.examples[:5]}; notes {i.notes}"
        for i in invariants
        if i.count
    ]
    return "\n".join(lines) or "every invariant holds"
