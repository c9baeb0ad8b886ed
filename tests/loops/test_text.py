"""A message's substance is what it says that its chain has not: a long restatement says
nothing new, a short new fact does, and what changes mechanically (times, ids, numbers)
never reads as news."""

from __future__ import annotations

import pytest

from panels.host.loops.rules import LoopSettings, says_something_new
from panels.host.loops.text import content_units, content_words, news

DEFAULTS = LoopSettings()
SAID = (
    "Before anything is built we should settle the storage layout: sessions keyed by user, a "
    "write queue that drains in order, and snapshots for every read path. Until those three "
    "are agreed nobody touches the handlers, since rework there is the most expensive kind."
)


def is_news(text: str, *earlier: str) -> bool:
    units = content_units(text)
    return says_something_new(*news(units, [content_units(t) for t in earlier]), DEFAULTS)


def test_a_long_restatement_of_what_the_chain_said_is_not_news() -> None:
    shuffled = (
        "To be clear: until those three are agreed nobody touches the handlers. The storage "
        "layout: sessions keyed by user, snapshots for every read path, and a write queue that "
        "drains in order. Rework there is the most expensive kind, so we should settle it "
        "before anything is built."
    )
    assert len(shuffled) > 200 and is_news(SAID) and not is_news(shuffled, SAID)


@pytest.mark.parametrize(
    "fact",
    ["Use src/cache.py instead.", "Decision: ship on Thursday.", "Limit is 4096 entries per shard.",
     "Stored upload-3.csv."],
)  # fmt: skip
def test_a_short_message_with_a_new_fact_is_news(fact: str) -> None:
    assert len(fact) < 40 and is_news(fact, SAID)


@pytest.mark.parametrize(
    ("first", "again"),
    [
        ("Status at 2026-12-06T10:11:00Z: build 482131 still blocked on the schema.",
         "Status at 2026-12-07T09:01:30+01:00: build 482139 still blocked on the schema."),
        ("Round 3: no progress on the export bug.", "Round 4: no progress on the export bug."),
        ("Commit 3f2a9c1d7e landed; waiting at 10:05.",
         "Commit 9e8d7c6b5a landed; waiting at 10:06."),
        ("Job 6f1c9b2e-0d4a-4c8e-9a57-2b1d3e4f5a6b still queued.",
         "Job 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d still queued."),
    ],
)  # fmt: skip
def test_times_ids_and_numbers_are_masked(first: str, again: str) -> None:
    assert content_words(first) == content_words(again)
    assert is_news(first) and not is_news(again, first)


def test_a_path_keeps_its_digits_and_stopwords_carry_nothing() -> None:
    assert content_words("Please look at upload-3.csv and v2 of Config.read, thanks") == [
        "look", "upload-3.csv", "v2", "config.read"]  # fmt: skip
    assert content_units("thanks, we will do it now") == frozenset()
    assert news(frozenset(), []) == (0, 0.0)
