"""Search by words beside search by meaning: the query's words, their ranking, and the fusion.

A small embedding model blurs what operators look up most: identifiers, numbers, versions and
names (`INC-4821`, `$300`, `us-east-1`, `Python 3.12`, `Priya Nair`). Hybrid search asks the
index twice, for the atoms nearest the query's vector and for the atoms holding the query's
words ranked by BM25 (LanceDB's full-text index on `text`; the fake ranks them here), and
merges the two lists.

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
  side, which the hybrid builder, taking the query as a string, does not offer.
Ranks need no calibration between a cosine distance and a BM25 score, which share no scale.
One guard is added: a word candidate scoring under WORD_FLOOR of the best word score is left
out of the fusion. It shares only a common word with the query ("status" in "status of
INC-4821"), and rank fusion would otherwise credit it as if it were a match.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, get_args

from runtime.config import SearchMode
from runtime.errors import MemoryStoreError
from runtime.memory.model import Hit

SEARCH_MODES: tuple[str, ...] = get_args(SearchMode)
RRF_K = 60  # the usual constant: a rank's weight fades slowly, no one list dominates
POOL = 30  # candidates taken from each side before fusing (more when k is larger)
WORD_FLOOR = 0.5
MAX_WORDS = 32
MAX_TOKEN = 64  # longer tokens are not indexed (a sha256 in hex is 64)
# Rows the word index has not taken in yet are searched flat; past this many, `optimize`
# folds them in (about 20 ms at 1,000 rows on 2 cores).
WORDS_FOLD = 500
BM25_K1, BM25_B = 1.2, 0.75
# Words too common to tell atoms apart. The index drops them as well (custom_stop_words), so
# both sides agree. "us" is kept: it is the first token of `us-east-1`.
_STOP = (
    "a an and are as at be been but by can could did do does for from had has have how i if "
    "in into is it its me my no not of on or our s she so such t than that the their them "
    "then there these they this to was we were what when where which who why will with would "
    "you your"
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
    """The query's words, each once, stop words left out; at most MAX_WORDS."""
    found: dict[tuple[str, ...], Word] = {}
    for chunk in query.split():
        typed = _EDGES.sub("", chunk)
        parts = tuple(tokens(typed))
        if parts and not all(part in STOP_WORDS for part in parts):
            found.setdefault(parts, Word(typed, parts))
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
    best = max((score for _, score in by_words), default=0.0)
    ranked = sorted(by_words, key=lambda pair: -pair[1])
    strong = [candidate for candidate, score in ranked if score >= WORD_FLOOR * best]
    fused: dict[str, float] = {}
    known: dict[str, Candidate] = {}
    for side in (meaning, strong):
        for rank, candidate in enumerate(side, 1):
            fused[candidate.source] = fused.get(candidate.source, 0.0) + 1.0 / (RRF_K + rank)
            known.setdefault(candidate.source, candidate)
    word_rank = {candidate.source: rank for rank, candidate in enumerate(strong)}
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
    filter the vector side uses (kind, quarantine), applied before ranking."""
    from lancedb.query import BooleanQuery, MatchQuery, Occur, PhraseQuery

    # (mypy reads these pydantic dataclasses as having no defaults, hence the ignores.)
    wanted = BooleanQuery(
        [
            (Occur.SHOULD, PhraseQuery(" ".join(word.tokens), "text"))  # type: ignore[call-arg]
            if len(word.tokens) > 1
            else (Occur.SHOULD, MatchQuery(word.tokens[0], "text"))  # type: ignore[call-arg]
            for word in words
        ]
    )
    query = table.search(wanted, query_type="fts")
    if where is not None:
        query = query.where(where, prefilter=True)
    # `_score` is named: left out, LanceDB adds it anyway and warns on stderr each time.
    rows = query.select(["source", "kind", "text", "category", "vector", "_score"]).limit(k)
    return [
        (
            Candidate(
                row["source"],
                row["kind"],
                row["text"],
                row["category"],
                cosine_distance(vector, row["vector"]),
            ),
            float(row["_score"]),
        )
        for row in rows.to_list()
    ]


def _positions(have: Sequence[str]) -> dict[str, list[int]]:
    at: dict[str, list[int]] = {}
    for i, token in enumerate(have):
        at.setdefault(token, []).append(i)
    return at


def _occurrences(have: Sequence[str], at: Mapping[str, list[int]], needle: tuple[str, ...]) -> int:
    return sum(1 for i in at.get(needle[0], ()) if tuple(have[i : i + len(needle)]) == needle)
