"""Hybrid search's pure parts (words, BM25, rank fusion), `Memory.search`'s mode, the config
field and the `memory_search` tool's mode, on the fake index (the conformance suite runs the
real one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from runtime.errors import ConfigError, MemoryStoreError
from runtime.instance.config import InstanceConfig, load_config
from runtime.memory.fake import FakeGraph, FakeIndex, FakeNotes, FakeWiki
from runtime.memory.fulltext import (
    Candidate,
    Word,
    fuse,
    query_words,
    rank_by_words,
    tokens,
    words_in,
)
from runtime.memory.memory import Memory
from runtime.memory.model import Atom, Hit

EXACT = "INC-4821 disk full on the build host"
DECOY = "INC-4812, INC-4813 and INC-4814: one inc after another inc, each inc an incident"


def typed(query: str) -> list[str]:
    return [word.typed for word in query_words(query)]


# -- words --------------------------------------------------------------------------------------


def test_the_words_looked_up_are_those_naming_something_exactly() -> None:
    assert typed("how much does the catalog cluster cost in us-east-1?") == ["us-east-1"]
    assert query_words("$300 in Python 3.12") == [
        Word("300", ("300",)), Word("Python", ("python",)), Word("3.12", ("3", "12"))]  # fmt: skip
    assert query_words("Priya Nair's") == [Word("Priya", ("priya",)), Word("Nair's", ("nair",))]
    assert typed("who reviewed it, Priya Nair? and TLS, PostgreSQL, db-7, follow-ups") == [
        "Priya", "Nair", "TLS", "PostgreSQL", "db-7", "follow-ups"]  # fmt: skip
    assert typed("Kubernetes") == ["Kubernetes"] and typed("Latest build of Kubernetes") == [
        "Kubernetes"
    ]  # fmt: skip (a capital opening a sentence is not a name)
    assert typed("the state-of-the-art us-east-1 US-EAST-1 snake_case") == [
        "state-of-the-art", "us-east-1", "snake_case"]  # fmt: skip
    assert typed("when did the latest build go live") == []
    assert len(query_words(" ".join(f"w{i}" for i in range(50)))) == 32


def test_query_syntax_is_punctuation() -> None:
    assert typed('"INC-4821" AND (disk OR *) NOT -host:port') == ["INC-4821", "host:port"]
    assert typed('the AND OR "Of" * () : \\ +') == []
    assert query_words("text:INC-4821^2") == [Word("text:INC-4821^2", ("text", "inc", "4821", "2"))]


def test_a_text_holds_a_word_as_consecutive_tokens() -> None:
    text = "Catalog costs $300/month in US-East-1 (Café Nair); west us 1 and east 1 elsewhere"
    words = query_words("us-east-1 300 Cafe Nair's us-west-1 3.12 east-1")
    assert words_in(text, words) == ("us-east-1", "300", "Cafe", "Nair's", "east-1")
    assert tokens("Ünïcödé x_y 页 " + "a" * 65) == ["unicode", "x", "y", "页"]


def test_bm25_ranks_rare_words_over_common_ones_and_leaves_out_non_matches() -> None:
    texts = {"both": "INC-4821 on db-7", "rare": "INC-4821 was filed", "none": "green tea",
             "common": "db-7 is full", "again": "db-7 rebooted", "more": "db-7"}  # fmt: skip
    ranked = rank_by_words(texts, query_words("INC-4821 db-7"))
    assert [source for source, _ in ranked][:2] == ["both", "rare"]
    assert {source for source, _ in ranked[2:]} == {"common", "again", "more"}
    assert all(score > 0 for _, score in ranked)
    assert rank_by_words(texts, []) == [] and rank_by_words({}, query_words("X")) == []


# -- fusion -------------------------------------------------------------------------------------


def candidate(source: str, distance: float, text: str = "") -> Candidate:
    return Candidate(source, "note", text or source, "", distance)


def test_reciprocal_rank_fusion_adds_both_sides_and_drops_weak_word_matches() -> None:
    a, b, c, d = (candidate(s, 0.1 * n, f"{s} INC-4821" * (s != "a")) for n, s in
                  enumerate("abcd", 1))  # fmt: skip
    words = query_words("INC-4821")
    # c: 1/63 + 1/61 beats b: 2/62 by a hair; d scores under half the best word score.
    hits = fuse([a, b, c], [(c, 5.0), (b, 4.0), (d, 2.4)], words, 4)
    assert [hit.source for hit in hits] == ["c", "b", "a"]
    assert [hit.matched for hit in hits] == [
        ("meaning", "INC-4821"), ("meaning", "INC-4821"), ("meaning",)]  # fmt: skip
    assert [hit.distance for hit in hits] == [c.distance, b.distance, a.distance]
    kept = fuse([a, b, c], [(c, 5.0), (b, 4.0), (d, 2.5)], words, 4)
    assert [hit.source for hit in kept] == ["c", "b", "a", "d"]
    assert kept[3] == Hit("d", "note", d.text, "", d.distance, False, ("INC-4821",))


def test_ties_go_to_a_hit_of_both_sides_then_to_the_better_word_rank() -> None:
    a, b, c = candidate("a", 0.1), candidate("b", 0.2), candidate("c", 0.3)
    # a and b: each first on one side and second on the other; b is the better word match.
    assert [h.source for h in fuse([a, b], [(b, 2.0), (a, 1.5)], [], 2)] == ["b", "a"]
    # a (meaning only) and c (words only) tie at 1/61: the nearer one first.
    hits = fuse([a], [(c, 1.0)], [], 2)
    assert [(h.source, h.by_meaning) for h in hits] == [("a", True), ("c", False)]
    # Found by meaning means "among the k nearest", as vector mode would return.
    assert [(h.source, h.by_meaning) for h in fuse([a, b], [(b, 1.0)], [], 1)] == [("b", False)]
    assert [(h.source, h.by_meaning) for h in fuse([a, b], [(b, 1.0)], [], 2)] == [
        ("b", True), ("a", True)]  # fmt: skip
    assert fuse([a, b], [], [], 1)[0].source == "a" and fuse([], [], [], 3) == []


def test_equal_word_scores_share_a_rank_and_meaning_orders_them() -> None:
    a, b, c, d = (candidate(s, 0.1 * n) for n, s in enumerate("abcd", 1))
    # All four hold the asked-for "7" alike: the word side ranks them 1, 1, 1, 1.
    tied = [(d, 3.0), (c, 3.0), (b, 3.0 * (1 - 1e-6)), (a, 3.0)]
    assert [h.source for h in fuse([a, b, c, d], tied, [], 4)] == ["a", "b", "c", "d"]
    # Told apart, the word ranks count: d (1 by words, 4 by meaning) passes c (2 and 3).
    apart = [(d, 3.0), (c, 2.0), (b, 2.0), (a, 2.0)]
    assert [h.source for h in fuse([a, b, c, d], apart, [], 4)] == ["a", "b", "d", "c"]


def test_hit_says_why_in_one_line() -> None:
    hit = Hit("s", "note", "t", "", 0.2)  # as built before hybrid search: by meaning
    assert (hit.matched, hit.why()) == (("meaning",), "meaning")
    words = Hit("s", "note", "t", "", 0.2, by_meaning=False, words=("us-east-1", "300"))
    assert words.why() == "words: us-east-1 300" and words.matched == ("us-east-1", "300")
    both = Hit("s", "note", "t", "", 0.2, words=("3.12",))
    assert both.why() == "meaning, words: 3.12" and both.matched == ("meaning", "3.12")


# -- Memory.search, the config field, the tool ---------------------------------------------------


def memory(**config: Any) -> Memory:
    index = FakeIndex()
    index.upsert(
        [Atom("memory/x.md#exact", "note", EXACT), Atom("memory/x.md#decoy", "note", DECOY)]
    )
    return Memory(notes=FakeNotes(), wiki=FakeWiki(), config=InstanceConfig(**config),
                  open_index=lambda: index, open_graph=FakeGraph)  # fmt: skip


def test_memory_search_takes_the_config_s_mode_unless_told() -> None:
    hybrid, vector = memory(), memory(rag_search_mode="vector")
    assert hybrid.search("INC-4821", 1)[0].source == "memory/x.md#exact"
    assert vector.search("INC-4821", 1)[0].source == "memory/x.md#decoy"
    assert vector.search("INC-4821", 1, mode="hybrid")[0].source == "memory/x.md#exact"
    assert hybrid.search("INC-4821", 1, None, "vector")[0].source == "memory/x.md#decoy"
    with pytest.raises(MemoryStoreError, match="mode must be one of hybrid, vector, not 'both'"):
        hybrid.search("INC-4821", mode="both")  # type: ignore[arg-type]


def test_the_config_field_defaults_to_hybrid_and_refuses_other_values(tmp_path: Path) -> None:
    assert InstanceConfig().rag_search_mode == "hybrid"
    with pytest.raises(ValidationError, match="rag_search_mode"):
        InstanceConfig(rag_search_mode="semantic")  # type: ignore[arg-type]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"rag_search_mode": "Hybrid"}))
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == "rag_search_mode"
    assert "Input should be 'hybrid' or 'vector' (got 'Hybrid')" in str(caught.value)
    path.write_text(json.dumps({"rag_search_mode": "vector"}))
    assert load_config(path).rag_search_mode == "vector"


class Context:
    """What `search_tools` reads of a ToolContext."""

    def __init__(self, memory: Memory) -> None:
        self.memory, self.shared_memory, self.config = memory, None, memory.config


@pytest.mark.anyio
async def test_the_memory_search_tool_offers_the_modes_defaulting_to_the_config_s() -> None:
    from runtime.tools.recall import search_tools

    for config_mode, first in (("hybrid", "INC-4821 disk"), ("vector", "INC-4812")):
        (tool, _) = search_tools(Context(memory(rag_search_mode=config_mode)))  # type: ignore[arg-type]
        schema = tool.input_schema["properties"]["mode"]
        assert schema["enum"] == ["hybrid", "vector"] and schema["default"] == config_mode
        out = await tool.handler({"query": "INC-4821", "k": 1})
        assert not out.is_error and f"\n{first}" in out.text, out.text
    out = await tool.handler({"query": "INC-4821", "k": 1, "mode": "hybrid"})
    assert "\nINC-4821 disk" in out.text
    out = await tool.handler({"query": "INC-4821", "mode": "bm25"})
    assert out.is_error and "mode must be one of hybrid, vector; got 'bm25'" in out.text


def test_the_agent_is_told_how_each_hit_was_found() -> None:
    from runtime.memory.model import Hit
    from runtime.memory.render import render_hits

    hits = [
        Hit("memory/a.md#1", "note", "INC-4821 closed", "note", 0.4, True, ("INC-4821",)),
        Hit("memory/a.md#2", "note", "the cache is warm", "note", 0.5),
        Hit("memory/a.md#3", "note", "INC-4821 opened", "note", 0.9, False, ("INC-4821",)),
    ]
    shown = render_hits("INC-4821", hits)
    assert "best first" in shown
    assert "(note, note) score 0.600; found by meaning, words: INC-4821" in shown
    assert "(note, note) score 0.500; found by meaning\n" in shown
    assert "(note, note) score 0.100; found by words: INC-4821" in shown
