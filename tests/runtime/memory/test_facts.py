"""What replay compares before it archives a note: the facts two near-duplicates state."""

from __future__ import annotations

import pytest

from runtime.memory.facts import compare, differences, facts_of

# The pairs a user found archived (issue 31): close in meaning, different in one fact.
DIFFERENT = [
    (
        "the billing team pinned Python to 3.12",
        "the payment team pinned Python to 3.9",
        ("figures: 3.12 / 3.9", "words: billing / payment"),
    ),
    (
        "The catalog cluster costs $200 a month in ap-south-1.",
        "The catalog cluster costs $300 a month in us-east-1.",
        ("figures: $200, ap-south-1 / $300, us-east-1",),
    ),
    (
        "The orders migration was reviewed by Priya before the cutover.",
        "The orders migration was reviewed by Tomasz before the cutover.",
        ("names: priya / tomasz",),
    ),
    ("The nightly backup is encrypted.", "The nightly backup is not encrypted.", None),
    ("Cache keys use `order_id`.", "Cache keys use `orderId`.", None),
    ("Run make deploy-staging first.", "Run make deploy-prod first.", None),
    ("The incident ticket is INC-2231.", "The incident ticket is INC-2213.", None),
    ("Releases ship on 2026-11-03.", "Releases ship on 2026-11-30.", None),
    ("Set MAX_WORKERS before the run.", "Set MIN_WORKERS before the run.", None),
    # Common words that carry the fact (tests/runtime/memory/test_replay_facts.py: the built-in
    # embedder puts each of these pairs under replay's near-duplicate cutoff).
    (
        "The database backup runs before the nightly deploy.",
        "The database backup runs after the nightly deploy.",
        ("qualifiers: before / after",),
    ),
    (
        "Alerts fire when disk usage is over 80 percent.",
        "Alerts fire when disk usage is under 80 percent.",
        ("qualifiers: over / under",),
    ),
    (
        "The cache holds more than 10 GB on each node.",
        "The cache holds 10 GB on each node.",
        ("qualifiers: more / (none)",),
    ),
    (
        "The on-call engineer must restart the workers.",
        "The on-call engineer may restart the workers.",
        ("qualifiers: must / may",),
    ),
    ("Restart it if the queue stalls.", "Restart it unless the queue stalls.", None),
    ("All builds use the cache.", "Some builds use the cache.", ("qualifiers: all / some",)),
    ("Approve with Priya and Tomas.", "Approve with Priya or Tomas.", ("qualifiers: and / or",)),
    (
        "The limit is 500 requests.",
        "The limit was 500 requests.",
        ("qualifiers: present tense / past tense",),
    ),
]

# Restatements: the same facts in other common words, other tense, other number, other case.
SAME = [
    (
        "The API gateway rate limit is 500 requests per minute per client.",
        "The API gateway rate limit is 500 requests per minute for each client.",
    ),
    (
        "We pinned numpy to 2.1 because of the ABI break.",
        "numpy is pinned to 2.1 because of the ABI break",
    ),
    ("The build takes 1,200 seconds.", "The build takes 1200 seconds."),
    ("Deploys need an approval from the on-call.", "Deploy needs approval from the on-call!"),
    # A quantity, a connective or a tense said by one note only restates the other.
    ("Backups are kept for 7 days.", "Backups are all kept for 7 days."),
    (
        "The team owns the api and answers its pages.",
        "The team owns the api and answers all of its pages.",
    ),
    ("The billing team pinned Python 3.12.", "The billing team has pinned Python 3.12."),
]


@pytest.mark.parametrize(("a", "b", "expected"), DIFFERENT)
def test_notes_that_differ_in_a_fact_are_not_the_same(
    a: str, b: str, expected: tuple[str, ...] | None
) -> None:
    found = differences(a, b)
    assert found, (a, b)
    if expected is not None:
        assert found == expected
    assert differences(b, a), "the comparison is symmetric"


@pytest.mark.parametrize(("a", "b"), SAME)
def test_restatements_state_the_same_facts(a: str, b: str) -> None:
    assert differences(a, b) == ()


def test_each_kind_of_fact_is_found_where_it_is() -> None:
    facts = facts_of(
        "Alice moved `cache_ttl` to 30s for PR-1234 in us-east-1. Then Bob said Redis "
        "was not the bottleneck; see docs/cache.md and CacheWarmer."
    )
    assert facts.figures == {"30s", "pr-1234", "us-east-1"}
    assert facts.identifiers == {"cache_ttl", "docs/cache.md", "CacheWarmer"}
    # Capitals after a sentence's end say nothing (Alice, Then); Bob and Redis are names.
    assert facts.names == {"bob", "redis"}
    assert facts.negated
    assert facts.words == {"alic", "mov", "said", "bottleneck", "see"}  # stems
    assert facts.spelled["mov"] == "moved"


def test_a_negation_is_a_fact_of_its_own() -> None:
    assert differences("The job never retries.", "The job retries.") == (
        "negation: negated / affirmed",
    )
    assert differences("It isn't cached.", "It is not cached.") == ()


def test_a_quantity_said_by_one_note_only_is_no_difference() -> None:
    kept, all_kept = facts_of("Backups are kept."), facts_of("Backups are all kept.")
    assert kept != all_kept and compare(kept, all_kept) == ()
    assert compare(all_kept, facts_of("Backups are some kept.")) == ("qualifiers: all / some",)
