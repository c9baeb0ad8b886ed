"""Search by words beside search by meaning: the query's words, their ranking, and the fusion.

A small embedding model blurs what operators look up most: identifiers, numbers, versions and
names (`INC-4821`, `$300`, `us-east-1`, `Python 3.12`, `Priya Nair`). Hybrid search asks the
index twice, for the atoms nearest the query's vector and for the atoms holding the query's
words ranked by BM25 (LanceDB's full-text index on `text`; the fake ranks them here), and
merges the two lists. The words looked up are those that name something exactly (see
`query_words`); plain words are left to meaning, which handles them better.

The query is read as words, never as a query language. It is cut into words here; a word of
one token becomes a match query and a word of several (`us-east-1`, `3.12`, `INC-4821`)
a phrase query, whose tokens must stand next to each other in that order. Both are typed
LanceDB query objects, so quotes, colons, parentheses, `AND` and `*` are punctuation.

The fusion is reciprocal rank fusion (each list gives 1 / (RRF_K + rank)), written here
rather than taken from LanceDB's hybrid query with its RRF reranker, because:
- the fake index runs this very function, so one conformance suite holds both indexes;
- every hit needs a true cosine distance, which LanceDB's hybrid result gives only for the
  rows its vector side found;
- the word side is a typed query with the same prefilter (kind, quarantine) as the vector
  side, which the hybrid builder, taking the query as a string, does not offer;
- two refinements below, which its reranker does not make.
Ranks need no calibration between a cosine distance and a BM25 score, which share no scale.
The refinements: a word candidate scoring under WORD_FLOOR of the best word score is left
out (it holds only a common word of the query), and equal word scores share a rank (ten
notes saying "kept for 7 days" are equally good matches for "7"; meaning orders them).
Measured with bench/memory_recall.py (240 notes, seed 1): recall@1 by id 0.67 -> 1.00, by
number 0.93 -> 1.00, by meaning unchanged.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, get_args

from runtime.errors import MemoryStoreError
from runtime.instance.config import SearchMode
from runtime.memory.model import Hit

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
RRF_K = 60  # the usual constant: a rank's weight fades slowly, no one list dominates
POOL = 30  # candidates taken from each side before fusing (more when k is larger)
WORD_FLOOR = 0.5
TIE = 1e-4  # word scores this close (relatively) are equal: float32 sums differ in the last bits
MAX_WORDS = 32
MAX_TOKEN = 64  # longer tokens are not indexed (a sha256 in hex is 64)
# Rows the word index has not taken in yet are searched flat; past this many, `optimize`
# folds them in (about 20 ms at 1,000 rows on 2 cores).
WORDS_FOLD = 500
BM25_K1, BM25_B = 1.2, 0.75
# Words too common to tell atoms apart (NLTK's English list, as tokens): a match on "after"
# alone would rank as high as one on an id. The index drops them as well (custom_stop_words),
# so both sides agree. "us" is not one: it is the first token of `us-east-1`.
_STOP = (
    "a about above after again against ain all am an and any are aren as at be because been "
    "before being below between both but by can couldn d did didn do does doesn doing don down "
    "during each few for from further had hadn has hasn have haven having he her here hers "
    "herself him himself his how i if in into is isn it its itself just ll m ma me mightn more "
    "most mustn my myself needn no nor not now o of off on once only or other our ours "
    "ourselves out over own re s same shan she should shouldn so some such t than that the "
    "their theirs them themselves then there these they this those through to too under until "
    "up ve very was wasn we were weren what when where which while who whom why will with won "
    "wouldn y you your yours yourself yourselves"
)
STOP_WORDS = frozenset(_STOP.split())
_TOKEN = re.compile(r"[^\W_]+")  # runs of letters and digits, as LanceDB's "simple" tokenizer
_EDGES = re.compile(r"^[\W_]+|[\W_]+$")


@dataclass(frozen=True)
class Word:
    """A query word: as typed (outer punctuation trimmed), and the tokens it is matched by."""

    typed: str
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class Candidate:
    """An atom one side of the search found, with its cosine distance to the query."""

    source: str
    kind: str
    text: str
    category: str
    distance: float


def check_mode(mode: str) -> None:
    if mode not in SEARCH_MODES:
        raise MemoryStoreError(
            f"search mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}"
        )


def pool_size(k: int) -> int:
    return max(k, POOL)


def tokens(text: str) -> list[str]:
    """Lower-case runs of letters and digits, accents folded: what the word index keys on."""
    folded = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    return [token for token in _TOKEN.findall(folded.lower()) if len(token) <= MAX_TOKEN]


def query_words(query: str) -> list[Word]:
    """The query's words worth looking up as written, each once; at most MAX_WORDS.

    A word is what stands between spaces, outer punctuation trimmed (`$300` is `300`), stop
    words at its ends dropped (`Nair's` is `nair`). Only words that name something exactly are
    kept: those holding a digit (`300`, `3.12`, `db-7`), several tokens (`us-east-1`,
    `INC-4821`, `follow-ups`), a capital past the first letter (`TLS`, `PostgreSQL`), or a
    leading capital (`Nair`, `Python`) unless the word opens the query and a lower-case word
    follows (`Latest build of ...` is sentence case). Plain words are left to the meaning
    side: measured on bench/memory_recall.py's paraphrases, matching them ("go live" against
    `Go 1.21`, "these days" against "kept for 30 days") cost recall by meaning."""
    chunks = [_EDGES.sub("", chunk) for chunk in query.split()]
    found: dict[tuple[str, ...], Word] = {}
    for at, typed in enumerate(chunks):
        parts = tokens(typed)
        while parts and parts[-1] in STOP_WORDS:
            parts.pop()
        while parts and parts[0] in STOP_WORDS:
            parts.pop(0)
        sentence_case = at == 0 and at + 1 < len(chunks) and chunks[1][:1].islower()
        named = (
            len(parts) > 1
            or any(c.isdigit() for c in typed)
            or any(c.isupper() for c in typed[1:])
            or (typed[:1].isupper() and not sentence_case)
        )
        if parts and named:
            found.setdefault(tuple(parts), Word(typed, tuple(parts)))
    return list(found.values())[:MAX_WORDS]


def words_in(text: str, words: Sequence[Word]) -> tuple[str, ...]:
    """The words (as typed) that `text` contains, each as consecutive tokens."""
    have = tokens(text)
    at = _positions(have)
    return tuple(word.typed for word in words if _occurrences(have, at, word.tokens))


def rank_by_words(texts: Mapping[str, str], words: Sequence[Word]) -> list[tuple[str, float]]:
    """(source, BM25 score) of the texts holding any of the words, best first (the fake's
    stand-in for LanceDB's full-text index)."""
    docs = {source: tokens(text) for source, text in texts.items()}
    if not docs or not words:
        return []
    counts: dict[str, list[int]] = {}
    for source, have in docs.items():
        at = _positions(have)
        counts[source] = [_occurrences(have, at, word.tokens) for word in words]
    average = sum(len(have) for have in docs.values()) / len(docs) or 1.0
    holding = [sum(1 for row in counts.values() if row[i]) for i in range(len(words))]
    idf = [math.log(1 + (len(docs) - n + 0.5) / (n + 0.5)) for n in holding]
    scored = []
    for source, row in counts.items():
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(docs[source]) / average)
        score = sum(idf[i] * tf * (BM25_K1 + 1) / (tf + norm) for i, tf in enumerate(row) if tf)
        if score > 0:
            scored.append((source, score))
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def fuse(
    meaning: Sequence[Candidate],
    by_words: Sequence[tuple[Candidate, float]],
    words: Sequence[Word],
    k: int,
) -> list[Hit]:
    """The k best of both sides by reciprocal rank fusion.

    `meaning` is nearest first; `by_words` pairs each candidate with its word score. A hit is
    marked found by meaning when it is among the k nearest (vector mode would return it), and
    carries the query's words its text holds."""
    fused: dict[str, float] = {}
    known: dict[str, Candidate] = {}
    word_rank = _word_ranks(by_words)
    for rank, candidate in enumerate(meaning, 1):
        fused[candidate.source] = 1.0 / (RRF_K + rank)
        known[candidate.source] = candidate
    for candidate, _ in by_words:
        if candidate.source in word_rank:
            share = 1.0 / (RRF_K + word_rank[candidate.source])
            fused[candidate.source] = fused.get(candidate.source, 0.0) + share
            known.setdefault(candidate.source, candidate)
    both = word_rank.keys() & {candidate.source for candidate in meaning}

    def order(source: str) -> tuple[float, float, float, str]:
        # A tie goes first to a hit both sides found, then, between two such hits, to the
        # better word rank: of two near-duplicates the one holding the asked-for id,
        # number or name (their ranks by meaning are often a coin toss).
        return (
            -fused[source],
            word_rank[source] if source in both else math.inf,
            known[source].distance,
            source,
        )

    near = {candidate.source for candidate in meaning[:k]}  # what vector mode would return
    best_first = sorted(fused, key=order)
    return [
        Hit(
            c.source,
            c.kind,
            c.text,
            c.category,
            c.distance,
            c.source in near,
            words_in(c.text, words),
        )
        for c in (known[source] for source in best_first[:k])
    ]


def _word_ranks(by_words: Sequence[tuple[Candidate, float]]) -> dict[str, int]:
    """Source -> rank (1 is best) of the word candidates scoring at least WORD_FLOOR of the
    best. Equal scores share a rank (1, 1, 1, 4): ten notes holding the same "7" in the same
    words are equally good word matches, and their order must come from meaning, not from
    the word index's order of ties."""
    ranked = sorted(by_words, key=lambda pair: -pair[1])
    best = ranked[0][1] if ranked else 0.0
    ranks: dict[str, int] = {}
    block_score, block_rank = math.inf, 0
    for position, (candidate, score) in enumerate(ranked, 1):
        if score < WORD_FLOOR * best:
            break
        if score < block_score * (1 - TIE):
            block_score, block_rank = score, position
        ranks.setdefault(candidate.source, block_rank)
    return ranks


def cosine_distance(a: Sequence[float], b: Sequence[float]) -> float:
    """1 - cosine similarity, as LanceDB's "cosine" distance type computes it."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return 1.0 - dot / norms if norms else 1.0


def index_on(table: Any, column: str) -> Any:
    """A LanceDB table's index on `column`, or None."""
    return next((index for index in table.list_indices() if column in index.columns), None)


def index_words(table: Any) -> None:
    """Build the word index on a LanceDB table that has none (as one made before it was).

    Tokenized as `tokens` is: letters and digits split at punctuation, lower case, accents
    folded, our stop words; no stemming (a version or a name is looked up as written);
    positions kept for phrase queries. About 12 ms for 1,000 notes on 2 cores."""
    from lancedb.index import FTS

    if index_on(table, "text") is not None:
        return
    config = FTS(
        with_position=True,
        base_tokenizer="simple",
        lower_case=True,
        stem=False,
        remove_stop_words=True,
        custom_stop_words=sorted(STOP_WORDS),
        ascii_folding=True,
        max_token_length=MAX_TOKEN,
    )
    table.create_index("text", config=config)


def keep_words_indexed(table: Any) -> None:
    """After a write: the word index built if missing, unindexed rows folded in past a few."""
    words = index_on(table, "text")
    if words is None:
        index_words(table)
    elif words.num_unindexed_rows > WORDS_FOLD:
        table.optimize(cleanup_older_than=timedelta(hours=1))


def match_words(
    table: Any, words: Sequence[Word], vector: Sequence[float], k: int, where: Any
) -> list[tuple[Candidate, float]]:
    """The rows of a LanceDB table holding any of the words, best BM25 score first, each with
    its cosine distance to `vector` computed from its stored vector. `where` is the typed
    filter the vector side uses (kind, quarantine), applied before ranking.

    A table without a word index (one made before it, opened by a reader, which writes
    nothing) is ranked here, as the fake ranks: LanceDB's flat word search of an unindexed
    table neither lower-cases nor folds accents, so `INC-4821` would miss `inc-4821`."""
    columns = ["source", "kind", "text", "category", "vector"]
    if index_on(table, "text") is None:
        query = table.search() if where is None else table.search().where(where)
        rows = {row["source"]: row for row in query.select(columns).limit(None).to_list()}
        ranked = rank_by_words({source: row["text"] for source, row in rows.items()}, words)
        scored = [(rows[source], score) for source, score in ranked[:k]]
    else:
        query = table.search(_any_of(words), query_type="fts")
        if where is not None:
            query = query.where(where, prefilter=True)
        # `_score` is named: left out, LanceDB adds it anyway and warns on stderr each time.
        found = query.select([*columns, "_score"]).limit(k).to_list()
        scored = [(row, float(row["_score"])) for row in found]
    return [
        (
            Candidate(
                row["source"],
                row["kind"],
                row["text"],
                row["category"],
                cosine_distance(vector, row["vector"]),
            ),
            score,
        )
        for row, score in scored
    ]


def _any_of(words: Sequence[Word]) -> Any:
    """A LanceDB query for any of the words: a match for a one-token word, else a phrase."""
    from lancedb.query import BooleanQuery, MatchQuery, Occur, PhraseQuery

    # (mypy reads these pydantic dataclasses as having no defaults, hence the ignores.)
    return BooleanQuery(
        [
            (Occur.SHOULD, PhraseQuery(" ".join(word.tokens), "text"))  # type: ignore[call-arg]
            if len(word.tokens) > 1
            else (Occur.SHOULD, MatchQuery(word.tokens[0], "text"))  # type: ignore[call-arg]
            for word in words
        ]
    )


def _positions(have: Sequence[str]) -> dict[str, list[int]]:
    at: dict[str, list[int]] = {}
    for i, token in enumerate(have):
        at.setdefault(token, []).append(i)
    return at


def _occurrences(have: Sequence[str], at: Mapping[str, list[int]], needle: tuple[str, ...]) -> int:
    return sum(1 for i in at.get(needle[0], ()) if tuple(have[i : i + len(needle)]) == needle)
