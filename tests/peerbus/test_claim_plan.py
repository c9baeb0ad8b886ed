"""Claim planning at its edges: the count of rows examined (which tells the SQL layer whether
to scan on), the batch caps exactly at, under and over, the message a row becomes, and the
routes a claim's `senders` argument makes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from peerbus import BusOptions, InvalidRoleError, Message
from peerbus.render import message_tokens
from peerbus.routing import Budget, Candidate, Plan, Route, plan_claim
from peerbus.sqlite.claim import SCAN_CAP

OPTS = BusOptions(max_attempts=4, isolate_after=2)
WIDE = Budget(max_messages=100, max_tokens=1_000_000)


def candidate(ident: int, payload: object, *, attempts: int = 0) -> Candidate:
    text = json.dumps(payload)
    return Candidate(ident, "a", "b", None, text, len(text), "t", None, attempts)


def noise(ident: int) -> Candidate:
    return candidate(ident, {"type": "ack"})


def unparseable(ident: int) -> Candidate:
    return Candidate(ident, "a", "b", None, "{not json", 9, "t", None, 0)


def worn_out(ident: int) -> Candidate:
    return candidate(ident, {"n": ident}, attempts=OPTS.max_attempts)


def real(ident: int) -> Candidate:
    return candidate(ident, {"n": ident})


def plan(rows: list[Candidate], budget: Budget = WIDE) -> Plan:
    return plan_claim(rows, epoch=1, budget=budget, options=OPTS)


# -- rows examined -------------------------------------------------------------------------


@pytest.mark.parametrize("burst", [0, 1, 2, 3])
@pytest.mark.parametrize("kind", [noise, unparseable, worn_out, real])
def test_every_row_looked_at_counts_as_examined(
    burst: int, kind: Callable[[int], Candidate]
) -> None:
    """`examined` tells the claim whether the scan cap was reached, so each kind of row counts
    exactly once, however many of it come in a row."""
    rows = [kind(i) for i in range(1, burst + 1)] + [real(burst + 1)]
    result = plan(rows)
    assert result.examined == burst + 1
    assert not result.full
    assert [m.id for m in result.deliver][-1] == burst + 1


def test_nothing_to_look_at_is_an_empty_plan() -> None:
    assert plan([]) == Plan(deliver=(), noise=(), failed=(), full=False, examined=0)


def test_a_noise_burst_the_size_of_the_scan_cap_is_all_examined() -> None:
    """A transaction reads at most SCAN_CAP rows; only when all of them were examined does the
    claim go on to the real message behind a burst of noise, instead of ending empty."""
    result = plan([noise(i) for i in range(1, SCAN_CAP + 1)])
    assert result.examined == SCAN_CAP
    assert len(result.noise) == SCAN_CAP
    assert result.deliver == () and not result.full


def test_the_row_that_stops_a_full_batch_is_not_examined() -> None:
    rows = [real(1), noise(2), real(3), real(4), noise(5)]
    result = plan(rows, Budget(max_messages=2, max_tokens=1_000_000))
    assert [m.id for m in result.deliver] == [1, 3]
    assert result.noise == ((2, "ack"),)
    assert result.full and result.examined == 3


def test_a_plan_keeps_every_outcome_in_row_order() -> None:
    rows = [worn_out(1), noise(2), real(3), unparseable(4), noise(5), real(6), worn_out(7)]
    result = plan(rows)
    assert [m.id for m in result.deliver] == [3, 6]
    assert result.noise == ((2, "ack"), (5, "ack"))
    assert [i for i, _ in result.failed] == [1, 4, 7]
    assert result.failed[0] == (1, "its turn failed 4 times")
    assert result.full is False and result.examined == 7


# -- batch caps ----------------------------------------------------------------------------


def test_a_delivered_row_becomes_the_message_as_stored() -> None:
    row = Candidate(7, "alice", "bob", "topic-1", '{"n": 1}', 8, "2026-01-01", 2, 1)
    (message,) = plan_claim([row], epoch=3, budget=WIDE, options=OPTS).deliver
    assert message == Message(
        id=7,
        sender="alice",
        recipient="bob",
        topic="topic-1",
        payload={"n": 1},
        submitted_at="2026-01-01",
        attempt=2,
        recipient_epoch=2,
        stale_epoch=True,
    )


SAME_SIZE = [real(i) for i in range(1, 4)]
COST = message_tokens(plan(SAME_SIZE[:1]).deliver[0])


@pytest.mark.parametrize(
    ("max_tokens", "delivered", "full"),
    [
        (3 * COST - 1, [1, 2], True),  # one under: the third does not fit
        (3 * COST, [1, 2, 3], False),  # exactly at the cap: it fits
        (3 * COST + 1, [1, 2, 3], False),  # one over
    ],
)
def test_a_batch_may_land_exactly_on_the_token_cap(
    max_tokens: int, delivered: list[int], full: bool
) -> None:
    assert all(message_tokens(m) == COST for m in plan(SAME_SIZE).deliver)
    result = plan(SAME_SIZE, Budget(max_messages=100, max_tokens=max_tokens))
    assert [m.id for m in result.deliver] == delivered
    assert result.full is full and result.examined == len(delivered)


@pytest.mark.parametrize(
    ("max_messages", "delivered", "full"),
    [(2, [1, 2], True), (3, [1, 2, 3], False), (4, [1, 2, 3], False)],
)
def test_a_batch_may_hold_exactly_max_messages(
    max_messages: int, delivered: list[int], full: bool
) -> None:
    result = plan(SAME_SIZE, Budget(max_messages=max_messages, max_tokens=1_000_000))
    assert [m.id for m in result.deliver] == delivered
    assert result.full is full


# -- routes --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("senders", "expected"),
    [
        (None, None),  # every sender
        ("a", ("a",)),
        ("c,a", ("a", "c")),
        (" c , a ,, a ", ("a", "c")),  # blanks and repeats dropped, sorted
        ("", ()),  # names no sender: never widened to every sender
        (",", ()),
        (["c", "a", "c"], ("a", "c")),
        ([" a "], ("a",)),
        ([], ()),
    ],
)
def test_a_route_takes_broadcasts_from_the_senders_it_names(
    senders: str | list[str] | None, expected: tuple[str, ...] | None
) -> None:
    route = Route.of("bob", senders)
    assert route == Route("bob", expected)
    assert route.senders_json == (None if expected is None else json.dumps(list(expected)))
    assert route.params(5) == {
        "me": "bob",
        "after": 5,
        "all_senders": 1 if expected is None else 0,
        "senders": "[]" if expected is None else json.dumps(list(expected)),
    }


@pytest.mark.parametrize(
    ("recipient", "senders", "field", "role"),
    [
        ("", None, "recipient", ""),
        ("bo b", ["a"], "recipient", "bo b"),
        ("bob", "a,b c", "sender", "b c"),
        ("bob", ["a", "-x"], "sender", "-x"),
    ],
)
def test_a_route_refuses_names_that_are_not_roles(
    recipient: str, senders: str | list[str] | None, field: str, role: str
) -> None:
    with pytest.raises(InvalidRoleError) as raised:
        Route.of(recipient, senders)
    assert (raised.value.field, raised.value.role) == (field, role)
