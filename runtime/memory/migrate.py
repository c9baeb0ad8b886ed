"""Bringing an original mnemara instance's memory over, idempotently, saying what was done.

Run by `mnemara migrate` after the turn store, with the instance leased. Nothing of the
original is deleted or rewritten in place:

- notes: the original's day files are read as they are (same block format).
- wiki: a page whose file name is not a valid slug (`replay_policy.md`, `Patterns/X_Y.md`) is
  copied to one (`replay-policy.md`); an existing page is never overwritten; the old file stays.
- config: the original's default embedder (Ollama's nomic-embed-text) becomes the built-in
  offline model; any other URL is kept.
- index: the original's `memories` table is read, never changed. Its `manual` rows exist
  nowhere else, so each becomes a note once, marked `**original_id:**`; then the `atoms`
  table is brought up to date from notes and wiki with our embedder.
- graph: ladybug cannot open the original's Kuzu file, so ours is built from notes and wiki,
  then every node and edge of the original that notes and wiki do not give (what its agent
  added by hand) is carried over with its id (carry.py; the original is read read-only in a
  child process). With graph_engine "kuzu" the original file is opened in place, read-only.

An engine that cannot be used leaves its store for later and the report names the command
that finishes the job; notes and wiki are migrated all the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.errors import EngineUnavailableError, MemoryStoreError
from runtime.instance.config import (
    BUILTIN_EMBED_MODEL,
    ORIGINAL_EMBED_MODEL,
    ORIGINAL_EMBED_URL,
    InstanceConfig,
    load_config,
    write_json_atomic,
)
from runtime.instance.home import InstancePaths
from runtime.memory.memory import Memory, Synced, open_memory, sync_index
from runtime.memory.protocols import GraphStore, Progress
from runtime.memory.slugs import MAX_SEGMENT, check_slug, page_path, suggest_slug
from sqlitekit.jsonload import load_json

ORIGINAL_TABLE = "memories"  # the original's LanceDB table in `index/`
ORIGINAL_GRAPH = "kuzu_db"  # the original's Kuzu database in `graph/`
ID_FIELD = "original_id"  # the note field that marks a manual row already carried over


@dataclass
class MemoryMigration:
    """What migrating one instance's memory did: a line per store, and whether anything changed."""

    lines: list[str] = field(default_factory=list)
    changed: bool = False
    unfinished: list[str] = field(default_factory=list)  # stores left for a later command

    def say(self, line: str, *, changed: bool = False) -> None:
        self.lines.append(line)
        self.changed = self.changed or changed

    def __str__(self) -> str:
        lines = list(self.lines)
        if not self.changed:
            lines.append("memory: nothing to change (already migrated)")
        return "\n".join(lines)


def migrate_memory(paths: InstancePaths, progress: Progress | None = None) -> MemoryMigration:
    """Bring the instance's notes, wiki, config, index and graph over (see the module doc)."""
    done = MemoryMigration()
    switched = switch_embedder(paths, done)
    config = load_config(paths.config) if paths.config.is_file() else InstanceConfig()
    original_rows = (paths.index / f"{ORIGINAL_TABLE}.lance").is_dir()
    original_graph = (paths.graph / ORIGINAL_GRAPH).exists()
    with open_memory(paths, config) as memory:
        notes = memory.notes.atoms()
        days = {atom.source.split("#", 1)[0] for atom in notes}
        done.say(f"memory: {len(notes)} notes in {len(days)} day files, read as they are")
        rename_pages(paths.wiki, done)
        if not (original_rows or original_graph or switched):
            done.say("index and graph: nothing from the original mnemara to bring over")
            return done
        if original_rows:
            carry_manual_rows(paths, memory, done)
        index_memory(paths, memory, progress, done)
        build_graph(paths, memory, original_graph, done)
    return done


# -- config ------------------------------------------------------------------------------------


def switch_embedder(paths: InstancePaths, done: MemoryMigration) -> bool:
    """Replace the original's default embedder in config.json; True when it was (or is) one."""
    try:
        data = load_json(paths.config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False  # a missing or broken config is the turn store's migration to report
    if not isinstance(data, dict):
        return False
    url = str(data.get("rag_embed_url", ORIGINAL_EMBED_URL)).strip()
    model = data.get("rag_embed_model", ORIGINAL_EMBED_MODEL)
    if "rag_embed_url" not in data and "rag_embed_model" not in data:
        return False  # our defaults already: the built-in model
    if url != ORIGINAL_EMBED_URL or model != ORIGINAL_EMBED_MODEL:
        return False
    write_json_atomic(
        paths.config, {**data, "rag_embed_url": "", "rag_embed_model": BUILTIN_EMBED_MODEL}
    )
    done.say(
        f"config: the original's embedder (Ollama {ORIGINAL_EMBED_MODEL} at {ORIGINAL_EMBED_URL}) "
        f"is replaced by the built-in offline model {BUILTIN_EMBED_MODEL}; to go back, set "
        f'rag_embed_url to "{ORIGINAL_EMBED_URL}" and rag_embed_model to '
        f'"{ORIGINAL_EMBED_MODEL}" in config.json, then run '
        f"`mnemara memory reindex --instance {paths.name}`",
        changed=True,
    )
    return True


# -- wiki --------------------------------------------------------------------------------------


def rename_pages(wiki: Path, done: MemoryMigration) -> None:
    """Copy each page whose file name is not a valid slug to one; never overwrite a page."""
    if not wiki.is_dir():
        return
    copied = kept = 0
    for path in sorted(wiki.rglob("*.md")):
        if path.is_symlink() or not path.is_file():
            continue
        name = path.relative_to(wiki).with_suffix("").as_posix()
        if _is_slug(name):
            continue
        slug = suggest_slug(name, words=MAX_SEGMENT)
        if not _is_slug(slug):
            done.say(f"wiki: {name}.md left as it is: no valid page name can be made from it")
            continue
        target = page_path(wiki, slug)
        text = path.read_bytes()
        if target.exists():
            if target.read_bytes() != text:
                done.say(f"wiki: {name}.md not copied: the page {slug} exists already (kept)")
            kept += 1
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
        copied += 1
        done.say(f"wiki: {name}.md copied to {slug}.md (the old file stays)", changed=True)
    if copied == 0 and kept:
        done.say(f"wiki: {kept} page(s) with original names were copied before")


def _is_slug(name: str) -> bool:
    try:
        return check_slug(name) == name
    except MemoryStoreError:
        return False


# -- index -------------------------------------------------------------------------------------


def carry_manual_rows(paths: InstancePaths, memory: Memory, done: MemoryMigration) -> None:
    """Keep each `manual` row of the original's table as a note, once."""
    try:
        rows = read_original_rows(paths.index)
    except EngineUnavailableError as exc:
        done.unfinished.append("index")
        done.say(
            f"index: the original's manual entries were not brought over: {exc}; finish with "
            f"`mnemara migrate --instance {paths.name}` once that is fixed"
        )
        return
    manual = [row for row in rows if row.get("kind") == "manual" and str(row.get("text") or "")]
    carried = {
        str(atom.payload.get(ID_FIELD)) for atom in memory.notes.atoms() if ID_FIELD in atom.payload
    }
    added = 0
    for row in manual:
        row_id = str(row.get("id") or "").strip() or _stand_in_id(row)
        if row_id in carried:
            continue
        text = f"{str(row['text']).strip()}\n\n**{ID_FIELD}:** {row_id}"
        category = " ".join(str(row.get("category") or "").split()) or "manual"
        memory.notes.append(text, category, now=_when(row.get("ts")))
        carried.add(row_id)
        added += 1
    line = (
        f"index: the original's table {ORIGINAL_TABLE!r} has {len(rows)} rows, "
        f"{len(manual)} of them manual entries: {added} kept as notes now, "
        f"{len(manual) - added} before; the table is left in place"
    )
    done.say(line, changed=added > 0)


def read_original_rows(index: Path) -> list[dict[str, Any]]:
    """The original's `memories` rows without their vectors ([] when there is no table)."""
    from runtime.memory.lancedb_load import load_lancedb

    lancedb = load_lancedb()

    try:
        db = lancedb.connect(index)
        if ORIGINAL_TABLE not in db.list_tables().tables:
            return []
        table = db.open_table(ORIGINAL_TABLE)
        wanted = ("id", "text", "kind", "category", "ts", "source_path")
        columns = [name for name in wanted if name in table.schema.names]
        rows: list[dict[str, Any]] = table.to_arrow().select(columns).to_pylist()
    except (OSError, RuntimeError, ValueError) as exc:
        first_line = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        raise EngineUnavailableError(
            f"the original's table {ORIGINAL_TABLE!r} cannot be read ({first_line})",
            store="index",
            path=index,
        ) from None
    return rows


def _stand_in_id(row: dict[str, Any]) -> str:
    import hashlib

    seed = f"{row.get('ts')}\0{row.get('text')}".encode()
    return "text-" + hashlib.sha256(seed).hexdigest()[:16]


def _when(ts: Any) -> datetime | None:
    try:
        when = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return None  # dated today: the text is what matters
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def index_memory(
    paths: InstancePaths, memory: Memory, progress: Progress | None, done: MemoryMigration
) -> None:
    try:
        synced = sync_index(memory, progress)
    except EngineUnavailableError as exc:
        done.unfinished.append("index")
        done.say(
            f"index: not built: {exc}; finish with `mnemara memory index --instance {paths.name}`"
        )
        return
    embedder = memory.config.rag_embed_model
    done.say(f"index: {synced} (notes and wiki, embedder {embedder})", changed=_changed(synced))


def _changed(synced: Synced) -> bool:
    return bool(synced.added or synced.updated or synced.removed)


# -- graph -------------------------------------------------------------------------------------


def build_graph(
    paths: InstancePaths, memory: Memory, original_graph: bool, done: MemoryMigration
) -> None:
    from runtime.memory.linking import rebuild_graph

    engine = memory.config.graph_engine
    finish = f"finish with `mnemara memory graph rebuild --instance {paths.name}`"
    try:
        if engine == "kuzu" and original_graph and memory.config.graph_enabled:
            nodes, edges = _count_read_only(paths)
            done.say(
                f"graph: the original's Kuzu graph, opened in place: {nodes} nodes, {edges} "
                "edges (left as it is)"
            )
            return
        graph = memory.graph()
        nodes, edges = graph.counts()
        if engine == "kuzu":
            done.say(f"graph: kuzu: {nodes} nodes, {edges} edges")
            return
        notes, pages = memory.notes.atoms(), memory.wiki.atoms()
        if nodes or edges:
            done.say(f"graph: already built ({nodes} nodes, {edges} edges), left as it is")
        elif not notes and not pages:
            done.say("graph: nothing to build (no notes or wiki pages)")
        else:
            nodes, edges = rebuild_graph(graph, notes, pages)
            if original_graph:
                done.say(
                    "graph: the original's Kuzu graph cannot be opened by ladybug; rebuilt from "
                    f'notes and wiki: {nodes} nodes, {edges} edges; set graph_engine to "kuzu" '
                    "to keep using it in place",
                    changed=True,
                )
            else:
                done.say(
                    f"graph: built from notes and wiki: {nodes} nodes, {edges} edges", changed=True
                )
        if original_graph:
            carry_original_graph(paths, graph, done)
    except MemoryStoreError as exc:  # EngineUnavailableError, or the engine failing mid-build
        done.unfinished.append("graph")
        done.say(f"graph: not built: {exc}; {finish}")


def carry_original_graph(paths: InstancePaths, graph: GraphStore, done: MemoryMigration) -> None:
    """Add to our graph what the original's holds and ours does not (carry.py)."""
    from runtime.memory.carry import plan_carry, read_original_graph
    from runtime.memory.graph import KuzuGraph

    if not isinstance(graph, KuzuGraph):
        return  # only the real engines hold the original's records
    try:
        original = read_original_graph(paths.graph / ORIGINAL_GRAPH)
    except EngineUnavailableError as exc:
        done.unfinished.append("graph")
        done.say(
            f"graph: the original's Kuzu graph was not read, so nothing its agent added by hand "
            f"is carried over yet: {exc}; finish with `mnemara migrate --instance {paths.name}` "
            "once that is fixed"
        )
        return
    plan = plan_carry(original, graph.records())
    given = f"{plan.given_nodes} nodes and {plan.given_edges} edges"
    if not plan.nodes and not plan.edges:
        done.say(
            f"graph: all of the original's Kuzu graph is in ours ({given}); the original "
            "is left as it is"
        )
        return
    graph.carry(plan)
    nodes, edges = graph.counts()
    done.say(
        f"graph: carried over from the original's Kuzu graph what notes and wiki do not give: "
        f"{plan.describe()}, ids kept; {given} of it come from notes and wiki; now {nodes} "
        f"nodes, {edges} edges; the original is left as it is",
        changed=True,
    )


def _count_read_only(paths: InstancePaths) -> tuple[int, int]:
    from runtime.memory.graph import open_graph

    graph = open_graph(paths.graph, "kuzu", instance=paths.name, read_only=True)
    try:
        return graph.counts()
    finally:
        graph.close()
