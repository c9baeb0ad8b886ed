"""`mnemara replay` through typer's CliRunner, with the real offline embedder and graph."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from panels.cli.options import HELP_OPTIONS, Command
from panels.cli.replay import replay
from runtime.instance.home import InstancePaths
from runtime.memory.linking import link_note
from runtime.memory.notes import FileNotes

NOTES = [
    ("Deploy to staging failed: the build host ran out of disk space.", "insight", "deploy"),
    (
        "The release pipeline aborted with 'no space left on device' on the build host.",
        "insight",
        "deploy",
    ),
    (
        "Production deploy broke because the build machine's disk was full of old logs.",
        "insight",
        "deploy",
    ),
    (
        "I polled the message bus every few seconds instead of blocking on a reply.",
        "self_observation",
        "bus",
    ),
    (
        "I kept checking the bus for new messages far too often while waiting.",
        "self_observation",
        "bus",
    ),
    (
        "I check for peer replies in a tight loop rather than waiting for the notification.",
        "self_observation",
        "bus",
    ),
    ("The user prefers British spelling in documentation.", "insight", "docs"),
    ("The API gateway rate limit is 500 requests per minute per client.", "insight", "gateway"),
    (
        "The API gateway rate limit is 500 requests per minute for each client.",
        "insight",
        "gateway",
    ),
]

runner = CliRunner()


def cli() -> typer.Typer:
    """The command as main.py will register it (the lead adds it there)."""
    app = typer.Typer(context_settings=HELP_OPTIONS, add_completion=False)

    @app.callback()
    def main() -> None:
        """Test app."""

    app.command("replay", cls=Command)(replay)
    return app


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(cli(), ["replay", "--instance", "t1", *args])
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def memory(instance: InstancePaths) -> InstancePaths:
    notes = FileNotes(instance.memory)
    start = datetime.now(UTC) - timedelta(days=2)
    for i, (text, category, entity) in enumerate(NOTES):
        notes.append(text, category, {"applies_to": [entity]}, now=start + timedelta(hours=i))
    from runtime.memory.graph import open_graph

    graph = open_graph(instance.graph, "ladybug")
    try:
        for atom in notes.atoms():
            link_note(graph, atom)
    finally:
        graph.close()
    return instance


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_dry_run_prints_the_plan_and_writes_nothing(memory: InstancePaths) -> None:
    before = tree(memory.root)
    code, out, err = mnemara()
    assert code == 0, err
    assert "2 patterns" in out and "wiki proposal: wiki_proposals/" in out
    # What it read, kept, would archive and propose, counted from the notes it read.
    assert "replay read 9 notes from the last 7 days" in out
    assert "8 kept, 1 to archive, 2 patterns (2 to propose), 0 pairs to reconcile" in out
    assert "role amendment: role_proposals/replay-" in out
    assert "archive memory/" in out and "entities: deploy (3)" in out
    assert "dry run: nothing written; add --apply" in out
    assert tree(memory.root) == before


def test_apply_twice_writes_once(memory: InstancePaths) -> None:
    code, out, err = mnemara("--apply", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["mode"] == "apply" and len(plan["patterns"]) == 2
    assert (
        len(plan["duplicates"]) == 1 and len(plan["written"]) == 4
    )  # 2 proposals, 1 draft, digest
    assert len(list(memory.wiki_proposals.iterdir())) == 2
    assert len(list(memory.role_proposals.iterdir())) == 1
    before = tree(memory.root)
    code, out, err = mnemara("--apply")
    assert code == 0, err
    assert "wrote 0 files (4 already up to date), archived 0 notes" in out
    after = tree(memory.root)
    last = "sleep/last_replay.json"
    first_last, second_last = json.loads(before.pop(last)), json.loads(after.pop(last))
    assert after == before
    first_last.pop("at"), second_last.pop("at")
    assert first_last == second_last and first_last["archived"] == 1


def test_bounds_and_policy_doc(memory: InstancePaths, configure: Callable[..., Any]) -> None:
    assert mnemara("--days", "0")[0] == 2
    code, _, err = mnemara("--threshold", "1001")
    assert code == 2 and "--threshold 1001 is out of range" in err
    memory.wiki.mkdir(exist_ok=True)
    (memory.wiki / "replay_policy.md").write_text("- threshold: 4\n- days: 30\n", encoding="utf-8")
    plan = json.loads(mnemara("--json")[1])
    assert (plan["threshold"], plan["days"], plan["patterns"]) == (4, 30, [])
    assert json.loads(mnemara("--json", "--threshold", "3")[1])["threshold"] == 3  # flags win
    configure(replay_policy_path=str(memory.root / "missing.md"))
    code, _, err = mnemara()
    assert code == 3 and "replay_policy_path" in err


def test_an_unavailable_embedder_is_one_line(
    memory: InstancePaths, configure: Callable[..., Any]
) -> None:
    # Port 9 on the loopback: refused at once, so nothing leaves the machine.
    configure(rag_embed_url="http://127.0.0.1:9/api/embeddings", rag_embed_model="nomic-embed-text")
    code, out, err = mnemara()
    assert code == 1 and out == ""
    assert err.startswith("mnemara: the embedding service at http://127.0.0.1:9")
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
