"""Publishing a panel's outbox: in the order the sends were queued, whichever bus fed their
turns; a send the bus refuses for good is marked failed and the rest go on; a busy bus stops
the round and leaves the rest, in order, for the next one."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from panels.host.delivery.outbox import publish
from panels.hostdb.catalogue import AckSent, MessageSent, SendFailed, Warned
from peerbus import (
    BusBackend,
    InvalidKeyError,
    InvalidRoleError,
    PayloadError,
    PeerbusError,
    open_bus,
)
from peerbus.errors import BusBusyError, PayloadTooLargeError
from runtime.store.async_store import AsyncTurnStore, open_turn_store
from runtime.window.rows import Consumed, NewRow, OutboxDraft, OutboxEntry

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the outbox's logic is the same on either backend


class FlakyBus:
    """The bus backend (peerbus/backend.py) as `publish` uses it: a real SQLite bus whose
    `submit` raises the error set for a payload's text, and which may say it had earlier
    identities at its place (a table made again)."""

    def __init__(self, bus: BusBackend, *, earlier: tuple[str, ...] = ()) -> None:
        self.real = bus
        self.earlier = earlier
        self.refuse: dict[str, PeerbusError] = {}
        self.submits: list[str] = []

    @property
    def options(self) -> Any:
        return self.real.options

    @property
    def identity(self) -> str:
        return self.real.identity

    async def earlier_identities(self) -> tuple[str, ...]:
        return self.earlier

    async def submit(
        self,
        sender: str,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        key: str | None = None,
    ) -> int:
        text = str(payload.get("text"))
        self.submits.append(text)
        if text in self.refuse:
            raise self.refuse[text]
        return await self.real.submit(sender, recipient, payload, topic=topic, key=key)


@dataclass
class Published:
    """The team's loop watch as `publish` tells it (loops/watch.py's `published`)."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def published(self, *args: Any) -> None:
        self.calls.append(args)


@dataclass
class Log:
    events: list[Any] = field(default_factory=list)

    def emit(self, event: Any) -> None:
        self.events.append(event)


@dataclass
class Host:
    bus: FlakyBus
    operator_bus: Any
    log: Log = field(default_factory=Log)
    loops: Published | None = field(default_factory=Published)


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[AsyncTurnStore]:
    async with open_turn_store(tmp_path / "turns.sqlite") as opened:
        yield opened


@pytest.fixture
async def team_bus(tmp_path: Path) -> AsyncIterator[BusBackend]:
    async with open_bus(tmp_path / "team.sqlite") as bus:
        yield bus


@pytest.fixture
async def operator_bus(tmp_path: Path) -> AsyncIterator[BusBackend]:
    async with open_bus(tmp_path / "operator.sqlite") as bus:
        yield bus


Send = tuple[str | None, dict[str, Any], str | None]  # recipient, payload, topic


async def commit(store: AsyncTurnStore, source: str | None, *sends: Send) -> int:
    """A turn fed from `source` (None: unknown) committed with `sends`; its input row id."""
    row = await store.begin_turn(NewRow("user", ({"type": "text", "text": "in"},), 1))
    drafts = [OutboxDraft.new(to, payload, topic) for to, payload, topic in sends]
    consumed = Consumed(source, ()) if source is not None else None
    await store.commit_turn(row, [], consumed=consumed, outbox=drafts)
    return row


def note(text: str, to: str | None = "reader", topic: str | None = None) -> Send:
    return (to, {"text": text}, topic)


def texts(entries: Sequence[OutboxEntry]) -> list[str]:
    return [str(e.payload["text"]) for e in entries]


async def test_sends_go_out_in_queue_order_whichever_bus_fed_their_turn(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend, operator_bus: BusBackend
) -> None:
    bus = FlakyBus(team_bus, earlier=("made-before",))
    host = Host(bus, operator_bus)
    first = await commit(store, operator_bus.identity, note("1"), note("2", to=None))
    second = await commit(store, team_bus.identity, note("3", topic="plan"))
    await commit(store, "another-hosts-bus", note("not ours"))
    third = await commit(store, "made-before", note("4"))
    fourth = await commit(store, None, note("5"))  # an unknown source is in every answer
    fifth = await commit(store, operator_bus.identity, note("6"))

    assert await publish("writer", store, host) == 6

    assert bus.submits == ["1", "2", "3", "4", "5", "6"]  # each once, in queue order
    sent = [e for e in host.log.events if isinstance(e, MessageSent)]
    assert [(e.panel, e.to, e.topic, e.text, e.terminal) for e in sent] == [
        ("writer", "reader", None, "1", False),
        ("writer", "*", None, "2", False),
        ("writer", "reader", "plan", "3", False),
        ("writer", "reader", None, "4", False),
        ("writer", "reader", None, "5", False),
        ("writer", "reader", None, "6", False),
    ]
    rows = [first, first, second, third, fourth, fifth]
    assert [e.outbox for e in sent] == [f"{first}.0", f"{first}.1", f"{second}.0",
                                        f"{third}.0", f"{fourth}.0", f"{fifth}.0"]  # fmt: skip
    on_bus = await team_bus.history(limit=100)
    assert [e.id for e in sent] == sorted(r.id for r in on_bus)
    assert [(r.recipient, r.topic) for r in sorted(on_bus, key=lambda r: r.id)] == [
        ("reader", None), (None, None), ("reader", "plan"), ("reader", None), ("reader", None),
        ("reader", None)]  # fmt: skip
    assert await operator_bus.history(limit=100) == []
    assert host.loops is not None
    assert host.loops.calls == [
        ("writer", e.id, None if e.to == "*" else e.to, {"text": e.text}, row)
        for e, row in zip(sent, rows, strict=True)
    ]
    # What is published is marked so: only the other host's send is left.
    assert texts(await store.outbox_pending()) == ["not ours"]
    marked = {e.label: e.message_id for e in await store.outbox()}
    assert [marked[e.outbox] for e in sent] == [e.id for e in sent]


async def test_without_other_sources_only_the_team_bus_turns_publish(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend
) -> None:
    """The operator's bus is the team's own and the table was never made again."""
    host = Host(FlakyBus(team_bus), team_bus, loops=None)
    await commit(store, team_bus.identity, note("a"))
    await commit(store, "elsewhere", note("b"))
    await commit(store, None, note("c"))
    assert await publish("writer", store, host) == 2
    assert host.bus.submits == ["a", "c"]
    assert texts(await store.outbox_pending()) == ["b"]


REFUSALS: dict[str, PeerbusError] = {
    "too-large": PayloadTooLargeError(size=300_000, limit=262_144),
    "payload": PayloadError("the payload cannot be sent"),
    "role": InvalidRoleError(role="bad name", field="recipient"),
    "key": InvalidKeyError(key="", limit=200),
}


async def test_a_send_refused_for_good_is_marked_failed_and_the_rest_go_on(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend
) -> None:
    bus = FlakyBus(team_bus)
    bus.refuse.update(REFUSALS)
    host = Host(bus, team_bus)
    refused = [note(text, to=None) for text in REFUSALS]
    row = await commit(store, team_bus.identity, note("1"), *refused, note("2"))

    assert await publish("writer", store, host) == 2

    failed = [e for e in host.log.events if isinstance(e, SendFailed)]
    assert failed == [
        SendFailed(panel="writer", to="*", outbox=f"{row}.{n}", reason=str(refusal))
        for n, refusal in enumerate(REFUSALS.values(), start=1)
    ]
    assert [e.text for e in host.log.events if isinstance(e, MessageSent)] == ["1", "2"]
    assert texts(await store.outbox_pending()) == []
    stored = {e.label: e for e in await store.outbox()}
    assert [(stored[e.outbox].failed, stored[e.outbox].message_id) for e in failed] == [
        (str(refusal), None) for refusal in REFUSALS.values()
    ]
    # A second round has nothing left: a failed send is not tried again.
    assert await publish("writer", store, host) == 0
    assert bus.submits == ["1", *REFUSALS, "2"]


async def test_a_busy_bus_stops_the_round_and_the_rest_go_out_next_time_in_order(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend
) -> None:
    bus = FlakyBus(team_bus)
    busy = BusBusyError(path="team.sqlite", waited=60.0, attempts=9)
    bus.refuse["2"] = busy
    host = Host(bus, team_bus)
    row = await commit(store, team_bus.identity, note("1"), note("2"), note("3"))

    assert await publish("writer", store, host) == 1

    assert bus.submits == ["1", "2"]  # nothing after the busy one is tried
    assert [e for e in host.log.events if isinstance(e, Warned)] == [
        Warned(panel="writer", message=f"outbox entry {row}.1 not published yet ({busy}); "
                                       "it is tried again after the next turn")]  # fmt: skip
    assert not [e for e in host.log.events if isinstance(e, SendFailed)]
    assert texts(await store.outbox_pending()) == ["2", "3"]

    del bus.refuse["2"]
    assert await publish("writer", store, host) == 2
    assert bus.submits == ["1", "2", "2", "3"]
    assert [e.text for e in host.log.events if isinstance(e, MessageSent)] == ["1", "2", "3"]


async def test_a_send_published_again_after_a_crash_gets_the_id_of_its_first_copy(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend
) -> None:
    """The host died between the bus write and the store's mark: the key finds the first."""
    host = Host(FlakyBus(team_bus), team_bus)
    await commit(store, team_bus.identity, note("once"))
    [entry] = await store.outbox_pending()
    first = await team_bus.submit("writer", "reader", entry.payload, key=entry.key)

    assert await publish("writer", store, host) == 1

    [sent] = [e for e in host.log.events if isinstance(e, MessageSent)]
    assert sent.id == first
    assert len(await team_bus.history(limit=10)) == 1


async def test_what_the_log_says_was_published(
    anyio_backend: str, store: AsyncTurnStore, team_bus: BusBackend
) -> None:
    """An ack (one answering a message id) is logged as such; anything else as a message,
    its text cut to a preview."""
    host = Host(FlakyBus(team_bus), team_bus)
    payloads: list[dict[str, Any]] = [
        {"type": "ack", "ack_of": 7, "text": "got it"},
        {"type": "ack", "ack_of": "7", "text": "got it"},
        {"type": "note", "ack_of": 7, "text": "x" * 200},
        {"text": ["not", "a", "string"]},
    ]
    row = await commit(store, team_bus.identity, *(("reader", p, "t") for p in payloads))
    assert await publish("writer", store, host) == 4
    ids = sorted(r.id for r in await team_bus.history(limit=10))

    def said(n: int, text: str) -> MessageSent:
        return MessageSent(panel="writer", to="reader", id=ids[n], topic="t", terminal=False,
                           text=text, outbox=f"{row}.{n}")  # fmt: skip

    assert host.log.events == [
        AckSent(panel="writer", to="reader", ack_of=7, id=ids[0]),
        said(1, "got it"),
        said(2, "x" * 160),
        said(3, ""),
    ]
