"""The replay pass's plan: which recent notes repeat each other, which recur as a pattern.

`plan_replay` reads the notes of the last `days` and the wiki, embeds them, and decides,
writing nothing:

1. near-duplicates: notes within DUPLICATE_DISTANCE of each other that state the same facts
   (runtime/memory/facts.py); the longest (then the oldest) of a group is kept, the others
   are to be archived (never one the operator restored). They are set aside before
   clustering, so a restatement does not count as a recurrence, and a re-run after the
   archive sees the same clusters. Two notes that close whose facts differ (a version, a
   price, a region, a name) are both kept and drafted as a pair to reconcile: the embedder
   blurs exactly what tells them apart;
2. patterns: clusters of at least `threshold` notes (average linkage, CLUSTER_DISTANCE);
3. the graph's entities around each pattern's notes (`memory_entry` -applies_to- `entity`);
4. whether a wiki page already covers a pattern (within COVERED_DISTANCE of its centroid);
5. which patterns are `threshold` or more self-observations (a role-amendment draft).

runtime/memory/replay_write.py renders and writes what the plan says (`apply_replay`).
The policy doc (`replay_policy_path`, else `<instance>/wiki/replay_policy.md`) may set the
defaults of `days` and `threshold`, between config.json's defaults and the command's flags.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from runtime.memory.duplicates import Conflict, Duplicate, find_duplicates
from runtime.memory.engines import GraphEngine, database_path
from runtime.memory.figures import rounded
from runtime.memory.model import Atom
from runtime.memory.protocols import GraphStore, NoteStore, Progress, WikiStore
from runtime.memory.slugs import suggest_slug

# Cosine distances (LanceDB's: 1 - dot of unit vectors, 0 same .. 2 opposite), calibrated for
# the built-in all-MiniLM-L6-v2 (int8) by tests/runtime/memory/test_replay.py's labelled corpus
# (test_thresholds_separate_the_labelled_pairs). Measured there, 2026-12:
#   restatements of one sentence (a word or two changed)     0.002 - 0.031
#   paraphrases, and different notes on one topic (pairs)   0.15  - 0.59
#   average-linkage merge heights within one topic           0.24  - 0.54 (0.61 loosely worded)
#   first merge of a related but different topic             0.62  (CI cache vs "CI runs tests")
#   unrelated notes                                          0.72  - 1.02
#   a wiki page on a cluster's topic, to the centroid        0.19
#   a page on a neighbouring topic (deploy checklist/disk)   0.51; unrelated pages 0.69+
# MiniLM spreads one topic far wider than nomic-embed-text, whose 0.35/0.10 the original used:
# at 0.35 each of our test topics would fall apart into singletons.
DUPLICATE_DISTANCE = 0.08  # restatements <= 0.031, paraphrases >= 0.15
CLUSTER_DISTANCE = 0.57  # same topic <= 0.54, neighbouring topics >= 0.62
COVERED_DISTANCE = 0.35  # covering page 0.19, neighbouring page 0.51
TOP_ENTITIES = 5
EMBED_CHUNK = 64
SELF_OBSERVATION = "self_observation"

Embed = Callable[[Sequence[str]], list[list[float]]]

_CAUSAL = re.compile(r"\b(because|caused|causes|led to|leads to|results? in|due to)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@dataclass(frozen=True)
class Pattern:
    """A cluster of at least `threshold` notes, with what replay drafts from it."""

    members: tuple[Atom, ...]  # oldest first
    representative: Atom  # the member nearest the centroid
    slug: str  # suggested wiki page name
    name: str  # file stem of its drafts: slug plus a hash of the member sources
    spread: float  # mean distance between members
    covered_by: str | None  # a wiki page already on this topic
    entities: tuple[tuple[str, int], ...]  # graph entities the members apply to, with counts
    causal: tuple[str, ...]  # member sentences that say why
    self_observations: int
    amend: bool

    @property
    def proposal(self) -> str | None:
        return None if self.covered_by else f"wiki_proposals/{self.name}.md"

    @property
    def amendment(self) -> str | None:
        return f"role_proposals/replay-{self.name}.md" if self.amend else None


@dataclass(frozen=True)
class ReplayPlan:
    at: datetime
    since: datetime
    days: int
    threshold: int
    atoms: int  # distinct notes clustered (near-duplicates left out)
    pages: int
    patterns: tuple[Pattern, ...]
    duplicates: tuple[Duplicate, ...]  # to archive now
    archived_before: tuple[str, ...]  # near-duplicates of this window archived earlier
    remarks: tuple[str, ...]
    conflicts: tuple[Conflict, ...] = ()  # near-duplicates whose facts differ: both kept
    read: int = 0  # notes of the window read (archived ones are not read)

    @property
    def digest(self) -> str:
        return f"sleep/{self.at.date().isoformat()}.md"

    @property
    def proposals(self) -> list[str]:
        return [p.proposal for p in self.patterns if p.proposal]

    @property
    def reconciliations(self) -> list[str]:
        return [c.proposal for c in self.conflicts]

    @property
    def amendments(self) -> list[str]:
        return [p.amendment for p in self.patterns if p.amendment]

    @property
    def archived(self) -> list[str]:
        """Every near-duplicate of the window set aside, by this run or an earlier one."""
        return sorted({*self.archived_before, *(d.drop for d in self.duplicates)})


def plan_replay(
    notes: NoteStore,
    wiki: WikiStore,
    embed: Embed,
    graph: GraphStore | None,
    *,
    days: int,
    threshold: int,
    now: datetime,
    progress: Progress | None = None,
    graph_skipped: str = "the graph is not available",
) -> ReplayPlan:
    """What a replay of the notes since `now - days` would write (reads, never writes)."""
    since = now - timedelta(days=days)
    atoms = sorted(notes.atoms(since), key=lambda a: (a.written_at, a.source))
    pages = wiki.atoms()
    vectors = _embed_all(embed, [a.text for a in atoms] + [p.text for p in pages], progress)
    page_vectors = vectors[len(atoms) :]
    duplicates, conflicts, kept = find_duplicates(
        atoms, vectors[: len(atoms)], DUPLICATE_DISTANCE, notes.restored()
    )
    clusters = cluster_vectors([vectors[i] for i in kept], CLUSTER_DISTANCE)
    remarks: list[str] = []
    if graph is None:
        remarks.append(f"graph skipped: {graph_skipped}")
    patterns = []
    for cluster in clusters:
        if len(cluster) < threshold:
            continue
        members = [kept[i] for i in cluster]
        patterns.append(
            _pattern(
                [atoms[i] for i in members],
                [vectors[i] for i in members],
                pages,
                page_vectors,
                graph,
                threshold,
                remarks,
            )
        )
    cutoff_day = since.date().isoformat()
    earlier = [s for s in notes.archived() if _source_day(s) >= cutoff_day]
    return ReplayPlan(
        at=now,
        since=since,
        days=days,
        threshold=threshold,
        atoms=len(kept),
        pages=len(pages),
        patterns=tuple(patterns),
        duplicates=tuple(duplicates),
        archived_before=tuple(sorted(earlier)),
        remarks=tuple(dict.fromkeys(remarks)),
        conflicts=tuple(conflicts),
        read=len(atoms),
    )


def _embed_all(embed: Embed, texts: list[str], progress: Progress | None) -> Any:
    import numpy as np

    if not texts:
        return np.zeros((0, 1))
    rows: list[list[float]] = []
    for start in range(0, len(texts), EMBED_CHUNK):
        rows += embed(texts[start : start + EMBED_CHUNK])
        if progress is not None:
            progress(len(rows), len(texts))
    return np.array(rows, dtype=np.float64).reshape(len(texts), -1)


def cluster_vectors(vectors: Sequence[Any], limit: float) -> list[list[int]]:
    """Average-linkage clusters: merge the two nearest clusters while the mean distance
    between their members is at most `limit`. Returns index lists, each sorted, ordered by
    their first index.

    Average linkage rather than greedy or single linkage: single linkage chains one topic
    into the next through a note that touches both, and greedy assignment depends on which
    note comes first. Ties go to the lowest indices (argmin's order over the row-major
    matrix), so the result depends only on the order of the input, which callers fix by
    (written_at, source). Cost is O(n^2) memory and O(n^3) worst-case time: fine for the
    few hundred notes of a replay window (measured: 1,000 notes 0.4 s, 2,000 notes 3 s).
    """
    import numpy as np

    n = len(vectors)
    if n == 0:
        return []
    matrix = np.array(vectors, dtype=np.float64)
    distance = 1.0 - matrix @ matrix.T
    np.fill_diagonal(distance, np.inf)
    sizes = [1] * n
    members: dict[int, list[int]] = {i: [i] for i in range(n)}
    while len(members) > 1:
        flat = int(distance.argmin())
        a, b = divmod(flat, n)
        if distance[a, b] > limit:
            break
        a, b = min(a, b), max(a, b)
        # Lance-Williams update for average linkage: the merged cluster's mean distance to
        # every other cluster is the size-weighted mean of its two parts' distances.
        merged = (sizes[a] * distance[a] + sizes[b] * distance[b]) / (sizes[a] + sizes[b])
        distance[a, :] = merged
        distance[:, a] = merged
        distance[a, a] = np.inf
        distance[b, :] = np.inf
        distance[:, b] = np.inf
        sizes[a] += sizes[b]
        members[a] += members.pop(b)
    return sorted((sorted(group) for group in members.values()), key=lambda g: g[0])


def _pattern(
    members: list[Atom],
    vectors: list[Any],
    pages: list[Atom],
    page_vectors: Any,
    graph: GraphStore | None,
    threshold: int,
    remarks: list[str],
) -> Pattern:
    import numpy as np

    matrix = np.array(vectors)
    centroid = matrix.sum(axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    to_centroid = 1.0 - matrix @ centroid
    representative = members[int(to_centroid.argmin())]
    pair = 1.0 - matrix @ matrix.T
    count = len(members)
    spread = float((pair.sum() - np.trace(pair)) / (count * (count - 1))) if count > 1 else 0.0
    covered_by = None
    if len(pages):
        page_distance = 1.0 - page_vectors @ centroid
        nearest = int(page_distance.argmin())
        if page_distance[nearest] <= COVERED_DISTANCE:
            covered_by = pages[nearest].source
    slug = suggest_slug(representative.text, words=6).replace("/", "-") or "pattern"
    sources = "\n".join(sorted(a.source for a in members))
    name = f"{slug}-{hashlib.sha256(sources.encode()).hexdigest()[:8]}"
    selves = sum(1 for a in members if a.category == SELF_OBSERVATION)
    return Pattern(
        members=tuple(members),
        representative=representative,
        slug=slug,
        name=name,
        spread=rounded(max(0.0, spread), 3),  # a mean distance: never below zero
        covered_by=covered_by,
        entities=graph_entities(graph, members, remarks) if graph is not None else (),
        causal=causal_sentences(members),
        self_observations=selves,
        amend=selves >= threshold,
    )


def graph_entities(
    graph: GraphStore, members: Sequence[Atom], remarks: list[str]
) -> tuple[tuple[str, int], ...]:
    """The entities the members' `memory_entry` nodes apply to, most referred first."""
    counts: Counter[str] = Counter()
    missing = 0
    try:
        for atom in members:
            found = graph.match("memory_entry", {"source_path": atom.source}, limit=1)
            if not found:
                missing += 1
                continue
            for node in graph.neighbors(found[0].id, depth=1):
                if node.label == "entity":
                    counts[str(node.properties.get("ref", node.id))] += 1
    except Exception as exc:  # the graph is an extra: its failure leaves patterns unaugmented
        remarks.append(f"graph skipped: {exc}")
        return ()
    if missing:
        remarks.append("some notes are not in the graph; `mnemara memory graph rebuild` links them")
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return tuple(ranked[:TOP_ENTITIES])


def causal_sentences(members: Sequence[Atom], most: int = 3) -> tuple[str, ...]:
    """The first sentence of each member that says why (because, led to, ...), at most 3."""
    found: list[str] = []
    for atom in members:
        body = atom.text.split("\n\n", 1)[0]  # the text, not the payload's fields
        for sentence in _SENTENCE.split(" ".join(body.split())):
            if _CAUSAL.search(sentence):
                found.append(sentence[:160])
                break
    return tuple(found[:most])


def _source_day(source: str) -> str:
    """`memory/2026-12-01.md#ab12` -> `2026-12-01` ("" for a source of another shape)."""
    head = source.removeprefix("memory/").split("#", 1)[0]
    return head.removesuffix(".md") if head.endswith(".md") else ""


# -- reading the graph ---------------------------------------------------------------------------


def open_graph_read_only(root: Path, engine: GraphEngine) -> GraphStore | None:
    """The graph under `root` opened read-only (a dry run leaves every byte alone), or None
    when there is none yet. A graph a running host holds for writing raises
    EngineUnavailableError."""
    from runtime.memory.graph import open_graph

    if not database_path(root, engine).exists():
        return None
    return open_graph(root, engine, read_only=True)
