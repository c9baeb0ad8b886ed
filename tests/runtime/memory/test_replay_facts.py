"""Replay on the built-in embedder never archives a note whose facts differ from the one it
keeps, drafts such pairs to reconcile, and a second apply changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from runtime.memory.embed import MiniLMEmbedder
from runtime.memory.notes import FileNotes
from runtime.memory.replay import DUPLICATE_DISTANCE, ReplayPlan, plan_replay
from runtime.memory.replay_write import apply_replay
from runtime.memory.wiki import FileWiki

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
# Pairs the built-in embedder puts under the near-duplicate cutoff (0.032 and 0.051 apart).
ALIKE_BUT_DIFFERENT = [
    (
        "The staging database runs PostgreSQL 15.4 on a db.r6g.large instance.",
        "The staging database runs PostgreSQL 16.1 on a db.r6g.large instance.",
    ),
    (
        "The nightly backup job is encrypted at rest.",
        "The nightly backup job is not encrypted at rest.",
    ),
]
SAME = (
    "The API gateway rate limit is 500 requests per minute per client.",
    "The API gateway rate limit is 500 requests per minute for each client.",
)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def plan(root: Path, minilm: MiniLMEmbedder) -> ReplayPlan:
    return plan_replay(
        FileNotes(root / "memory"),
        FileWiki(root / "wiki"),
        minilm.embed,
        None,
        days=7,
        threshold=3,
        now=NOW,
    )


def tree(root: Path) -> dict[str, bytes]:
    skip = "sleep/last_replay.json"  # holds the run's time
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).as_posix() != skip
    }


def test_alike_notes_with_other_facts_are_kept_and_drafted(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    for a, b in ALIKE_BUT_DIFFERENT:  # the embedder alone would archive one of each pair
        va, vb = minilm.embed([a, b])
        assert 1.0 - sum(x * y for x, y in zip(va, vb, strict=True)) <= DUPLICATE_DISTANCE
    notes = FileNotes(tmp_path / "memory")
    when = NOW - timedelta(days=2)
    for i, text in enumerate([text for pair in ALIKE_BUT_DIFFERENT for text in pair] + [*SAME]):
        notes.append(text, now=when + timedelta(minutes=i))

    first = plan(tmp_path, minilm)
    assert first.read == 6
    [duplicate] = first.duplicates
    assert "for each client" in next(a.text for a in notes.atoms() if a.source == duplicate.keep)
    assert {(c.first.text, c.second.text) for c in first.conflicts} == set(ALIKE_BUT_DIFFERENT)
    [versions] = [c for c in first.conflicts if "15.4" in c.first.text]
    assert versions.differences == ("figures: 15.4 / 16.1",)
    [backup] = [c for c in first.conflicts if "backup" in c.first.text]
    assert backup.differences == ("negation: affirmed / negated",)

    result = apply_replay(first, notes, tmp_path)
    assert result.archived == (duplicate.drop,)
    drafts = sorted((tmp_path / "wiki_proposals").glob("reconcile-*.md"))
    assert [d.relative_to(tmp_path).as_posix() for d in drafts] == sorted(first.reconciliations)
    text = (tmp_path / versions.proposal).read_text()
    assert "- **figures: 15.4 / 16.1**" in text
    assert (
        "pairs to reconcile (alike, but their facts differ): 2"
        in (tmp_path / first.digest).read_text()
    )

    before = tree(tmp_path)
    second = plan(tmp_path, minilm)
    assert (second.read, second.duplicates, len(second.conflicts)) == (5, (), 2)
    again = apply_replay(second, notes, tmp_path)
    assert again.archived == () and again.written == ()
    assert tree(tmp_path) == before


def test_a_note_written_twice_in_one_second_keeps_one_copy(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """Two copies of one block (a retry) are two notes: replay archives one and keeps the
    other, instead of archiving a source both copies share."""
    notes = FileNotes(tmp_path / "memory")
    when = NOW - timedelta(days=1)
    first = notes.append("Deploys to production are frozen after 15:00 UTC on Fridays.", now=when)
    second = notes.append("Deploys to production are frozen after 15:00 UTC on Fridays.", now=when)

    first_plan = plan(tmp_path, minilm)
    [duplicate] = first_plan.duplicates
    assert {duplicate.keep, duplicate.drop} == {first.source, second.source}
    assert apply_replay(first_plan, notes, tmp_path).archived == (duplicate.drop,)
    assert [atom.source for atom in notes.atoms()] == [duplicate.keep]
    assert plan(tmp_path, minilm).duplicates == ()


def test_replay_leaves_a_restored_note_where_the_operator_put_it(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    notes = FileNotes(tmp_path / "memory")
    for i, text in enumerate(SAME):
        notes.append(text, now=NOW - timedelta(days=1, minutes=-i))
    [duplicate] = plan(tmp_path, minilm).duplicates
    apply_replay(plan(tmp_path, minilm), notes, tmp_path)
    assert notes.restore([duplicate.drop]) == [duplicate.drop]
    assert notes.restored() == [duplicate.drop]

    after = plan(tmp_path, minilm)
    assert (after.read, after.duplicates, after.conflicts) == (2, (), ())
    assert apply_replay(after, notes, tmp_path).archived == ()
    assert {atom.source for atom in notes.atoms()} == {duplicate.keep, duplicate.drop}


def test_a_common_word_that_carries_the_fact_keeps_both_notes(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    """before / after, over / under, must / may ...: the embedder puts each pair under the
    cutoff (0.005 to 0.056 apart when measured), and the facts tell them apart."""
    from tests.runtime.memory.test_facts import DIFFERENT

    pairs = [(a, b) for a, b, said in DIFFERENT if said and said[0].startswith("qualifiers")]
    pairs += [("Restart it if the queue stalls.", "Restart it unless the queue stalls.")]
    assert len(pairs) == 8
    notes = FileNotes(tmp_path / "memory")
    for i, text in enumerate(text for pair in pairs for text in pair):
        notes.append(text, now=NOW - timedelta(days=1, minutes=-i))
    found = plan(tmp_path, minilm)
    assert found.duplicates == ()
    assert {(c.first.text, c.second.text) for c in found.conflicts} == set(pairs)
    assert all(c.differences[0].startswith("qualifiers: ") for c in found.conflicts)
