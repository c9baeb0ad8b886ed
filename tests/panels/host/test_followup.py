"""What a follow-up owes, as the panel's store keeps it: the exact text written, what is cut
to fit, and values that cannot be read (nothing is owed, the panel still starts)."""

from __future__ import annotations

import pytest

from panels.host.delivery.followup import (
    MAX_LISTED,
    TEXT_CHARS,
    Owed,
    Unsent,
    decode,
    encode,
    note_text,
)


def test_the_note_is_written_with_sorted_keys_and_its_own_characters() -> None:
    owed = Owed(2, (Unsent("reader", "déjà vu"), Unsent("*", "all")))
    assert encode(owed) == (
        '{"round": 2, "unsent": [{"text": "déjà vu", "to": "reader"}, {"text": "all", "to": "*"}]}'
    )
    assert decode(encode(owed)) == owed


def test_each_text_and_the_list_are_cut_to_fit() -> None:
    unsent = tuple(Unsent(f"r{n}", "x" * (TEXT_CHARS + 1)) for n in range(MAX_LISTED + 1))
    back = decode(encode(Owed(1, unsent)))
    assert back == Owed(1, tuple(Unsent(u.recipient, "x" * TEXT_CHARS) for u in unsent[:-1]))


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "not json",
        "[]",  # not an object
        '{"round": 1}',  # no list
        '{"unsent": [{"to": "a", "text": "t"}]}',  # no round
        '{"round": "x", "unsent": [{"to": "a", "text": "t"}]}',
        '{"round": 1, "unsent": [{"text": "t"}]}',  # an entry without its recipient
        '{"round": 1, "unsent": [{"to": "a"}]}',
        '{"round": 1, "unsent": []}',  # nothing left to owe
    ],
)
def test_a_value_that_owes_nothing_readable_is_nothing_owed(value: str | None) -> None:
    assert decode(value) is None


def test_what_is_read_back_is_text_whatever_the_json_held() -> None:
    assert decode('{"round": "3", "unsent": [{"to": 7, "text": 8}]}') == Owed(
        3, (Unsent("7", "8"),)
    )


def test_the_follow_up_turn_is_told_what_was_not_sent_and_how_much_it_may_send() -> None:
    owed = Owed(1, (Unsent("reader", "the plan"), Unsent("*", "done")))
    assert note_text(owed, 2) == (
        "Note from the host: your last turn tried to send more than the 2 messages one turn "
        "may send, and these were not sent:\n"
        "- to reader: the plan\n"
        "- to *: done\n"
        "Send those that are still needed now (at most 2 in this turn); leave out any that no "
        "longer apply."
    )
