"""The values memory deals in: atoms (what is remembered), search hits, graph nodes, provenance.

An atom is one unit of memory with a stable `source` key: a note block
(`memory/2026-12-01.md#3f2a9c0b1d7e`) or a wiki page (`wiki/deploy/checklist`). The index
upserts by source, so a page written twice is one row; replay and quarantine name atoms by
source too. (The original's manual index entries become notes when an instance migrates.)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Literal

AtomKind = Literal["note", "wiki"]


@dataclass(frozen=True)
class Provenance:
    """Who wrote a fact: the panel, its epoch (host restarts of the panel) and the turn's row id."""

    panel: str
    epoch: int = 0
    turn: int | None = None

    def render(self) -> str:
        turn = "-" if self.turn is None else str(self.turn)
        return f"panel={self.panel} epoch={self.epoch} turn={turn}"


@dataclass(frozen=True)
class Atom:
    source: str
    kind: AtomKind
    text: str
    category: str = ""
    written_at: str = ""  # ISO 8601 as written in the file ("" when unknown)
    payload: dict[str, Any] = field(default_factory=dict)
    provenance: Provenance | None = None

    def digest(self) -> str:
        """A hash of what the index embeds: an unchanged atom is not embedded again."""
        return hashlib.sha256(f"{self.kind}\0{self.category}\0{self.text}".encode()).hexdigest()


MEANING = "meaning"


@dataclass(frozen=True)
class Hit:
    """A search result and why it was found.

    `distance` is the cosine distance between the query's vector and the atom's (0 same,
    1 unrelated, 2 opposite), for every hit, those found only by their words included.
    `by_meaning` says the vector side of the search found it; `words` are the query's words
    (as typed) that its text contains, looked for in hybrid search only.
    """

    source: str
    kind: str
    text: str
    category: str
    distance: float
    by_meaning: bool = True
    words: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        """Cosine similarity, 1 - distance: 1 is the same meaning."""
        return 1.0 - self.distance

    @property
    def matched(self) -> tuple[str, ...]:
        """Why it matched, for display: "meaning" first when found by meaning, then the words."""
        return (MEANING,) * self.by_meaning + self.words

    def why(self) -> str:
        """`meaning, words: us-east-1 300`: how it was found, in one line."""
        words = ["words: " + " ".join(self.words)] if self.words else []
        return ", ".join([MEANING] * self.by_meaning + words)


@dataclass(frozen=True)
class GraphNode:
    id: str
    label: str
    properties: dict[str, Any]
    created_at: str = ""


@dataclass(frozen=True)
class QueryResult:
    columns: list[str]
    rows: list[dict[str, Any]]


def note_source(day_file: str, block: str, occurrence: int = 1) -> str:
    """The stable source of a note block: its file name and a hash of the block as written.

    A block written again word for word in the same second (an agent's retry, a script's
    repeat) is a second note: its `occurrence` in the day file (2, 3, ...) goes into the hash,
    so archiving one of them never hides the other. Day files are append-only, so a block's
    occurrence never changes."""
    keyed = block if occurrence == 1 else f"{block}\0{occurrence}"
    return f"memory/{day_file}#{hashlib.sha256(keyed.encode()).hexdigest()[:12]}"
