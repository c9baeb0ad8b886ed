"""Replay on a fixed corpus with known clusters, with the real MiniLM embedder.

The corpus: 4 notes on disk-full deploy failures, 3 on flaky auth tests (a wiki page covers
them), 3 self-observations on over-polling, singletons, and two restatements of one fact.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from runtime.errors import ConfigError
from runtime.instance.replay_record import last_replay
from runtime.memory.embed import MiniLMEmbedder
from runtime.memory.fake import FakeGraph
from runtime.memory.linking import link_note
from runtime.memory.notes import FileNotes
from runtime.memory.protocols import GraphStore
from runtime.memory.replay import (
    CLUSTER_DISTANCE,
    COVERED_DISTANCE,
    DUPLICATE_DISTANCE,
    ReplayPlan,
    cluster_vectors,
    plan_replay,
)
from runtime.memory.replay_policy import load_policy, policy_path
from runtime.memory.replay_write import apply_replay
from runtime.memory.wiki import FileWiki

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

DISK = [
    "Deploy to staging failed: the build host ran out of disk space during the artifact upload.",
    "The release pipeline aborted again with 'no space left on device' on the build host.",
    "Production deploy broke because /var on the build machine was 100% full of old logs.",
    "Freed 30 GB of stale docker images on the build host; the deploy then went through. "
    "The disk-full failures come back weekly.",
]
AUTH = [
    "test_login_refresh failed in CI, then passed on rerun: the auth tests are flaky.",
    "The OAuth token refresh test times out at random in CI when the token cache is cold.",
    "Auth test suite is intermittently red; reruns go green without any code change.",
]
POLL = [
    "I polled the message bus every few seconds while waiting for the reviewer instead of "
    "blocking on a reply.",
    "Again I kept checking the bus for new messages far too often while I waited for an answer.",
    "I over-poll: I check for peer replies in a tight loop rather than waiting for the "
    "notification.",
]
SINGLETONS = [
    "The user prefers British spelling in documentation.",
    "Postgres autovacuum settings were tuned for the reporting database.",
    "The team retrospective moved to Thursday afternoons.",
]
SHORT_RESTATEMENT = "The API gateway rate limit is 500 requests per minute per client."
LONG_RESTATEMENT = "The API gateway rate limit is 500 requests per minute for each client."
OLD_DISK = "The deploy failed since the build server's disk was completely full."
FLAKY_PAGE = (
    "# Flaky auth tests\n\nThe OAuth and login tests fail intermittently in CI when the token "
    "cache is cold; rerun them, and warm the cache in the fixture."
)
OTHER_PAGE = "# Onboarding\n\nHow to get repository access and set up the development environment."


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def write_corpus(root: Path) -> FileNotes:
    notes = FileNotes(root / "memory")
    when = NOW - timedelta(days=5)

    def add(text: str, category: str = "insight", applies: list[str] | None = None) -> None:
        nonlocal when
        when += timedelta(hours=2)
        payload = {"applies_to": applies} if applies else None
        notes.append(text, category, payload, now=when)

    notes.append(OLD_DISK, "insight", {"applies_to": ["deploy"]}, now=NOW - timedelta(days=20))
    for i in range(4):  # interleaved, as a week of notes would be
        add(DISK[i], applies=["deploy", "build-host"] if i % 2 else ["deploy", "disk"])
        if i < 3:
            add(AUTH[i], applies=["auth-tests"])
            add(POLL[i], "self_observation", ["peer-bus"])
            add(SINGLETONS[i])
    add(SHORT_RESTATEMENT, applies=["gateway"])
    add(LONG_RESTATEMENT, applies=["gateway"])
    wiki = FileWiki(root / "wiki")
    wiki.write("testing/flaky-auth", FLAKY_PAGE)
    wiki.write("onboarding", OTHER_PAGE)
    return notes


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "inst"
    write_corpus(root)
    return root


def linked_graph(root: Path) -> FakeGraph:
    graph = FakeGraph()
    for atom in FileNotes(root / "memory").atoms():
        link_note(graph, atom)
    return graph


def plan(
    root: Path,
    minilm: MiniLMEmbedder,
    graph: GraphStore | None = None,
    *,
    days: int = 7,
    threshold: int = 3,
    now: datetime = NOW,
) -> ReplayPlan:
    return plan_replay(
        FileNotes(root / "memory"),
        FileWiki(root / "wiki"),
        minilm.embed,
        graph,
        days=days,
        threshold=threshold,
        now=now,
    )


def texts(found: ReplayPlan) -> list[set[str]]:
    return [{first_paragraph(atom.text) for atom in pattern.members} for pattern in found.patterns]


def first_paragraph(text: str) -> str:
    """A note's text without the payload fields its body carries (`**applies_to:**` ...)."""
    return text.split("\n\n", 1)[0]


def tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


# -- the thresholds, measured -------------------------------------------------------------------


def distance(minilm: MiniLMEmbedder, a: str, b: str) -> float:
    va, vb = minilm.embed([a, b])
    return 1.0 - sum(x * y for x, y in zip(va, vb, strict=True))


def test_thresholds_separate_the_labelled_pairs(minilm: MiniLMEmbedder) -> None:
    restatements = [
        (SHORT_RESTATEMENT, LONG_RESTATEMENT),
        (DISK[0], DISK[0].replace("during the artifact", "during artifact")),
        (
            AUTH[1],
            "The OAuth token refresh test times out at random in CI if the token cache is cold.",
        ),
    ]
    paraphrases = [
        (DISK[0], "The release broke: the build machine ran out of disk space."),
        (AUTH[0], "The login test suite fails intermittently on a fresh token cache."),
        (POLL[0], POLL[1]),
        (  # the nearest paraphrase measured: 0.15
            "Rotating logs fixed the disk-full deploy failure.",
            "Deploys stopped failing once old logs were rotated off the full disk.",
        ),
    ]
    unrelated = [(DISK[0], AUTH[0]), (AUTH[0], POLL[0]), (SINGLETONS[0], SINGLETONS[1])]
    worst_restatement = max(distance(minilm, a, b) for a, b in restatements)
    best_paraphrase = min(distance(minilm, a, b) for a, b in paraphrases)
    assert worst_restatement < DUPLICATE_DISTANCE < best_paraphrase
    assert min(distance(minilm, a, b) for a, b in unrelated) > CLUSTER_DISTANCE + 0.1
    # The topics come apart as labelled, and the singletons stay alone.
    everything = DISK + AUTH + POLL + SINGLETONS
    clusters = cluster_vectors(minilm.embed(everything), CLUSTER_DISTANCE)
    found = sorted(sorted(everything[i] for i in c) for c in clusters)
    assert found == sorted([sorted(DISK), sorted(AUTH), sorted(POLL)] + [[s] for s in SINGLETONS])
    # A page on a pattern's topic is within COVERED_DISTANCE of it; a neighbouring one is not.
    assert distance(minilm, FLAKY_PAGE, " ".join(AUTH)) < COVERED_DISTANCE
    checklist = "# Deploy checklist\n\nRun the migrations, tag the release, watch the errors."
    assert distance(minilm, checklist, " ".join(DISK)) > COVERED_DISTANCE


def test_cluster_vectors_is_average_linkage_and_ordered() -> None:
    unit = [[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-1.0, 0.0]]
    assert cluster_vectors(unit, 0.25) == [[0, 1], [2], [3]]
    # 2 is 0.4 from 1 but 1.0 from 0: single linkage would join it at 0.4, average at 0.7.
    assert cluster_vectors(unit, 0.6) == [[0, 1], [2], [3]]
    assert cluster_vectors(unit, 0.75) == [[0, 1, 2], [3]]
    assert cluster_vectors([], 0.5) == []


# -- the plan -------------------------------------------------------------------------------------


def test_plan_finds_the_known_patterns(corpus: Path, minilm: MiniLMEmbedder) -> None:
    found = plan(corpus, minilm, linked_graph(corpus))
    assert texts(found) == [set(DISK), set(AUTH), set(POLL)]
    disk, auth, poll = found.patterns
    assert disk.proposal and disk.proposal.startswith("wiki_proposals/")
    assert disk.entities[0] == ("deploy", 4)
    assert {ref for ref, _ in disk.entities} == {"deploy", "disk", "build-host"}
    assert any("because" in sentence for sentence in disk.causal)
    assert auth.covered_by == "wiki/testing/flaky-auth" and auth.proposal is None
    assert poll.amendment and poll.self_observations == 3
    assert disk.amendment is None and auth.amendment is None
    assert poll.entities == (("peer-bus", 3),)
    [dup] = found.duplicates
    assert (dup.keep, dup.drop) == (
        atom_source(corpus, LONG_RESTATEMENT),
        atom_source(corpus, SHORT_RESTATEMENT),
    )
    assert found.atoms == 4 + 3 + 3 + 3 + 1  # the restatement is not counted twice
    assert found.remarks == ()


def atom_source(root: Path, text: str) -> str:
    [atom] = [a for a in FileNotes(root / "memory").atoms() if a.text.startswith(text)]
    return atom.source


def test_days_cutoff_and_threshold(corpus: Path, minilm: MiniLMEmbedder) -> None:
    month = plan(corpus, minilm, days=30)
    assert texts(month)[0] == {*DISK, OLD_DISK}
    assert [len(p.members) for p in plan(corpus, minilm, threshold=4).patterns] == [4]


def test_empty_memory_plans_nothing(tmp_path: Path, minilm: MiniLMEmbedder) -> None:
    found = plan(tmp_path, minilm)
    assert (found.atoms, found.patterns, found.duplicates) == (0, (), ())
    FileWiki(tmp_path / "wiki").write("onboarding", OTHER_PAGE)
    assert plan(tmp_path, minilm).pages == 1


def test_without_a_graph_the_plan_says_so(corpus: Path, minilm: MiniLMEmbedder) -> None:
    found = plan(corpus, minilm, None)
    assert all(p.entities == () for p in found.patterns)
    assert any(r.startswith("graph skipped") for r in found.remarks)
    unlinked = plan(corpus, minilm, FakeGraph())
    assert any("graph rebuild" in r for r in unlinked.remarks)


def test_real_graph_gives_the_same_entities(
    corpus: Path, tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    from runtime.memory.graph import open_graph

    graph = open_graph(tmp_path / "graph", "ladybug")
    try:
        for atom in FileNotes(corpus / "memory").atoms():
            link_note(graph, atom)
        real = plan(corpus, minilm, graph)
    finally:
        graph.close()
    fake = plan(corpus, minilm, linked_graph(corpus))
    assert [p.entities for p in real.patterns] == [p.entities for p in fake.patterns]


# -- applying -------------------------------------------------------------------------------------


def test_planning_writes_nothing(corpus: Path, minilm: MiniLMEmbedder) -> None:
    before = tree(corpus)
    plan(corpus, minilm, linked_graph(corpus))
    assert tree(corpus) == before


def test_apply_writes_drafts_archive_digest(corpus: Path, minilm: MiniLMEmbedder) -> None:
    found = plan(corpus, minilm, linked_graph(corpus))
    notes = FileNotes(corpus / "memory")
    short = atom_source(corpus, SHORT_RESTATEMENT)
    result = apply_replay(found, notes, corpus)
    disk, _, poll = found.patterns
    proposals = sorted(p.name for p in (corpus / "wiki_proposals").iterdir())
    assert proposals == sorted([f"{disk.name}.md", f"{poll.name}.md"])
    proposal = (corpus / str(disk.proposal)).read_text(encoding="utf-8")
    assert "status: proposed" in proposal and "deploy (4)" in proposal
    assert all(text[:40] in proposal for text in DISK)
    [amendment] = list((corpus / "role_proposals").iterdir())
    head = front_matter(amendment.read_text(encoding="utf-8"))
    assert head.keys() == {"date", "severity", "rationale", "source"}
    assert head["source"] == "replay" and head["severity"] == "minor"
    assert json.loads(head["rationale"]).startswith("3 self-observations")
    # The duplicate is archived, reversibly.
    assert result.archived == (short,)
    assert short not in {a.source for a in notes.atoms()}
    assert SHORT_RESTATEMENT in (corpus / "memory" / "archive" / "2026-11-27.md").read_text()
    digest = (corpus / "sleep" / "2026-12-01.md").read_text(encoding="utf-8")
    assert "- patterns: 3" in digest and "- wiki proposals: 2" in digest
    assert "- role amendments: 1" in digest and "- near-duplicates archived: 1" in digest
    assert "covered by wiki/testing/flaky-auth" in digest and str(disk.proposal) in digest
    assert short in digest
    last = last_replay(corpus)
    assert last is not None and (last.patterns, last.proposals, last.archived) == (3, 2, 1)
    assert last.amendments == 1 and last.digest == "sleep/2026-12-01.md"
    assert notes.restore([short]) == [short]
    assert short in {a.source for a in notes.atoms()}


def front_matter(text: str) -> dict[str, str]:
    block = text.split("---\n")[1]
    return dict(line.split(": ", 1) for line in block.splitlines())


def test_second_apply_changes_nothing_but_the_time(corpus: Path, minilm: MiniLMEmbedder) -> None:
    graph = linked_graph(corpus)
    first = plan(corpus, minilm, graph)
    apply_replay(first, FileNotes(corpus / "memory"), corpus)
    before = tree(corpus)
    later = NOW + timedelta(minutes=5)
    second = plan(corpus, minilm, graph, now=later)
    result = apply_replay(second, FileNotes(corpus / "memory"), corpus)
    assert second.duplicates == () and second.archived == first.archived
    assert second.proposals == first.proposals and second.amendments == first.amendments
    assert result.written == () and result.archived == ()
    after = tree(corpus)
    last_before = json.loads(before.pop("sleep/last_replay.json"))
    last_after = json.loads(after.pop("sleep/last_replay.json"))
    assert after == before
    assert last_after.pop("at") == later.isoformat() and last_before.pop("at") == NOW.isoformat()
    assert last_after == last_before


@pytest.mark.parametrize(
    "content",
    ["", "not json", "[]", '{"at": "x"}', "null"],
)
def test_last_replay_never_raises(tmp_path: Path, content: str) -> None:
    assert last_replay(tmp_path) is None
    (tmp_path / "sleep").mkdir()
    (tmp_path / "sleep" / "last_replay.json").write_text(content, encoding="utf-8")
    assert last_replay(tmp_path) is None


def test_last_replay_refuses_bad_counts(tmp_path: Path) -> None:
    good: dict[str, Any] = {
        "at": "2026-12-01T12:00:00+00:00",
        "mode": "apply",
        "days": 7,
        "threshold": 3,
        "atoms": 9,
        "patterns": 1,
        "proposals": 1,
        "archived": 0,
        "amendments": 0,
        "digest": "sleep/2026-12-01.md",
    }
    target = tmp_path / "sleep" / "last_replay.json"
    target.parent.mkdir()
    target.write_text(json.dumps(good), encoding="utf-8")
    assert last_replay(tmp_path) is not None
    for key, bad in (("atoms", -1), ("days", "7"), ("patterns", True), ("at", 5)):
        target.write_text(json.dumps({**good, key: bad}), encoding="utf-8")
        assert last_replay(tmp_path) is None, key


# -- the policy doc -------------------------------------------------------------------------------


@pytest.fixture
def policy_doc(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "wiki" / "replay_policy.md"


def test_policy_doc_sets_days_and_threshold(tmp_path: Path, policy_doc: Path) -> None:
    path, explicit = policy_path(tmp_path, "")
    assert (path, explicit) == (policy_doc, False)
    assert load_policy(path, explicit).days is None  # no doc: no policy
    policy_doc.parent.mkdir()
    policy_doc.write_text(
        "# Replay policy\n\n- **days:** 14\nthreshold = 4\nnotes: anything\n", encoding="utf-8"
    )
    policy = load_policy(path, explicit)
    assert (policy.days, policy.threshold, policy.problems) == (14, 4, ())
    policy_doc.write_text("days: 0\nthreshold: many\n", encoding="utf-8")
    policy = load_policy(path, explicit)
    assert (policy.days, policy.threshold) == (None, None) and len(policy.problems) == 2


def test_an_explicit_policy_path_must_exist(tmp_path: Path) -> None:
    path, explicit = policy_path(tmp_path, str(tmp_path / "nowhere.md"))
    assert explicit
    with pytest.raises(ConfigError, match="replay_policy_path"):
        load_policy(path, explicit)
