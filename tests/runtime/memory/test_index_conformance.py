"""The VectorIndex contract, run on every backend: the in-memory fake, LanceDB with the fake
embedder (fast), and LanceDB with the real offline MiniLM model. Then what only LanceDB has:
the ANN index past a size, the embedder check, reset, and corrupt files.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.errors import EngineUnavailableError, MemoryStoreError
from runtime.memory.embed import MiniLMEmbedder
from runtime.memory.model import Atom, AtomKind, Hit, Provenance
from runtime.memory.protocols import Embedder, VectorIndex

DEPLOY = "the deploy failed because the disk was full"
TEA = "green tea tastes best brewed in the morning"
CAT = "the cat sleeps all afternoon on the sofa"
HOSTILE = [
    "x' OR '1'='1",
    "x'",
    "a\\",
    "a\\' OR 1=1 --",
    '"; DROP TABLE atoms; --',
    "`source`",
    "line\nbreak",
    "nul\0byte",
    "ünïcödé/页",
    "%_*",
]


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()  # loads once for the module


def fake_embedder() -> Embedder:
    from runtime.memory.fake import FakeEmbedder

    return FakeEmbedder()


def open_lance(root: Path, embedder: Embedder, **options: int) -> VectorIndex:
    from runtime.memory.lance import open_lance_index

    return open_lance_index(root, embedder, **options)


@pytest.fixture(params=["fake", "lance+fake-embedder", "lance+minilm"])
def index(
    request: pytest.FixtureRequest, tmp_path: Path, minilm: MiniLMEmbedder
) -> Iterator[VectorIndex]:
    backend: VectorIndex
    if request.param == "fake":
        from runtime.memory.fake import FakeIndex

        backend = FakeIndex()
    elif request.param == "lance+fake-embedder":
        backend = open_lance(tmp_path / "index", fake_embedder())
    else:
        backend = open_lance(tmp_path / "index", minilm)
    try:
        yield backend
    finally:
        backend.close()


def atom(source: str, text: str, kind: AtomKind = "note", category: str = "note") -> Atom:
    return Atom(source, kind, text, category, "2026-12-01T10:00:00+00:00",
                provenance=Provenance("alpha", 2, 17))  # fmt: skip


def three() -> list[Atom]:
    return [atom("memory/a.md#1", DEPLOY, category="incident"), atom("wiki/tea", TEA, "wiki"),
            atom("manual/cat", CAT, "manual")]  # fmt: skip


def sources(hits: list[Hit]) -> list[str]:
    return [hit.source for hit in hits]


# -- the contract ---------------------------------------------------------------------------


def test_upsert_then_search_finds_the_atom_nearest_first(index: VectorIndex) -> None:
    calls: list[tuple[int, int]] = []
    assert index.upsert(three(), progress=lambda done, total: calls.append((done, total))) == 3
    assert calls[-1] == (3, 3) and all(total == 3 for _, total in calls)
    assert sources(index.search(DEPLOY, k=3))[0] == "memory/a.md#1"  # hybrid, the default
    hits = index.search(DEPLOY, k=3, mode="vector")
    assert sources(hits)[0] == "memory/a.md#1"
    assert all(hit.matched == ("meaning",) for hit in hits)
    first = hits[0]
    assert (first.kind, first.text, first.category) == ("note", DEPLOY, "incident")
    assert first.distance == pytest.approx(0.0, abs=1e-3)
    assert first.score == pytest.approx(1.0, abs=1e-3)
    distances = [hit.distance for hit in hits]
    assert distances == sorted(distances) and len(hits) == 3
    assert all(0.0 - 1e-4 <= d <= 2.0 + 1e-4 for d in distances)


def test_upserting_a_source_again_leaves_one_row_with_the_new_text(index: VectorIndex) -> None:
    index.upsert(three())
    index.upsert([atom("wiki/tea", CAT, "wiki")])
    index.upsert([atom("wiki/tea", DEPLOY, "wiki"), atom("wiki/tea", TEA, "wiki")])  # last wins
    assert index.count() == 3
    hits = index.search(TEA, k=10)
    assert sources(hits).count("wiki/tea") == 1
    assert hits[0].source == "wiki/tea" and hits[0].text == TEA


def test_delete_removes_only_the_named_sources(index: VectorIndex) -> None:
    index.upsert(three())
    assert index.delete(["wiki/tea", "wiki/nothing-here"]) == 1
    assert index.count() == 2
    assert "wiki/tea" not in sources(index.search(TEA, k=10))
    assert index.delete([]) == 0
    assert index.delete(["wiki/tea"]) == 0


def test_kind_filter(index: VectorIndex) -> None:
    index.upsert(three())
    assert sources(index.search(DEPLOY, k=10, kind="wiki")) == ["wiki/tea"]
    assert sources(index.search(DEPLOY, k=10, kind="manual")) == ["manual/cat"]
    assert index.search(DEPLOY, k=10, kind="nothing") == []


def test_quarantine_hides_until_released_and_survives_a_rewrite(index: VectorIndex) -> None:
    index.upsert(three())
    assert index.set_quarantined(["memory/a.md#1", "memory/unknown"], True) == 1
    assert "memory/a.md#1" not in sources(index.search(DEPLOY, k=10))
    assert sources(index.search(DEPLOY, k=10, include_quarantined=True))[0] == "memory/a.md#1"
    index.upsert([atom("memory/a.md#1", DEPLOY + " again", category="incident")])
    assert "memory/a.md#1" not in sources(index.search(DEPLOY, k=10))
    assert index.set_quarantined(["memory/a.md#1"], False) == 1
    assert sources(index.search(DEPLOY, k=10))[0] == "memory/a.md#1"
    assert index.count() == 3


def test_digests_name_what_is_indexed(index: VectorIndex) -> None:
    atoms = three()
    index.upsert(atoms)
    assert index.digests() == {a.source: a.digest() for a in atoms}
    changed = atom("wiki/tea", TEA + " with honey", "wiki")
    index.upsert([changed])
    assert index.digests()["wiki/tea"] == changed.digest() != atoms[1].digest()


def test_hostile_sources_and_kinds_are_values_not_sql(index: VectorIndex) -> None:
    index.upsert([atom(s, f"{TEA} number {i}") for i, s in enumerate(HOSTILE)] + three())
    assert index.count() == len(HOSTILE) + 3
    assert index.delete(["x' OR '1'='1"]) == 1
    assert index.count() == len(HOSTILE) + 2
    deleted = {"x' OR '1'='1", "a\\' OR 1=1 --", '"; DROP TABLE atoms; --'}
    assert index.delete(["a\\' OR 1=1 --", '"; DROP TABLE atoms; --']) == 2
    assert index.set_quarantined(["x'", "nul\0byte"], True) == 2
    kept = set(HOSTILE) - deleted | {a.source for a in three()}
    assert set(index.digests()) == kept
    assert set(sources(index.search(TEA, k=100))) == kept - {"x'", "nul\0byte"}
    assert index.search(TEA, k=100, kind="note' OR '1'='1") == []
    assert index.search(TEA, k=100, kind="wiki\\") == []


def test_an_empty_index_finds_nothing(index: VectorIndex) -> None:
    assert index.search(DEPLOY) == []
    assert index.search(DEPLOY, kind="note", include_quarantined=True) == []
    assert (index.count(), index.digests(), index.delete(["x"])) == (0, {}, 0)
    assert index.set_quarantined(["x"], True) == 0
    assert index.upsert([]) == 0


def test_k_is_clamped_to_1_through_100(index: VectorIndex) -> None:
    index.upsert([atom(f"manual/{i}", f"fact number {i} about topic {i % 7}") for i in range(105)])
    assert len(index.search("fact", k=0)) == 1
    assert len(index.search("fact", k=-5)) == 1
    assert len(index.search("fact", k=3)) == 3
    assert len(index.search("fact", k=1_000)) == 100


def test_embed_is_the_index_s_own_embedder(index: VectorIndex) -> None:
    a, b = index.embed([DEPLOY, DEPLOY])
    assert a == b and math.isclose(sum(x * x for x in a), 1.0, rel_tol=1e-4)


# -- hybrid search: words beside meaning ------------------------------------------------------

# Each case: a query naming an id or a version, the note holding it, and a decoy every embedder
# here puts nearer (it repeats the query's other tokens), which vector mode ranks first.
EXACT = {
    "id": (
        "INC-4821",
        "INC-4821 disk full on the build host",
        "INC-4812, INC-4813 and INC-4814: one inc after another inc, each inc an incident",
    ),
    "version": (
        "Python 3.12",
        "ledger service moved to 3.12 last week",
        "Python 3.9 everywhere: python python python interpreter versions",
    ),
}


def exact_case(index: VectorIndex, case: str) -> str:
    query, exact, decoy = EXACT[case]
    index.upsert([atom("memory/x.md#exact", exact), atom("memory/x.md#decoy", decoy),
                  atom("memory/x.md#other", "INC-4812 checkout returned errors on Python 3.11"),
                  atom("wiki/tea", TEA, "wiki")])  # fmt: skip
    return query


@pytest.mark.parametrize("case", sorted(EXACT))
def test_an_id_or_version_is_found_first_by_its_words(index: VectorIndex, case: str) -> None:
    query = exact_case(index, case)
    by_meaning = index.search(query, k=4, mode="vector")
    assert sources(by_meaning).index("memory/x.md#exact") > 0
    hybrid = index.search(query, k=4, mode="hybrid")
    assert sources(hybrid)[0] == "memory/x.md#exact"
    assert hybrid[0].words == (query.split()[-1],) and hybrid[0].by_meaning
    # Distances stay cosine distances, whichever side found the hit.
    distance = {hit.source: hit.distance for hit in by_meaning}
    assert all(hit.distance == pytest.approx(distance[hit.source], abs=1e-5) for hit in hybrid)
    assert sorted(sources(hybrid)) == sorted(sources(by_meaning))


def test_a_hit_found_only_by_its_words_says_so(index: VectorIndex) -> None:
    query = exact_case(index, "id")
    everything = {hit.source: hit.distance for hit in index.search(query, k=10, mode="vector")}
    assert [hit.source for hit in index.search(query, k=1, mode="vector")] == ["memory/x.md#decoy"]
    (hit,) = index.search(query, k=1)
    assert hit.source == "memory/x.md#exact" and hit.matched == ("INC-4821",)
    assert not hit.by_meaning and hit.distance == pytest.approx(everything[hit.source], abs=1e-5)
    assert 0.0 < hit.distance < 2.0


def test_hybrid_search_holds_the_kind_and_quarantine_filters(index: VectorIndex) -> None:
    index.upsert([atom("memory/n.md#1", "INC-4821 root cause: a full disk"),
                  atom("wiki/incidents", "INC-4821 postmortem and follow-ups", "wiki"),
                  atom("memory/n.md#2", TEA), atom("wiki/tea", TEA, "wiki")])  # fmt: skip
    assert sources(index.search("INC-4821", k=10, kind="wiki")) == ["wiki/incidents", "wiki/tea"]
    notes = index.search("INC-4821", k=10, kind="note")
    assert sources(notes) == ["memory/n.md#1", "memory/n.md#2"]
    assert notes[0].words == ("INC-4821",) and notes[1].words == ()
    assert index.set_quarantined(["memory/n.md#1", "wiki/incidents"], True) == 2
    assert sorted(sources(index.search("INC-4821", k=10))) == ["memory/n.md#2", "wiki/tea"]
    held = index.search("INC-4821", k=10, kind="wiki", include_quarantined=True)
    assert sources(held)[0] == "wiki/incidents" and held[0].words == ("INC-4821",)
    assert index.search("INC-4821", k=10, kind="manual") == []


SYNTAX = ['"INC-4821', "INC-4821 AND zebra", "NOT INC-4821", "-INC-4821", "+INC-4821 ^3",
          "(INC-4821 OR", "text:INC-4821", "INC-4821 ~2 *", "INC-4821 [1 TO 5] {}",
          "INC-4821 \\"]  # fmt: skip


def test_query_syntax_characters_are_read_as_words(index: VectorIndex) -> None:
    exact_case(index, "id")
    for query in SYNTAX:
        hits = index.search(query, k=4)
        assert len(hits) == 4, query
        if query != "text:INC-4821":  # one word there: "text" and the id, side by side
            assert hits[0].source == "memory/x.md#exact" and "INC-4821" in hits[0].words, query
    # No word to look up (stop words and punctuation only): the search is by meaning alone.
    for query in ["AND OR NOT", '"the" (of) * and:']:
        hits = index.search(query, k=4)
        assert len(hits) == 4 and all(hit.matched == ("meaning",) for hit in hits), query
    for query in ['"', "*", "()", ":"]:  # (the fake embedder has no vector for these)
        assert all(hit.matched == ("meaning",) for hit in index.search(query, k=4)), query


@pytest.mark.parametrize("fold", [0, 500], ids=["rows-indexed", "rows-searched-flat"])
def test_a_changed_or_deleted_note_is_not_found_by_its_old_words(
    index: VectorIndex, monkeypatch: pytest.MonkeyPatch, fold: int
) -> None:
    import runtime.memory.fulltext

    # 0: every write is folded into LanceDB's word index at once; 500: new rows wait, flat.
    monkeypatch.setattr(runtime.memory.fulltext, "WORDS_FOLD", fold)
    index.upsert([atom("memory/a.md#1", "INC-4821 disk full"), atom("memory/a.md#2", CAT)])
    assert index.search("INC-4821", k=1)[0].words == ("INC-4821",)
    index.upsert([atom("memory/a.md#1", "the build host ran out of memory")])
    hits = index.search("INC-4821", k=10)
    assert sources(hits) and all(hit.words == () for hit in hits)
    assert sources(index.search("memory build host", k=1)) == ["memory/a.md#1"]
    index.delete(["memory/a.md#1"])
    assert sources(index.search("build host memory", k=10)) == ["memory/a.md#2"]


def test_an_unknown_mode_is_refused(index: VectorIndex) -> None:
    index.upsert(three())
    with pytest.raises(MemoryStoreError, match="mode must be one of hybrid, vector, not 'bm25'"):
        index.search(DEPLOY, mode="bm25")  # type: ignore[arg-type]


# -- the real model's sense of meaning, and the distances replay's thresholds are set from ------

PAIRS: dict[str, list[tuple[str, str]]] = {
    "paraphrase": [
        (DEPLOY, "deployment broke: no space left on device"),
        ("the user prefers short answers", "the user likes replies to be brief"),
        (
            "restart the database before running migrations",
            "run the migrations only after the database has been restarted",
        ),
        ("the API key is stored in the vault", "we keep the API key in the vault"),
    ],
    "related": [
        (DEPLOY, "the build server ran out of memory"),
        ("the user prefers short answers", "the user writes in French"),
        ("restart the database before running migrations", "the database schema has 40 tables"),
        ("the API key is stored in the vault", "rotate credentials every 90 days"),
    ],
    "unrelated": [
        (DEPLOY, "I like green tea"),
        ("the user prefers short answers", "the cat sleeps on the sofa"),
        ("restart the database before running migrations", "Paris is the capital of France"),
        ("the API key is stored in the vault", "it rained all weekend"),
    ],
}


def test_minilm_puts_paraphrases_nearest_and_unrelated_farthest(
    tmp_path: Path, minilm: MiniLMEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    index = open_lance(tmp_path / "index", minilm)
    texts = sorted({text for pairs in PAIRS.values() for pair in pairs for text in pair})
    index.upsert([atom(f"manual/{i}", text) for i, text in enumerate(texts)])
    by_text = {text: f"manual/{i}" for i, text in enumerate(texts)}
    measured: dict[str, list[float]] = {}
    for group, pairs in PAIRS.items():
        for left, right in pairs:
            hits = {hit.source: hit.distance for hit in index.search(left, k=100)}
            measured.setdefault(group, []).append(hits[by_text[right]])
    with capsys.disabled():
        print("\nMiniLM cosine distances (LanceDB, 0..2):")
        for group, values in measured.items():
            print(f"  {group:10} " + " ".join(f"{v:.3f}" for v in values))
    assert max(measured["paraphrase"]) < min(measured["unrelated"])
    assert sum(measured["paraphrase"]) < sum(measured["related"]) < sum(measured["unrelated"])
    deploy = {hit.source: hit.distance for hit in index.search(DEPLOY, k=100)}
    near, far = by_text["deployment broke: no space left on device"], by_text["I like green tea"]
    assert deploy[near] < deploy[far]
    index.close()


NOTES = {
    "cost-east": "The catalog cluster costs $300 a month in us-east-1.",
    "cost-south": "The catalog cluster costs $200 a month in ap-south-1.",
    "py-billing": "The billing team pinned Python to 3.12 for the ledger service.",
    "py-payment": "The payment team pinned Python to 3.9 for the checkout service.",
    "inc-4821": "INC-4821: checkout returned 502s for twelve minutes after a bad deploy.",
    "inc-4812": "INC-4812: checkout latency doubled for an hour after the cache flush.",
    "rev-priya": "Priya Nair reviewed the orders schema migration before it shipped.",
    "rev-tomas": "Tomas Berg reviewed the orders schema migration before it shipped.",
    "disk": "The nightly backup failed because the disk on db-7 was full.",
    "tea": "The team prefers green tea in the morning stand-up.",
    "rotate": "Rotate the API credentials every 90 days and store them in the vault.",
    "oncall": "On-call handover happens on Mondays at 10:00 UTC.",
}
BY_FACT = [("INC-4821", "inc-4821"), ("what happened in INC-4812", "inc-4812"),
           ("how much does the catalog cluster cost in us-east-1", "cost-east"),
           ("catalog cluster $200", "cost-south"), ("who pinned Python 3.9", "py-payment"),
           ("Python 3.12", "py-billing"), ("Priya Nair", "rev-priya"),
           ("did Tomas Berg review the migration", "rev-tomas"), ("db-7", "disk")]  # fmt: skip
BY_MEANING = [("why did the backup not run", "disk"), ("what do we drink in the morning", "tea"),
              ("how often should secrets be changed", "rotate"),
              ("when is the on-call shift handed over", "oncall"),
              ("site went down with gateway errors after a release", "inc-4821")]  # fmt: skip


def test_minilm_hybrid_finds_every_fact_first_and_meaning_as_vector_does(
    tmp_path: Path, minilm: MiniLMEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    index = open_lance(tmp_path / "index", minilm)
    index.upsert([atom(source, text) for source, text in NOTES.items()])
    firsts = {
        (mode, query): index.search(query, k=3, mode=mode)[0].source
        for mode in ("vector", "hybrid")
        for query, _ in BY_FACT + BY_MEANING
    }

    def recall(mode: str, queries: list[tuple[str, str]]) -> float:
        return sum(firsts[mode, query] == want for query, want in queries) / len(queries)

    figures = {kind: f"{recall('vector', qs):.2f} / {recall('hybrid', qs):.2f}"
               for kind, qs in (("fact", BY_FACT), ("meaning", BY_MEANING))}  # fmt: skip
    with capsys.disabled():
        print(f"\nrecall@1 of {len(NOTES)} notes, vector / hybrid: by fact {figures['fact']}, "
              f"by meaning {figures['meaning']}")  # fmt: skip
    assert recall("hybrid", BY_FACT) == 1.0 > recall("vector", BY_FACT)
    assert recall("hybrid", BY_MEANING) == recall("vector", BY_MEANING) == 1.0
    index.close()


# -- LanceDB only -------------------------------------------------------------------------------


def test_the_ann_index_is_built_past_the_threshold_and_search_still_finds(tmp_path: Path) -> None:
    from runtime.memory.lance import LanceIndex, open_lance_index

    index = open_lance_index(tmp_path / "index", fake_embedder(), ann_threshold=300)
    assert isinstance(index, LanceIndex)
    words = [f"w{i}" for i in range(60)]
    pool = itertools.combinations(words, 3)
    atoms = [atom(f"manual/{i}", " ".join(next(pool))) for i in range(299)]
    index.upsert(atoms)
    assert "vector" not in index.indexed()
    index.upsert([atom("manual/last", "w1 w2 w59")])
    assert "vector" in index.indexed()
    assert index.search("w1 w2 w59", k=1)[0].source == "manual/last"
    index.close()
    reopened = open_lance_index(tmp_path / "index", fake_embedder(), ann_threshold=300)
    assert reopened.indexed() == {"vector", "text"} and reopened.count() == 300
    assert reopened.ann_trained_rows() == 300
    more = [atom(f"manual/more-{i}", " ".join(next(pool))) for i in range(299)]
    reopened.upsert(more)
    assert reopened.ann_trained_rows() == 300  # grown, not yet doubled: folded in, not retrained
    reopened.upsert([atom("manual/600", "w3 w4 w58")])
    assert reopened.ann_trained_rows() == 600
    assert [hit.source for hit in reopened.search("w3 w4 w58", k=1)] == ["manual/600"]
    reopened.close()


def test_an_index_built_with_another_embedder_asks_for_reindex(
    tmp_path: Path, minilm: MiniLMEmbedder
) -> None:
    from runtime.memory.lance import open_lance_index

    index = open_lance_index(tmp_path / "index", fake_embedder())
    index.upsert(three())
    index.close()
    with pytest.raises(EngineUnavailableError) as caught:
        open_lance_index(tmp_path / "index", minilm)
    message = str(caught.value)
    assert "fake" in message and minilm.name in message
    assert "mnemara memory reindex --instance" in message and caught.value.store == "index"


def test_dropping_the_index_drops_atoms_and_leaves_memories_alone(
    tmp_path: Path,
) -> None:
    import lancedb
    import pyarrow as pa

    from runtime.memory.lance import drop_lance_index, open_lance_index

    db = lancedb.connect(tmp_path / "index")  # the original mnemara's table, 768-d
    db.create_table("memories", schema=pa.schema([pa.field("vector", pa.list_(pa.float32(), 768))]))
    index = open_lance_index(tmp_path / "index", fake_embedder())
    index.upsert(three())
    index.close()
    drop_lance_index(tmp_path / "index")
    index = open_lance_index(tmp_path / "index", fake_embedder())
    assert index.count() == 0 and index.search(DEPLOY) == []
    index.upsert(three()[:1])
    assert index.count() == 1
    index.close()
    assert sorted(lancedb.connect(tmp_path / "index").list_tables().tables) == ["atoms", "memories"]


def broken(root: Path, pattern: str) -> None:
    files = [p for p in (root / "atoms.lance").rglob(pattern) if p.is_file()]
    assert files, pattern
    for path in files:
        path.write_bytes(b"not a lance file at all" * 3)


@pytest.mark.parametrize("pattern", ["_versions/*", "data/*"])
def test_corrupt_files_are_engine_unavailable_naming_reindex(tmp_path: Path, pattern: str) -> None:
    from runtime.memory.lance import open_lance_index

    root = tmp_path / "index"
    index = open_lance_index(root, fake_embedder())
    index.upsert(three())
    index.close()
    broken(root, pattern)
    with pytest.raises(EngineUnavailableError) as caught:
        reopened = open_lance_index(root, fake_embedder())
        reopened.search(DEPLOY)
    assert caught.value.store == "index" and caught.value.path == root
    assert "mnemara memory reindex" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_an_unusable_directory_is_engine_unavailable(tmp_path: Path) -> None:
    from runtime.memory.lance import open_lance_index

    (tmp_path / "index").write_text("a file where the directory should be")
    with pytest.raises(EngineUnavailableError, match="reindex") as caught:
        open_lance_index(tmp_path / "index", fake_embedder())
    assert caught.value.path == tmp_path / "index"


def test_a_table_made_without_a_word_index_gets_one_from_its_first_writer(
    tmp_path: Path,
) -> None:
    from runtime.memory.fulltext import index_on
    from runtime.memory.lance import open_lance_index

    root = tmp_path / "index"
    index = open_lance_index(root, fake_embedder())
    assert index.indexed() == {"text"}  # made with the table
    exact_case(index, "id")
    index._table.drop_index(index_on(index._table, "text").name)  # as a table of before
    index.close()
    reader = open_lance_index(root, fake_embedder(), create=False)
    assert reader.indexed() == set()  # a reader writes nothing, and searches words flat
    (hit,) = reader.search("INC-4821", k=1)
    assert hit.source == "memory/x.md#exact" and hit.matched == ("INC-4821",)
    reader.close()
    writer = open_lance_index(root, fake_embedder())
    assert writer.indexed() == {"text"} and writer.count() == 4
    assert [hit.source for hit in writer.search("INC-4821", k=1)] == ["memory/x.md#exact"]
    writer.close()


def test_lance_only_type_checks_filter_values(tmp_path: Path) -> None:
    from runtime.memory.lance import open_lance_index

    index = open_lance_index(tmp_path / "index", fake_embedder())
    index.upsert(three())
    with pytest.raises(TypeError):
        index.delete([1])  # type: ignore[list-item]
    index.close()
