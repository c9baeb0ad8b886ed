"""The search index on LanceDB: the `atoms` table of an index directory, one row per source.

Sync API only: `Memory.run` calls it from a worker thread, one call at a time per instance.
The original mnemara's table in the same directory (`memories`, 768-d nomic vectors) is never
opened or dropped here; migration decides what to do with it.

Filters are typed expressions (lance_filters.py), never text pasted into SQL.

A full-text index on `text` answers hybrid search's words (fulltext.py); a writer builds it
with the table or on opening an older one. LanceDB searches rows it lacks yet flat.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from runtime.errors import EngineUnavailableError
from runtime.instance.config import SearchMode
from runtime.memory.fulltext import (
    Candidate,
    check_mode,
    fuse,
    index_on,
    index_words,
    keep_words_indexed,
    match_words,
    pool_size,
    query_words,
)
from runtime.memory.lance_filters import among, is_quarantined, where_rows
from runtime.memory.model import Atom, Hit
from runtime.memory.protocols import Embedder, Progress

TABLE = "atoms"
EMBEDDER_KEY = b"mnemara.embedder"
DIMS_KEY = b"mnemara.dims"
TRAINED_KEY = b"mnemara.ann_trained_rows"
# Below this many rows a flat scan is exact and fast enough, and IVF's k-means has too few
# rows per partition to train well. Measured on 2 cores (384-d, k=5, prefiltered): flat 6 ms
# at 5,000 rows but 30 ms at 20,000; IVF_FLAT 3-4 ms at both, built in 0.2 s at 5,000.
ANN_THRESHOLD = 5_000
EMBED_BATCH = 64
WRITE_BATCH = 1_024
MAX_K = 100


class LanceIndex:
    """A `VectorIndex` over one LanceDB table; see `open_lance_index`."""

    def __init__(
        self, root: Path, embedder: Embedder, db: Any, ann_threshold: int, writable: bool = True
    ) -> None:
        self.root = root
        self.embedder = embedder
        self.ann_threshold = ann_threshold
        self.writable = writable  # readers build no index on open
        self._db = db
        self._table: Any = None  # None until the first write when the dims are not yet known

    # -- the protocol ------------------------------------------------------------------

    def upsert(self, atoms: Sequence[Atom], progress: Progress | None = None) -> int:
        latest = list({atom.source: atom for atom in atoms}.values())  # a source once, last wins
        # Shortest first: each embedding batch then pads to texts of about its own length.
        latest.sort(key=lambda atom: len(atom.text))
        done = 0
        for start in range(0, len(latest), WRITE_BATCH):
            chunk = latest[start : start + WRITE_BATCH]
            vectors: list[list[float]] = []
            for first in range(0, len(chunk), EMBED_BATCH):
                texts = [atom.text for atom in chunk[first : first + EMBED_BATCH]]
                vectors += self.embedder.embed(texts)
                done += len(texts)
                if progress:
                    progress(done, len(latest))
            with self._guard():
                self._write(chunk, vectors)
        if latest:
            with self._guard():
                self._maintain()
        return len(latest)

    def delete(self, sources: Sequence[str]) -> int:
        if self._table is None or not sources:
            return 0
        with self._guard():
            result = self._table.delete(among(sources))
        return int(result.num_deleted_rows)

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        kind: str | None = None,
        include_quarantined: bool = False,
        mode: SearchMode = "hybrid",
    ) -> list[Hit]:
        check_mode(mode)
        if self._table is None:
            return []
        (vector,) = self.embedder.embed([query])
        wanted = max(1, min(k, MAX_K))
        words = query_words(query) if mode == "hybrid" else []
        where = where_rows(kind, include_quarantined)
        with self._guard():
            if not words:  # vector mode, or no word in the query names something exactly
                near = self._nearest(vector, wanted, where)
                return [Hit(c.source, c.kind, c.text, c.category, c.distance) for c in near]
            pool = pool_size(wanted)
            near = self._nearest(vector, pool, where)
            by_words = match_words(self._table, words, vector, pool, where)
        return fuse(near, by_words, words, wanted)

    def digests(self) -> dict[str, str]:
        if self._table is None:
            return {}
        with self._guard():
            rows = self._table.search().select(["source", "digest"]).limit(None).to_list()
        return {row["source"]: row["digest"] for row in rows}

    def set_quarantined(self, sources: Sequence[str], quarantined: bool) -> int:
        if self._table is None or not sources:
            return 0
        with self._guard():
            result = self._table.update(where=among(sources), values={"quarantined": quarantined})
        return int(result.rows_updated)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embedder.embed(texts)

    def count(self) -> int:
        if self._table is None:
            return 0
        with self._guard():
            return int(self._table.count_rows())

    def close(self) -> None:
        self._table = None
        self._db = None

    # -- beyond the protocol -------------------------------------------------------------

    def indexed(self) -> set[str]:
        """The columns with an index: "vector" (ANN, past the threshold), "text" (words)."""
        if self._table is None:
            return set()
        with self._guard():
            return {column for index in self._table.list_indices() for column in index.columns}

    def ann_trained_rows(self) -> int:
        """The row count the ANN index was last trained at (0 when there is none)."""
        if self._table is None:
            return 0
        with self._guard():
            return self._trained_rows()

    # -- inside ----------------------------------------------------------------------------

    def _write(self, atoms: list[Atom], vectors: list[list[float]]) -> None:
        import pyarrow as pa

        if self._table is None:
            self._table = self._create(len(vectors[0]))
        # A rewrite keeps the source's quarantine: the operator releases it, not a re-index.
        held = self._table.search().where(among([a.source for a in atoms]) & is_quarantined())
        kept = {row["source"] for row in held.select(["source"]).limit(None).to_list()}
        rows = [
            _row(atom, vector, atom.source in kept)
            for atom, vector in zip(atoms, vectors, strict=True)
        ]
        data = pa.Table.from_pylist(rows, schema=self._table.schema)
        (
            self._table.merge_insert("source")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute(data)
        )

    def _nearest(self, vector: list[float], k: int, where: Any) -> list[Candidate]:
        query = self._table.search(vector, vector_column_name="vector").distance_type("cosine")
        if where is not None:
            query = query.where(where, prefilter=True)
        rows = query.select(["source", "kind", "text", "category", "_distance"]).limit(k)
        return [
            Candidate(row["source"], row["kind"], row["text"], row["category"], row["_distance"])
            for row in rows.to_list()
        ]

    def _maintain(self) -> None:
        """Build the ANN index past the threshold; fold new rows in, rebuild when it has grown."""
        from lancedb.index import IvfFlat

        keep_words_indexed(self._table)
        rows = int(self._table.count_rows())
        vectors = index_on(self._table, "vector")
        if rows < self.ann_threshold:
            if self._table.stats()["fragment_stats"]["num_small_fragments"] > 64:
                self._table.optimize(cleanup_older_than=timedelta(hours=1))
            return
        # Retrained when the table has doubled since the last build: the partitions' centroids
        # were fitted to the rows of then. The size of then is kept on the vector column.
        if vectors is None or rows >= 2 * self._trained_rows():
            # IVF_FLAT keeps exact cosine distances inside the probed partitions, which replay's
            # thresholds rely on; PQ would blur them. sqrt(rows) partitions is the usual choice.
            partitions = max(1, round(math.sqrt(rows)))
            self._table.create_index(
                "vector",
                config=IvfFlat(distance_type="cosine", num_partitions=partitions),
                replace=True,
            )
            self._table.update_field_metadata(
                {"path": "vector", "metadata": {TRAINED_KEY.decode(): str(rows)}}
            )
            return
        unindexed = vectors.num_unindexed_rows
        if unindexed > max(1_000, rows // 10):
            # Folds unindexed rows into the index (without retraining) and compacts fragments.
            self._table.optimize(cleanup_older_than=timedelta(hours=1))

    def _trained_rows(self) -> int:
        metadata = self._table.schema.field("vector").metadata or {}
        return int(metadata.get(TRAINED_KEY, b"0") or 0)

    def _create(self, dims: int) -> Any:
        import pyarrow as pa

        schema = pa.schema(
            [
                pa.field("source", pa.string(), nullable=False),
                pa.field("kind", pa.string()),
                pa.field("text", pa.string()),
                pa.field("category", pa.string()),
                pa.field("written_at", pa.string()),
                pa.field("digest", pa.string()),
                pa.field("panel", pa.string()),
                pa.field("epoch", pa.int64()),
                pa.field("turn", pa.int64(), nullable=True),
                pa.field("quarantined", pa.bool_()),
                pa.field("vector", pa.list_(pa.float32(), dims)),
            ],
            metadata={EMBEDDER_KEY: self.embedder.name.encode(), DIMS_KEY: str(dims).encode()},
        )
        table = self._db.create_table(TABLE, schema=schema)
        index_words(table)
        return table

    def _open_existing(self) -> None:
        names = self._db.list_tables().tables
        if TABLE not in names:
            if self.embedder.dims:
                self._table = self._create(self.embedder.dims)
            return
        table = self._db.open_table(TABLE)
        table.count_rows()  # reads the manifest: a corrupt one fails here, not mid-turn
        metadata = table.schema.metadata or {}
        built = metadata.get(EMBEDDER_KEY, b"?").decode(errors="replace")
        dims = int(metadata.get(DIMS_KEY, b"0") or 0)
        if built != self.embedder.name or (self.embedder.dims and dims != self.embedder.dims):
            raise EngineUnavailableError(
                f"the search index was built with the embedder {built} ({dims} dimensions), "
                f"but config.json selects {self.embedder.name}. Rebuild it from notes and wiki "
                "with `mnemara memory reindex --instance NAME`.",
                store="index",
                path=self.root,
            )
        self._table = table
        if self.writable:
            index_words(table)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """LanceDB's own failures (unreadable or corrupt files) as EngineUnavailableError."""
        if self._db is None:
            raise EngineUnavailableError(
                "the search index is closed", store="index", path=self.root
            )
        try:
            yield
        except (OSError, RuntimeError, ValueError) as exc:
            raise self._corrupt(exc) from None
        except BaseException as exc:
            # A Rust panic inside lance surfaces as pyo3's PanicException, a BaseException.
            if type(exc).__name__ != "PanicException":
                raise
            raise self._corrupt(exc) from None

    def _corrupt(self, exc: BaseException) -> EngineUnavailableError:
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        return EngineUnavailableError(
            f"the search index cannot be read or written ({first_line}). Rebuild it from notes "
            "and wiki with `mnemara memory reindex --instance NAME`.",
            store="index",
            path=self.root,
        )


def open_lance_index(
    root: Path, embedder: Embedder, ann_threshold: int = ANN_THRESHOLD, *, create: bool = True
) -> LanceIndex:
    """The `atoms` table in the LanceDB directory `root` (an instance's `index/`), opened.

    `create=False` is for readers: without an `atoms` table nothing is made (no directory, no
    table) and every read answers empty.
    EngineUnavailableError when the directory is unreadable or corrupt, or when the table was
    built with another embedder.
    """
    index = LanceIndex(root, embedder, None, ann_threshold, writable=create)
    if not create and not (root / f"{TABLE}.lance").is_dir():
        return index  # (and LanceDB, slow to import, is not even loaded)
    from runtime.memory.lancedb_load import load_lancedb

    lancedb = load_lancedb()

    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise index._corrupt(exc) from None
    index._db = lancedb.connect(root)
    with index._guard():
        index._open_existing()
    return index


def drop_lance_index(index: Path) -> None:
    """Drop the `atoms` table, whatever embedder built it (`mnemara memory reindex`).

    Done without opening the index: opening refuses a table built by another embedder, which
    is the very case a reindex is for. The original's `memories` table is not touched.
    """
    from runtime.memory.lancedb_load import load_lancedb

    lancedb = load_lancedb()

    if not index.is_dir():
        return
    try:
        db = lancedb.connect(index)
        if TABLE in db.list_tables().tables:
            db.drop_table(TABLE)
    except (OSError, RuntimeError, ValueError) as exc:
        raise EngineUnavailableError(
            f"the search index cannot be dropped ({exc}); delete {index / (TABLE + '.lance')} "
            "by hand and run the command again",
            store="index",
            path=index,
        ) from None


def _row(atom: Atom, vector: list[float], quarantined: bool) -> dict[str, Any]:
    provenance = atom.provenance
    return {
        "source": atom.source,
        "kind": atom.kind,
        "text": atom.text,
        "category": atom.category,
        "written_at": atom.written_at,
        "digest": atom.digest(),
        "panel": provenance.panel if provenance else "",
        "epoch": provenance.epoch if provenance else 0,
        "turn": provenance.turn if provenance else None,
        "quarantined": quarantined,
        "vector": vector,
    }
