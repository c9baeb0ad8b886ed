"""`mnemara memory search --mode hybrid|vector`: why each hit matched, in text and in JSON.

Real LanceDB in tmp; the embedder is the fake one (hashed words), put where the instance's
engines build theirs: these tests are about the command, runtime/memory's about the model.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
import typer
from typer.testing import CliRunner

import runtime.memory.embed
from panels.cli.memory import memory_app
from runtime.instance.config import InstanceConfig
from runtime.instance.home import InstancePaths
from runtime.memory.fake import FakeEmbedder
from runtime.memory.notes import FileNotes

app = typer.Typer()
app.add_typer(memory_app, name="memory")
runner = CliRunner()
EXACT = "INC-4821 disk full on the build host"
# Nearer the query "INC-4821" by (fake) meaning than the note holding it: it repeats "inc".
DECOY = "INC-4812, INC-4813 and INC-4814: one inc after another inc, each inc an incident"


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["memory", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def indexed(instance: InstancePaths, monkeypatch: pytest.MonkeyPatch) -> InstancePaths:
    monkeypatch.setattr(runtime.memory.embed, "build_embedder", lambda _: FakeEmbedder())
    notes = FileNotes(instance.memory)
    when = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
    for text in (EXACT, DECOY, "green tea tastes best brewed in the morning"):
        notes.append(text, "incident", now=when)
    code, out, _ = mnemara("index", "--instance", "t1")
    assert code == 0 and out.startswith("3 added"), out
    return instance


def test_help_names_the_modes() -> None:
    code, out, _ = mnemara("search", "-h")
    assert code == 0 and "--mode" in out and "hybrid|vector" in out
    assert "rag_search_mode" in out and "by meaning only" in out


def test_each_mode_and_the_why_of_each_line(
    indexed: InstancePaths, configure: Callable[..., InstanceConfig]
) -> None:
    code, out, _ = mnemara("search", "INC-4821", "--instance", "t1", "-k", "1", "--mode", "vector")
    assert code == 0 and DECOY in out and out.rstrip().endswith("  [meaning]")
    code, out, _ = mnemara("search", "INC-4821", "--instance", "t1", "-k", "1", "--mode", "hybrid")
    assert code == 0 and EXACT in out and out.rstrip().endswith("  [words: INC-4821]")
    (line,) = out.splitlines()
    score, kind, source = line.split()[:3]
    assert kind == "note" and source.startswith("memory/2026-12-01.md#") and 0 < float(score) < 1
    code, out, _ = mnemara("search", "INC-4821 disk db-7", "--instance", "t1", "-k", "2")
    assert code == 0 and out.splitlines()[0].endswith("  [meaning, words: INC-4821]")
    # Without --mode, config.json's rag_search_mode (hybrid unless it says otherwise).
    assert EXACT in mnemara("search", "INC-4821", "--instance", "t1", "-k", "1")[1]
    configure(rag_search_mode="vector")
    assert DECOY in mnemara("search", "INC-4821", "--instance", "t1", "-k", "1")[1]
    code, out, _ = mnemara("search", "INC-4821", "-i", "t1", "-k", "1", "--mode", "hybrid")
    assert code == 0 and EXACT in out


def test_json_lists_what_matched(indexed: InstancePaths) -> None:
    code, out, _ = mnemara("search", "INC-4821", "--instance", "t1", "-k", "3", "--json")
    hits = json.loads(out)
    assert code == 0 and [hit["text"] for hit in hits][:2] == [EXACT, DECOY]
    assert set(hits[0]) == {"source", "kind", "category", "score", "matched", "text"}
    assert hits[0]["matched"] == ["meaning", "INC-4821"] and hits[1]["matched"] == ["meaning"]
    code, out, _ = mnemara("search", "INC-4821", "-i", "t1", "-k", "1", "--json", "--mode=vector")
    assert code == 0 and json.loads(out)[0]["matched"] == ["meaning"]


def test_a_bad_mode_is_refused_on_the_command_line_and_in_config(indexed: InstancePaths) -> None:
    code, _, err = mnemara("search", "disk", "--instance", "t1", "--mode", "bm25")
    assert code == 2 and "--mode must be one of hybrid, vector, not 'bm25'" in err
    data = json.loads(indexed.config.read_text())
    indexed.config.write_text(json.dumps({**data, "rag_search_mode": "fuzzy"}))
    code, _, err = mnemara("search", "disk", "--instance", "t1")
    assert code != 0 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "field 'rag_search_mode': Input should be 'hybrid' or 'vector' (got 'fuzzy')" in err
