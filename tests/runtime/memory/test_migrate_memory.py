"""Migrating a synthetic original mnemara instance's memory: twice, the second run a no-op.

The original's files are written as it wrote them: day files with `**applies_to:** a, b`,
wiki pages named `replay_policy.md` and `Patterns/Loader_Traps.md`, a LanceDB `memories`
table (768-d, with a manual row), a Kuzu graph at graph/kuzu_db (written in a child process:
kuzu and ladybug never share one), and a config with the Ollama defaults.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.config import BUILTIN_EMBED_MODEL, ORIGINAL_EMBED_MODEL, ORIGINAL_EMBED_URL
from runtime.instance.home import InstancePaths
from runtime.memory.migrate import migrate_memory
from runtime.memory.notes import FileNotes

ORIGINAL_DAY = """\
## [2026-11-20T09:14:03+00:00] insight

Loader retries hide a missing index.

**observation:** the loader retried 5 times

**applies_to:** loader, index

## [2026-11-21T10:00:00+00:00] incident

The deploy failed because the disk was full.

"""

KUZU_WRITER = """
import sys, kuzu
db = kuzu.Database(sys.argv[1]); conn = kuzu.Connection(db)
conn.execute("CREATE NODE TABLE Node(id STRING PRIMARY KEY, label STRING, properties STRING, "
             "created_at STRING)")
conn.execute("CREATE REL TABLE Edge(FROM Node TO Node, id STRING, relationship STRING, "
             "properties STRING, created_at STRING)")
conn.execute("CREATE (n:Node {id: 'a', label: 'entity', properties: '{\\"ref\\": \\"loader\\"}', "
             "created_at: '2026-11-20'})")
conn.execute("CREATE (n:Node {id: 'b', label: 'entity', properties: '{}', created_at: ''})")
conn.execute("MATCH (a:Node {id: 'a'}), (b:Node {id: 'b'}) CREATE (a)-[:Edge {id: 'e'}]->(b)")
conn.close(); db.close()
"""


def original_instance(home: Path, name: str = "old", **config: object) -> InstancePaths:
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir()
    settings = {
        "model": "claude-sonnet-4-5",
        "rag_embed_url": ORIGINAL_EMBED_URL,
        "rag_embed_model": ORIGINAL_EMBED_MODEL,
        "some_original_field": 7,
        **config,
    }
    paths.config.write_text(json.dumps(settings), encoding="utf-8")
    paths.memory.mkdir()
    (paths.memory / "2026-11-20.md").write_text(ORIGINAL_DAY, encoding="utf-8")
    (paths.wiki / "Patterns").mkdir(parents=True)
    (paths.wiki / "replay_policy.md").write_text("Replay weekly.\n", encoding="utf-8")
    (paths.wiki / "Patterns" / "Loader_Traps.md").write_text("Retries hide.\n", encoding="utf-8")
    (paths.wiki / "already-fine.md").write_text("Fine.\n", encoding="utf-8")
    write_memories_table(paths.index)
    return paths


def write_memories_table(index: Path) -> None:
    import lancedb
    import pyarrow as pa

    schema = pa.schema(
        [
            pa.field("id", pa.string()),
            pa.field("text", pa.string()),
            pa.field("kind", pa.string()),
            pa.field("source_path", pa.string()),
            pa.field("category", pa.string()),
            pa.field("ts", pa.string()),
            pa.field("embedding", pa.list_(pa.float32(), 768)),
        ]
    )
    rows = [
        (
            "m1",
            "Staging DB password rotates on Mondays.",
            "manual",
            "",
            "ops",
            "2026-10-02T08:00:00+00:00",
        ),
        ("m2", "Manual without a category.", "manual", "", "", "not a date"),
        (
            "n1",
            "Loader retries hide a missing index.",
            "memory",
            "memory/2026-11-20.md",
            "insight",
            "2026-11-20T09:14:03+00:00",
        ),
    ]
    table = lancedb.connect(index).create_table("memories", schema=schema)
    table.add(
        [
            dict(zip(("id", "text", "kind", "source_path", "category", "ts"), row, strict=True))
            | {"embedding": [0.1] * 768}
            for row in rows
        ]
    )


def write_kuzu_graph(paths: InstancePaths) -> None:
    paths.graph.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", KUZU_WRITER, str(paths.graph / "kuzu_db")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the original except those a migration may add or rewrite."""
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
        and not str(path.relative_to(root)).startswith(("index/atoms", "graph/lbug"))
    }


kuzu_installed = pytest.mark.skipif(
    not any((Path(p) / "kuzu").is_dir() for p in sys.path if p), reason="kuzu is not installed"
)


@kuzu_installed
def test_an_original_instance_is_migrated_once(mnemara_home: Path) -> None:
    paths = original_instance(mnemara_home)
    write_kuzu_graph(paths)
    before = snapshot(paths.root)

    first = migrate_memory(paths)
    text = str(first)
    assert first.changed and not first.unfinished
    assert "memory: 2 notes in 1 day files, read as they are" in text
    assert "config: the original's embedder (Ollama nomic-embed-text" in text
    assert 'set rag_embed_url to "http://localhost:11434/api/embeddings"' in text
    assert "wiki: Patterns/Loader_Traps.md copied to patterns/loader-traps.md" in text
    assert "wiki: replay_policy.md copied to replay-policy.md (the old file stays)" in text
    assert "3 rows, 2 of them manual entries: 2 kept as notes now, 0 before" in text
    assert "index: 7 added, 0 updated, 0 removed, 0 unchanged" in text
    assert (
        "graph: the original's Kuzu graph cannot be opened by ladybug; rebuilt from notes and "
        'wiki: 9 nodes, 2 edges; set graph_engine to "kuzu" to keep using it in place'
    ) in text
    assert (
        "graph: carried over from the original's Kuzu graph what notes and wiki do not give: "
        "1 nodes (entity 1) and 1 edges ((none) 1), ids kept; 1 nodes and 0 edges of it come "
        "from notes and wiki; now 10 nodes, 3 edges; the original is left as it is"
    ) in text
    assert "nothing to change" not in text

    # Nothing of the original was changed or deleted, except the two config fields.
    after = snapshot(paths.root)
    config = json.loads(after.pop("config.json"))
    before_config = json.loads(before.pop("config.json"))
    assert config == before_config | {"rag_embed_url": "", "rag_embed_model": BUILTIN_EMBED_MODEL}
    added = {name for name in after if name not in before}
    assert {name: after[name] for name in before} == before
    assert "wiki/replay-policy.md" in added and "wiki/patterns/loader-traps.md" in added
    assert after["wiki/replay-policy.md"] == b"Replay weekly.\n"

    manual = [a for a in FileNotes(paths.memory).atoms() if "original_id" in a.payload]
    assert [(a.category, a.payload["original_id"], a.written_at[:10]) for a in manual] == [
        ("ops", "m1", "2026-10-02"),
        ("manual", "m2", manual[1].written_at[:10]),
    ]
    assert manual[0].text.startswith("Staging DB password rotates on Mondays.")

    second = migrate_memory(paths)
    assert not second.changed and not second.unfinished
    text = str(second)
    assert "2 kept as notes" not in text and "0 kept as notes now, 2 before" in text
    assert "index: 0 added, 0 updated, 0 removed, 7 unchanged" in text
    assert "graph: already built (10 nodes, 3 edges), left as it is" in text
    assert "graph: all of the original's Kuzu graph is in ours (2 nodes and 1 edges)" in text
    assert "wiki: 2 page(s) with original names were copied before" in text
    assert text.endswith("memory: nothing to change (already migrated)")
    assert snapshot(paths.root) == after | {"config.json": after_config_bytes(paths)}


def after_config_bytes(paths: InstancePaths) -> bytes:
    return paths.config.read_bytes()


def test_mnemara_migrate_reports_memory_and_an_unusable_engine_leaves_work_for_later(
    mnemara_home: Path,
) -> None:
    # An embedding service nobody answers (kept: not the original's default) and a graph file
    # ladybug cannot open: notes and wiki still migrate, and the report says what is left.
    paths = original_instance(mnemara_home, rag_embed_url="http://127.0.0.1:9/api/embeddings")
    paths.graph.mkdir()
    (paths.graph / "lbug_db").write_bytes(b"garbage" * 100)
    (paths.graph / "kuzu_db").write_bytes(b"the original's")
    result = CliRunner().invoke(app, ["migrate", "--instance", "old"])
    out = result.stdout
    assert result.exit_code == 0, result.stderr
    assert "old: memory: 2 notes in 1 day files" in out
    assert "config:" not in out  # another URL is kept
    assert json.loads(paths.config.read_text())["rag_embed_url"].startswith("http://127.0.0.1:9")
    assert "old: wiki: replay_policy.md copied to replay-policy.md" in out
    assert "old: index: not built: the embedding service at http://127.0.0.1:9" in out
    assert "finish with `mnemara memory index --instance old`" in out
    assert "old: graph: not built: " in out and "ladybug cannot open lbug_db" in out
    assert "finish with `mnemara memory graph rebuild --instance old`" in out
    assert (paths.wiki / "replay-policy.md").is_file()
    assert len([a for a in FileNotes(paths.memory).atoms() if "original_id" in a.payload]) == 2


def test_an_instance_of_ours_has_nothing_to_migrate(instance: InstancePaths) -> None:
    FileNotes(instance.memory).append("a note")
    done = migrate_memory(instance)
    assert str(done) == (
        "memory: 1 notes in 1 day files, read as they are\n"
        "index and graph: nothing from the original mnemara to bring over\n"
        "memory: nothing to change (already migrated)"
    )
    assert not instance.index.exists() and not instance.graph.exists()


@kuzu_installed
def test_with_graph_engine_kuzu_the_original_graph_opens_in_place(mnemara_home: Path) -> None:
    paths = original_instance(mnemara_home, graph_engine="kuzu", rag_enabled=False)
    write_kuzu_graph(paths)
    script = textwrap.dedent(
        """
        from runtime.instance.home import InstancePaths
        from runtime.memory.migrate import migrate_memory
        print(migrate_memory(InstancePaths.for_name("old")))
        """
    )
    env = {**os.environ, "MNEMARA_HOME": str(mnemara_home)}
    before = (paths.graph / "kuzu_db").read_bytes()
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "graph: the original's Kuzu graph, opened in place: 2 nodes, 1 edges" in done.stdout
    assert "(left as it is)" in done.stdout
    assert (paths.graph / "kuzu_db").read_bytes() == before
    assert "index: not built: search is off" in done.stdout
    assert not (paths.graph / "lbug_db").exists()
