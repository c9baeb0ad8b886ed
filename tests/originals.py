"""An instance directory as the original mnemara left it, for tests that must leave it alone.

Every file is written the way the original wrote it (src/mnemara/store.py, tools.py, graph.py
of the original): `turns.sqlite` with its one `turns` table, segment markers as rows of role
`marker` whose content is the JSON name; a config with the original's fields; a day file with a
structured note whose list-valued `applies_to` was written as Python's list text; wiki pages
with the original's names; and a Kuzu graph at `graph/kuzu_db` holding the nodes and edges the
original's hooks made plus some the agent added by hand (written in a child process: kuzu and
ladybug never load in one process).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

from runtime.instance.home import InstancePaths

# The original's CREATE statements, with the columns its _migrate_schema adds.
TURNS_SCHEMA = """
CREATE TABLE turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    ts TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_uses TEXT,
    tokens_in INTEGER,
    tokens_out INTEGER,
    pin_label TEXT,
    compressed_read_stub INTEGER DEFAULT 0
);
CREATE INDEX idx_ts ON turns(ts);
CREATE INDEX idx_pin_label ON turns(pin_label);
"""

# (role, content, pin_label): markers carry their name as JSON text, as mark_segment wrote it.
TURNS = [
    ("user", "start the refactor", None),
    ("marker", json.dumps("refactor"), None),
    ("assistant", json.dumps([{"type": "text", "text": "Reading the loader."}]), None),
    ("system", "HP: 73 / 100", "03_health"),
    ("marker", json.dumps("review"), None),
    ("user", "now review it", None),
    ("marker", json.dumps("refactor"), None),
    ("assistant", "Done.", None),
]

DAY_FILE = "2026-11-20.md"
# tools.write_memory with a payload: `**applies_to:** {applies}` is str() of the list.
DAY_TEXT = """
## [2026-11-20T09:14:03+00:00] observation

The loader retries hide a missing index.

**evidence:** 5 retries in the log

**prediction:** the next deploy fails

**applies_to:** ['reads', 'writes']

**confidence:** 0.8

## [2026-11-20T10:00:00+00:00] note

Disk was full during the deploy.
"""

# What the original's hooks made for the note above, and what its agent added by hand with
# graph_add_node / graph_add_edge (a person, a decision, an entity no note names, and edges
# between them and the hooks' nodes). List-valued properties stay lists.
KUZU_WRITER = r"""
import json, sys, kuzu
db = kuzu.Database(sys.argv[1]); conn = kuzu.Connection(db)
conn.execute("CREATE NODE TABLE Node(id STRING PRIMARY KEY, label STRING, properties STRING, "
             "created_at STRING)")
conn.execute("CREATE REL TABLE Edge(FROM Node TO Node, id STRING, relationship STRING, "
             "properties STRING, created_at STRING)")
day = sys.argv[2]
preview = ("The loader retries hide a missing index.\n5 retries in the log\n"
           "the next deploy fails\nreads, writes")
nodes = [
    ("m1", "memory_entry", {"preview": preview, "source_path": day}),
    ("e-reads", "entity", {"ref": "reads"}),
    ("e-writes", "entity", {"ref": "writes"}),
    ("p-ada", "person", {"name": "Ada", "roles": ["lead", "reviewer"]}),
    ("d-1", "decision", {"text": "retry at most twice", "refs": ["reads"]}),
    ("e-cache", "entity", {"ref": "cache"}),
]
for node_id, label, props in nodes:
    conn.execute("CREATE (n:Node {id: $id, label: $l, properties: $p, created_at: $t})",
                 {"id": node_id, "l": label, "p": json.dumps(props), "t": "2026-11-20T09:14:04"})
edges = [
    ("x1", "m1", "e-reads", "applies_to", {"ref": "reads"}),
    ("x2", "m1", "e-writes", "applies_to", {"ref": "writes"}),
    ("x3", "p-ada", "d-1", "decided", {"on": ["2026-11-20"]}),
    ("x4", "d-1", "e-reads", "about", {}),
    ("x5", "e-reads", "e-cache", "uses", {}),
]
for edge_id, a, b, rel, props in edges:
    conn.execute("MATCH (a:Node {id: $a}), (b:Node {id: $b}) CREATE (a)-[:Edge {id: $id, "
                 "relationship: $r, properties: $p, created_at: $t}]->(b)",
                 {"a": a, "b": b, "id": edge_id, "r": rel, "p": json.dumps(props),
                  "t": "2026-11-20T09:15:00"})
conn.close(); db.close()
"""


def write_original_turns(path: Path) -> None:
    conn = sqlite3.connect(path)
    conn.executescript(TURNS_SCHEMA)
    for minute, (role, content, pin) in enumerate(TURNS):
        conn.execute(
            "INSERT INTO turns (ts, role, content, pin_label) VALUES (?, ?, ?, ?)",
            (f"2026-11-20T09:{minute:02d}:00+00:00", role, content, pin),
        )
    conn.commit()
    conn.close()


def write_original_graph(paths: InstancePaths) -> None:
    paths.graph.mkdir(exist_ok=True)
    day = str(paths.memory / DAY_FILE)
    done = subprocess.run(
        [sys.executable, "-c", KUZU_WRITER, str(paths.graph / "kuzu_db"), day],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def make_original_instance(
    home: Path, name: str = "old", *, graph: bool = True, **config: object
) -> InstancePaths:
    """An original instance named `name` under `home`; `config` adds config.json fields."""
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir()
    settings = {"model": "claude-opus-4-7", "max_window_turns": 20, "graph_enabled": True}
    paths.config.write_text(json.dumps({**settings, **config}), encoding="utf-8")
    write_original_turns(paths.turns)
    paths.memory.mkdir()
    (paths.memory / DAY_FILE).write_text(DAY_TEXT, encoding="utf-8")
    paths.wiki.mkdir()
    (paths.wiki / "replay_policy.md").write_text("Replay weekly.\n", encoding="utf-8")
    (paths.wiki / "loader.md").write_text("---\ntags: [reads, io]\n---\nLoader.\n", "utf-8")
    if graph:
        write_original_graph(paths)
    return paths


def digest(root: Path) -> dict[str, str]:
    """Every path under `root`: a file's sha256, "dir" for a directory, a link's target."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        name = str(path.relative_to(root))
        if path.is_symlink():
            found[name] = f"-> {path.readlink()}"
        elif path.is_dir():
            found[name] = "dir"
        else:
            found[name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found
