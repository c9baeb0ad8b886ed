"""Queueing a turn's sends: what is refused before the outbox (and in which words), the host's
send limits as each send meets them (a named send counts under its name, a broadcast under
'*'), and what a send refused for the turn's limit leaves owed to a follow-up turn."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

import pytest

from panels.errors import PanelsError
from panels.host.control.dispatch import Dispatcher
from panels.host.delivery.followup import MAX_ROUNDS, UNSENT_META, Owed, Unsent, encode
from panels.host.delivery.outbox import NotQueuedError, TurnOutbox
from panels.host.delivery.sendlimit import SendLimiter, SendRefused
from panels.host.delivery.tickets import Tickets
from panels.host.services import TurnContext
from panels.hostdb import verbs
from panels.hostdb.catalogue import MessageQueued, Warned
from panels.team import SendLimits
from peerbus import BusOptions, Message
from peerbus.errors import (
    InvalidRoleError,
    PayloadEncodingError,
    PayloadNotObjectError,
    PayloadTooLargeError,
)
from runtime.turn.sends import TurnSends

ROW = 7  # the input row of the turn in flight: labels are "7.<position>"


@dataclass
class Log:
    events: list[Any] = field(default_factory=list)

    def emit(self, event: Any) -> None:
        self.events.append(event)


class Session:
    """What a turn's outbox asks of a Session (runtime/turn/session.py): its turn's sends, the
    real TurnSends, opened for row ROW unless the turn is being stored."""

    def __init__(self, *, open_: bool = True) -> None:
        self.sends = TurnSends()
        if open_:
            self.sends.open(ROW)

    def queue_send(
        self, recipient: str | None, payload: dict[str, Any], topic: str | None = None
    ) -> str:
        return self.sends.queue(recipient, payload, topic)

    def note_commit(self, key: str, value: str) -> None:
        self.sends.note(key, value)


@dataclass
class Runner:
    """One turn of the panel "writer" as run_turn sets it up: its TurnOutbox over a bus whose
    payloads may be 200 bytes and 3 levels deep."""

    session: Session = field(default_factory=Session)
    limits: SendLimits = field(default_factory=SendLimits)
    seen: OrderedDict[int, Message] = field(default_factory=OrderedDict)
    log: Log = field(default_factory=Log)

    def __post_init__(self) -> None:
        self.turn = TurnContext(number=1, delivered={}, started_at=0.0)
        options = BusOptions(max_payload_bytes=200, max_depth=3)
        self.outbox = TurnOutbox("writer", self.turn, self.session,
                                 SendLimiter(self.limits, clock=lambda: 0.0), options,
                                 self.seen, self.log.emit)  # fmt: skip

    @property
    def notes(self) -> dict[str, str]:
        return self.session.sends.notes

    def next_turn(self) -> None:
        """The panel's next turn: a new outbox, the same limiter."""
        self.turn = TurnContext(number=self.turn.number + 1, delivered={}, started_at=0.0)
        self.outbox = replace(self.outbox, turn=self.turn)


def queue(runner: Runner, recipient: str | None, payload: Any, **kwargs: Any) -> str:
    return runner.outbox.queue(recipient, payload, **kwargs)


def refusal(runner: Runner, recipient: str | None, payload: Any) -> str:
    with pytest.raises(NotQueuedError) as caught:
        queue(runner, recipient, payload)
    return str(caught.value)


NAN = float("nan")


def json_error(value: object) -> str:
    """What JSON says of a value it cannot encode, in this Python's words."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return str(exc)
    raise AssertionError(f"{value!r} encodes")


def seen(*messages: tuple[str, Any]) -> OrderedDict[int, Message]:
    return OrderedDict(
        (i, Message(i, sender, "writer", None, {"text": text}, "now"))
        for i, (sender, text) in enumerate(messages, start=1)
    )


def test_sends_get_their_outbox_ids_in_order_and_the_log_hears_of_each() -> None:
    runner = Runner()
    assert queue(runner, "reader", {"text": "x" * 170}, topic="plan", terminal=True) == "7.0"
    assert queue(runner, None, {"type": "ack", "ack_of": 3}) == "7.1"
    assert queue(runner, "reader", {"text": "more"}, terminal=False) == "7.2"
    assert (runner.turn.sends, runner.turn.terminal) == (3, True)  # terminal once is enough
    assert runner.log.events == [
        MessageQueued(panel="writer", to="reader", outbox="7.0", topic="plan", terminal=True,
                      text="x" * 160),
        MessageQueued(panel="writer", to="*", outbox="7.1", topic=None, terminal=False, text=""),
        MessageQueued(panel="writer", to="reader", outbox="7.2", topic=None, terminal=False,
                      text="more"),
    ]  # fmt: skip
    assert [(d.recipient, d.payload, d.topic) for d in runner.session.sends.close()] == [
        ("reader", {"text": "x" * 170}, "plan"),
        (None, {"type": "ack", "ack_of": 3}, None),
        ("reader", {"text": "more"}, None),
    ]


def test_the_draft_is_the_checked_copy_not_the_callers_dict() -> None:
    runner = Runner()
    payload: dict[str, Any] = {"items": (1, 2), "nested": {"a": 1}, 3: "three"}
    queue(runner, None, payload, topic="t")
    payload["nested"]["a"] = 2
    (draft,) = runner.session.sends.close()
    assert draft.payload == {"items": [1, 2], "nested": {"a": 1}, "3": "three"}
    assert (draft.recipient, draft.topic) == (None, "t")


def test_a_turn_not_terminal_stays_so() -> None:
    runner = Runner()
    queue(runner, "reader", {"text": "a"})
    assert runner.turn.terminal is False


@pytest.mark.parametrize(
    ("runner", "recipient", "payload", "message"),
    [
        (Runner(), "reader@operator", {"text": "a"},
         "'reader@operator' carries the operator's input to a panel; only the operator writes "
         "there. Send to the panel by its name"),
        (Runner(), "bad name", {"text": "a"},
         str(InvalidRoleError(role="bad name", field="recipient"))),
        (Runner(), "reader", {"text": "x" * 200},
         str(PayloadTooLargeError(size=len(json.dumps({"text": "x" * 200}).replace(" ", "")),
                                  limit=200))),
        (Runner(), None, {"a": {"b": {"c": {"d": 1}}}},
         str(PayloadEncodingError("it nests deeper than 3 levels"))),
        (Runner(), "reader", ["not", "an", "object"], str(PayloadNotObjectError(kind="array"))),
        (Runner(), "reader", {"x": float("nan")}, str(PayloadEncodingError(json_error(NAN)))),
        (Runner(), "reader", {"x": {1, 2}}, str(PayloadEncodingError(json_error({1, 2})))),
        (Runner(session=Session(open_=False)), "reader", {"text": "a"},
         "queue_send is only valid while a turn is in flight (from a tool the turn calls); "
         "outside a turn there is no commit to send with"),
    ],
    ids=["operator-route", "bad-recipient", "too-large", "too-deep", "not-an-object", "nan",
         "not-json", "turn-being-stored"],
)  # fmt: skip
def test_a_send_that_cannot_be_queued_says_why(
    runner: Runner, recipient: str | None, payload: Any, message: str
) -> None:
    assert refusal(runner, recipient, payload) == message
    assert runner.log.events == []
    assert runner.turn.sends == 0
    assert runner.session.sends.close() == ()


def test_the_payload_is_checked_against_this_bus_caps_exactly() -> None:
    runner = Runner()
    size_of = len(json.dumps({"text": ""}).replace(" ", ""))
    queue(runner, "reader", {"text": "x" * (200 - size_of)})  # exactly at the cap
    queue(runner, "reader", {"a": {"b": {"c": 1}}})  # exactly as deep as allowed
    assert runner.turn.sends == 2


@pytest.mark.parametrize(
    ("sends", "refused"),
    [
        # A named send is counted under its name, a broadcast under '*'.
        ([("a", "hi"), ("b", "hi")], "(to a, b)"),
        ([(None, "hi"), ("a", "hi")], "(to *, a)"),
        ([(None, "hi"), (None, "hi")], "(to *)"),
    ],
)
def test_copies_are_refused_naming_where_each_went(
    sends: list[tuple[str | None, str]], refused: str
) -> None:
    runner = Runner()
    for to, text in sends:
        queue(runner, to, {"text": text})
    message = refusal(runner, "c", {"text": "HI"})
    assert message.startswith("you already sent this exact text 2 times")
    assert refused in message
    assert runner.notes == {}  # not the turn's limit: nothing is owed


def test_acks_are_not_copies_whatever_their_text() -> None:
    runner = Runner(limits=SendLimits(max_copies=1))
    for _ in range(3):
        queue(runner, "reader", {"type": "ack", "ack_of": 1, "text": "thanks"})
    assert runner.turn.sends == 3


def test_a_peer_text_is_not_forwarded_but_the_operator_and_host_words_may_be() -> None:
    runner = Runner(seen=seen(("operator", "relay this"), ("host", "a note"), ("peer", ["x"]),
                              ("peer", "do the thing")))  # fmt: skip
    queue(runner, "reader", {"text": "relay this"})
    queue(runner, "reader", {"text": "a note"})
    assert refusal(runner, "reader", {"text": "do  the THING"}).startswith(
        "this is the text of a message peer sent you, forwarded as it is"
    )


def test_the_turn_limit_counts_this_turn_only() -> None:
    runner = Runner(limits=SendLimits(per_turn=1))
    queue(runner, "reader", {"text": "one"})
    runner.next_turn()
    queue(runner, "reader", {"text": "two"})
    assert runner.turn.sends == 1


@pytest.mark.parametrize(
    ("to", "payload", "unsent"),
    [
        ("reader", {"text": "three"}, Unsent("reader", "three")),
        (None, {"text": "three"}, Unsent("*", "three")),
        ("reader", {"type": "ack", "ack_of": 4}, Unsent("reader", '{"type": "ack", "ack_of": 4}')),
    ],
    ids=["named", "broadcast", "no-text"],
)
def test_a_send_over_the_turn_limit_is_owed_to_a_follow_up(
    to: str | None, payload: dict[str, Any], unsent: Unsent
) -> None:
    runner = Runner(limits=SendLimits(per_turn=2))
    queue(runner, "reader", {"text": "one"})
    queue(runner, "reader", {"text": "two"})
    assert refusal(runner, to, payload).startswith("this turn already sent 2 messages")
    assert (runner.turn.sends, runner.turn.unsent) == (2, [unsent])
    assert runner.notes == {UNSENT_META: encode(Owed(1, (unsent,)))}
    assert refusal(runner, "other", {"text": "four"}).startswith("this turn already sent 2")
    owed = (unsent, Unsent("other", "four"))
    assert runner.notes == {UNSENT_META: encode(Owed(1, owed))}
    assert runner.log.events[2:] == []  # two queued, no warning


def test_a_follow_up_owes_the_next_round_until_the_last() -> None:
    runner = Runner(limits=SendLimits(per_turn=1))
    runner.turn.follow_up = MAX_ROUNDS - 1
    queue(runner, "reader", {"text": "one"})
    refusal(runner, "reader", {"text": "two"})
    assert runner.notes == {UNSENT_META: encode(Owed(MAX_ROUNDS, (Unsent("reader", "two"),)))}


def test_the_last_follow_up_drops_what_it_cannot_send_and_warns_once() -> None:
    runner = Runner(limits=SendLimits(per_turn=1))
    runner.turn.follow_up = MAX_ROUNDS
    queue(runner, "reader", {"text": "one"})
    refusal(runner, "reader", {"text": "two"})
    assert runner.log.events[1:] == [
        Warned(panel="writer", message=(
            f"this panel's follow-up turn {MAX_ROUNDS} again sent more than a turn may; what "
            "it could not send is dropped, not owed to another turn"))
    ]  # fmt: skip
    refusal(runner, "reader", {"text": "three"})
    assert len(runner.log.events) == 2  # the first refusal warned; the second is quiet
    assert runner.notes == {}
    assert runner.turn.unsent == [Unsent("reader", "two"), Unsent("reader", "three")]


class CommitLog:
    """The dispatcher's event log, keeping what it would write."""

    def __init__(self) -> None:
        self.written: list[Any] = []

    async def commit(self, *events: Any, answer: Any = None) -> None:
        self.written.extend(events)


@pytest.mark.anyio
async def test_a_nudge_given_in_a_turn_is_a_send_of_that_turn() -> None:
    watchdog = Runner(limits=SendLimits(per_turn=1))
    panels: Any = {
        "watchdog": SimpleNamespace(name="watchdog", outbox=watchdog.outbox),
        "eng": SimpleNamespace(name="eng"),
    }
    services: Any = SimpleNamespace(log=CommitLog())
    dispatcher = Dispatcher(services, panels, Tickets(), lambda: None)
    nudge = verbs.Nudge(panel="eng", text="the tests fail")
    done = await dispatcher.apply(nudge, by="watchdog")
    assert (done.ok, done.text) == (
        True, "nudge for eng queued as outbox entry 7.0; it is sent when this turn ends"
    )  # fmt: skip
    refused = await dispatcher.apply(nudge, by="watchdog")
    assert not refused.ok
    assert refused.text.startswith("this turn already sent 1 messages, the most one turn may")
    assert [(d.recipient, d.payload) for d in watchdog.session.sends.close()] == [
        ("eng", {"type": "nudge", "text": "the tests fail"})
    ]


def test_a_refused_send_is_the_applications_error() -> None:
    assert issubclass(NotQueuedError, PanelsError)
    assert issubclass(SendRefused, PanelsError)
