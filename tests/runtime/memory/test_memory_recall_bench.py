"""The recall bench's bookkeeping (bench/memory_recall.py, bench/memory_recall_corpus.py).

What the bench prints is only as good as its ground truth: a generated differing pair must
differ in its one fact as runtime/memory/facts.py reads it, a true repeat must state the same
facts, a fact must count as lost exactly when every note carrying it is archived, and recall
must be counted right. No figure is held to its target here (that is the bench's output);
the one replay run checks what replay must never do on the corpus: lose a fact, or change
anything on a second apply.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import ModuleType

import pytest

from runtime.instance.config import InstanceConfig
from runtime.instance.home import InstancePaths
from runtime.memory.embed import MiniLMEmbedder
from runtime.memory.facts import differences
from runtime.memory.notes import FileNotes

ROOT = Path(__file__).resolve().parents[3]
# How runtime/memory/facts.py names the difference of each kind of fact the corpus varies.
READ_AS = {"number": "figures", "region": "figures", "version": "figures", "id": "figures",
           "date": "figures", "name": "names", "team": "words", "negation": "negation"}  # fmt: skip


@pytest.fixture(scope="module")
def bench() -> Iterator[ModuleType]:
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(ROOT / "bench"))
        import memory_recall

        yield memory_recall
    sys.modules.pop("memory_recall", None)
    sys.modules.pop("memory_recall_corpus", None)


@pytest.fixture(scope="module")
def kit(bench: ModuleType) -> ModuleType:
    return sys.modules["memory_recall_corpus"]


def test_the_corpus_is_the_same_for_a_seed_and_another_for_another(kit: ModuleType) -> None:
    corpus = kit.make_corpus(40, 1)
    assert corpus == kit.make_corpus(40, 1)
    assert corpus.notes != kit.make_corpus(40, 2).notes
    assert len(corpus.notes) == 40
    assert sorted(p.kind for p in corpus.differing) == sorted(kit.KINDS)
    assert [p.kind for p in corpus.repeats] == ["same", "reworded"]
    low, high = kit.bounds()
    for size in (low - 1, high + 1):
        with pytest.raises(kit.CorpusError, match=rf"--notes {size} is out of range; give 30 to"):
            kit.make_corpus(size, 1)


def test_a_differing_pair_differs_in_its_one_fact_and_a_repeat_in_none(kit: ModuleType) -> None:
    corpus = kit.make_corpus(40, 1)
    for pair in corpus.differing:
        a, b = corpus.notes[pair.first], corpus.notes[pair.second]
        [line] = differences(a.text, b.text)
        assert line.startswith(READ_AS[pair.kind] + ": "), (pair.kind, line, a.text, b.text)
        assert a.topic == b.topic and len(a.facts - b.facts) == len(b.facts - a.facts) == 1
        assert b.written - a.written == timedelta(days=1)
    for pair in corpus.repeats:
        a, b = corpus.notes[pair.first], corpus.notes[pair.second]
        assert differences(a.text, b.text) == () and a.facts == b.facts
        assert (a.text != b.text) == (pair.kind == "reworded")
    for note in corpus.notes:  # inside replay's default window, before its `now`
        assert kit.NOW - timedelta(days=7) < note.written < kit.NOW


def test_every_query_has_an_answer_and_a_pair_query_excludes_its_decoy(kit: ModuleType) -> None:
    corpus = kit.make_corpus(40, 1)
    assert {q.kind for q in corpus.queries} == set(kit.QUERY_KINDS)
    for query in corpus.queries:
        assert corpus.expected(query), query
    [pair] = [p for p in corpus.differing if p.kind == "id"]
    topic = corpus.notes[pair.first].topic
    asked = {q.text: q for q in corpus.queries if q.kind == "id" and q.topic == topic}
    assert all(q.hard for q in asked.values())
    assert len(asked) == 2  # one for each note's id: INC-4821 and its near miss INC-4812
    for mine, other in ((pair.first, pair.second), (pair.second, pair.first)):
        [query] = [q for text, q in asked.items() if text in corpus.notes[mine].text]
        assert query.text not in corpus.notes[other].text
        assert corpus.expected(query) == {mine}
        assert corpus.expected(query, live={other}) == set()


def test_a_fact_is_lost_when_its_only_note_is_archived_by_hand(
    bench: ModuleType, kit: ModuleType, tmp_path: Path
) -> None:
    corpus = kit.make_corpus(40, 1)
    sources, texts = bench.write_notes(corpus, tmp_path)
    notes = FileNotes(tmp_path)
    [price] = [p for p in corpus.differing if p.kind == "number"]
    repeat = corpus.repeats[0]
    notes.archive([sources[price.second], sources[repeat.second]], "by hand")
    live = {i for i, s in enumerate(sources) if s not in set(notes.archived())}
    assert live == set(range(40)) - {price.second, repeat.second}

    [lost] = corpus.lost_facts(live)
    assert lost in corpus.notes[price.second].facts and lost not in corpus.notes[price.first].facts
    statements, tokens = bench.lost_statements(tuple(texts), live)
    assert len(statements) == 1
    [figure] = tokens  # the one figure only that note states, as facts.py reads it
    assert figure.startswith("figure ") and figure[7:] in texts[price.second].replace(",", "")
    assert corpus.differing_archived(live) == [(price, [price.second])]
    assert corpus.repeats_archived(live) == 1  # the repeat lost nothing
    assert corpus.lost_facts(set(range(40))) == [] and corpus.repeats_archived(set(range(40))) == 0


def test_recall_counts_an_answer_within_the_first_k_hits(kit: ModuleType) -> None:
    ask = [kit.Query("id", f"INC-{n}", "t", f"t|inc={n}", False) for n in range(4)]
    ranked = [
        kit.Ranked(ask[0], frozenset({7}), (7, 1, 2)),  # first
        kit.Ranked(ask[1], frozenset({7, 8}), (1, -1, 8)),  # third
        kit.Ranked(ask[2], frozenset({7}), (1, 2, 3, 4, 5, 7)),  # sixth: a miss at 5
        kit.Ranked(ask[3], frozenset(), ()),  # its note archived: never found
    ]
    scores = kit.recall(ranked, 5)
    assert scores["id"] == (0.25, 0.5)
    assert scores["meaning"] == (0.0, 0.0)  # no query of that kind
    assert kit.recall(ranked, 6)["id"] == (0.25, 0.75)


def test_the_targets_are_judged_and_a_build_without_hybrid_misses(bench: ModuleType) -> None:
    vector = {k: (0.5, 0.9) for k in ("meaning", "id", "number", "version", "name")}
    hybrid = dict(vector, id=(0.9, 0.95), number=(0.8, 0.94), meaning=(0.6, 0.9))
    lines, missed = bench.judge({"vector": vector, "hybrid": hybrid})
    assert missed == ["hybrid recall@5 on number"]
    assert lines[0] == "hybrid recall@5 on id queries: 0.95 (target >= 0.95, PASS)"
    assert lines[1] == "hybrid recall@5 on number queries: 0.94 (target >= 0.95, MISS)"
    assert lines[2].startswith("hybrid recall@5 on meaning queries: 0.90 (target >= vector-only")
    assert "0.90, PASS)" in lines[2]
    lines, missed = bench.judge({"vector": vector})
    assert (lines, missed) == (["hybrid search: not available in this build"], ["hybrid search"])


def test_replay_on_the_small_corpus_loses_no_fact_and_applies_once(
    bench: ModuleType, kit: ModuleType, tmp_path: Path
) -> None:
    corpus = kit.make_corpus(30, 1)  # the smallest: a pair of each kind, two repeats
    paths = InstancePaths.for_name("recall", tmp_path)
    config = InstanceConfig()
    embedder = MiniLMEmbedder()
    phases: dict[str, float] = {}
    done = bench.replay(corpus, paths, config, embedder, phases)
    assert set(phases) == {"write notes", "replay", "second replay"}
    plan, result = done.first
    assert plan.read == 30 and len(result.archived) == 30 - len(done.live)
    assert corpus.lost_facts(done.live) == []
    assert bench.lost_statements(done.texts, done.live) == ([], set())
    assert corpus.differing_archived(done.live) == []
    assert corpus.repeats_archived(done.live) == len(corpus.repeats)  # both repeats, one note each
    # Every differing pair close enough to look like a duplicate is drafted to reconcile.
    near = [d <= 0.08 for d in bench.pair_distances(corpus, embedder)]
    assert corpus.pairs_proposed(done.proposed) == sum(near) > 0
    again = done.second[1]
    assert (again.archived, again.written) == ((), ())
