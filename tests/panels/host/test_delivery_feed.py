"""What a turn is fed, exactly: the operator's words first in id order, then the peers'
messages rendered as data, the stale note, the peer-only instruction; and how much one turn
takes, operator input and peer messages together, at each limit's edge."""

from __future__ import annotations

import json

import pytest

from panels.host.delivery.feed import (
    OPERATOR_BATCH,
    PEER_ONLY_INSTRUCTION,
    Limits,
    TurnInput,
    claim_limits,
    compose_turn,
    is_operator_route,
    operator_route,
    operator_text,
    stale_note,
)
from panels.team import BatchSettings
from peerbus import Message, render_batch


def msg(ident: int, sender: str, payload: dict[str, object], *, stale: bool = False) -> Message:
    return Message(ident, sender, "p", None, payload, "t",
                   recipient_epoch=1 if stale else None, stale_epoch=stale)  # fmt: skip


def said(ident: int, sender: str, text: str, *, stale: bool = False) -> Message:
    return msg(ident, sender, {"type": "message", "text": text}, stale=stale)


@pytest.mark.parametrize(
    ("recipient", "operator"),
    [("dev@operator", True), ("@operator", True), ("dev", False), ("operator", False),
     ("dev@operator.x", False), ("operator@dev", False)],
)  # fmt: skip
def test_which_routes_carry_operator_input(recipient: str, operator: bool) -> None:
    assert is_operator_route(recipient) is operator


def test_a_panel_operator_route_is_its_name_and_suffix() -> None:
    assert operator_route("dev") == "dev@operator"
    assert is_operator_route(operator_route("a.b-c"))


@pytest.mark.parametrize(
    ("payload", "text"),
    [
        ({"text": "do it", "type": "x"}, "do it"),
        ({"text": 3, "b": "é", "a": 1}, '{"a": 1, "b": "é", "text": 3}'),
        ({"type": "note"}, '{"type": "note"}'),
    ],
)
def test_operator_text_is_the_text_or_the_whole_payload(
    payload: dict[str, object], text: str
) -> None:
    assert operator_text(msg(1, "operator", payload)) == text


def test_the_stale_note_names_each_id() -> None:
    assert stale_note([4, 12]) == (
        "Note from the host: message(s) 4, 12 were addressed to this panel before it "
        "restarted (stale_epoch). Check that they still apply before acting on them."
    )


def test_operator_input_alone_is_the_turn_as_it_is_in_id_order() -> None:
    turn = compose_turn([said(9, "operator", "second"), said(2, "operator", "first")], [])
    assert turn == TurnInput("first\n\nsecond", (2, 9), (), ("operator",))


def test_operator_input_then_peers_then_the_stale_note_without_the_peer_instruction() -> None:
    peers = [said(8, "eng", "old", stale=True), said(3, "qa", "x" * 4000), said(5, "eng", "ok")]
    turn = compose_turn([said(6, "operator", "go")], peers, max_tokens=200)
    assert turn == TurnInput(
        "\n\n".join(["go", render_batch(peers, max_tokens=200), stale_note([8])]),
        (3, 5, 6, 8),
        (8,),
        ("eng", "operator", "qa"),
    )
    assert "x" * 4000 not in turn.text  # cut to the batch budget


def test_peers_alone_end_with_the_instruction_and_no_note_when_none_is_stale() -> None:
    peers = [said(5, "eng", "y" * 4000), said(4, "qa", "ok")]
    turn = compose_turn([], peers)
    assert turn == TurnInput(
        "\n\n".join([render_batch(peers), PEER_ONLY_INSTRUCTION]), (4, 5), (), ("eng", "qa")
    )
    assert "y" * 4000 in turn.text  # no budget: nothing cut


def test_stale_peers_are_named_in_the_order_they_came() -> None:
    peers = [said(7, "eng", "a", stale=True), said(3, "eng", "b", stale=True)]
    turn = compose_turn([], peers)
    assert turn is not None
    assert turn.stale_ids == (7, 3)
    assert turn.text == "\n\n".join([render_batch(peers), stale_note([7, 3]),
                                     PEER_ONLY_INSTRUCTION])  # fmt: skip


def test_nothing_to_deliver_is_no_turn() -> None:
    assert compose_turn([], []) is None
    assert compose_turn([], [], max_tokens=10) is None


@pytest.mark.parametrize(
    ("batch", "per_turn", "limits"),
    [
        (BatchSettings(max_messages=7, max_tokens=900), 10, Limits(7, 900, 10)),
        (BatchSettings(max_messages=10), 10, Limits(10, 8_000, 10)),
        (BatchSettings(max_messages=10), 4, Limits(4, 8_000, 4)),
        (BatchSettings(enabled=False, max_messages=7), 10, Limits(1, 8_000, 10)),
    ],
)
def test_what_one_turn_claims(batch: BatchSettings, per_turn: int, limits: Limits) -> None:
    assert claim_limits(batch, per_turn) == limits


@pytest.mark.parametrize(
    ("per_turn", "operator"),
    [(OPERATOR_BATCH - 1, OPERATOR_BATCH - 1), (OPERATOR_BATCH, OPERATOR_BATCH),
     (OPERATOR_BATCH + 1, OPERATOR_BATCH), (500, 10)],
)  # fmt: skip
def test_operator_input_a_turn_takes(per_turn: int, operator: int) -> None:
    assert Limits(50, 1000, per_turn).operator == operator


@pytest.mark.parametrize(
    ("max_messages", "per_turn", "taken", "peers"),
    [(5, 10, 0, 5), (5, 10, 5, 5), (5, 10, 6, 4), (5, 10, 10, 0), (5, 10, 12, 0), (20, 10, 3, 7)],
)
def test_peer_messages_a_turn_takes_beside_operator_input(
    max_messages: int, per_turn: int, taken: int, peers: int
) -> None:
    assert Limits(max_messages, 1000, per_turn).peers(taken) == peers


def test_operator_text_keeps_non_ascii_as_is() -> None:
    text = operator_text(msg(1, "operator", {"ü": ["ß"]}))
    assert text == json.dumps({"ü": ["ß"]}, ensure_ascii=False)
