"""What the world probe leaves out of the state it measures: the panel's bookkeeping files
(logs, notes) and the timestamps in a file, in a real repository, for the watched probe and
the full one alike."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from runtime.guard.gitstatus import git_state
from runtime.guard.world import WorkingTree
from runtime.instance.guard_settings import DEFAULT_BOOKKEEPING_FILES

pytestmark = pytest.mark.anyio


async def git(repo: Path, *args: str) -> None:
    await anyio.run_process(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo)


async def no_slots() -> Sequence[tuple[str, str]]:
    return ()


@pytest.fixture
async def repo(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text("built = '2026-12-01T10:00:00Z'\nvalue = 1\n")
    await git(tmp_path, "init", "-q")
    await git(tmp_path, "add", "-A")
    await git(tmp_path, "commit", "-q", "-m", "init")
    return tmp_path


@pytest.mark.parametrize("watch", [True, False], ids=["watched", "git status"])
async def test_logs_notes_and_timestamps_do_not_change_the_state(repo: Path, watch: bool) -> None:
    tree = WorkingTree(repo, no_slots, watch=watch, bookkeeping=DEFAULT_BOOKKEEPING_FILES)
    try:
        start = await _git_tree(tree)
        (repo / "agent.log").write_text("round 1\n")
        (repo / "NOTES.md").write_text("tried the cache flag\n")
        (repo / "logs").mkdir()
        (repo / "logs" / "run.txt").write_text("started\n")
        assert await _git_tree(tree) == start
        # git sees a tracked file differ from its commit by any byte: the first stamp is a
        # change; once it differs, a file whose only change is its stamp has not changed.
        (repo / "app.py").write_text("built = '2026-12-06T13:31:07Z'\nvalue = 1\n")
        stamped = await _git_tree(tree)
        assert stamped != start
        (repo / "app.py").write_text("built = '2026-12-06T14:02:55Z'\nvalue = 1\n")
        assert await _git_tree(tree) == stamped, "a change of timestamp alone was a change"
        (repo / "app.py").write_text("built = '2026-12-06T14:02:55Z'\nvalue = 2\n")
        assert await _git_tree(tree) not in (start, stamped)
        (repo / "app.py").write_text("built = '2026-12-01T10:00:00Z'\nvalue = 1\n")
        assert await _git_tree(tree) == start
        touched = str(repo / "app.py")
        first = (await tree.measure((touched,))).files_written
        (repo / "app.py").write_text("built = '2026-12-07T09:00:00Z'\nvalue = 1\n")
        assert (await tree.measure((touched,))).files_written == first
    finally:
        tree.close()


async def test_without_the_patterns_a_log_is_a_change(repo: Path) -> None:
    before = await git_state(repo)
    (repo / "agent.log").write_text("round 1\n")
    assert await git_state(repo) != before
    (repo / "agent.log").unlink()
    kept = await git_state(repo, bookkeeping=DEFAULT_BOOKKEEPING_FILES)
    (repo / "agent.log").write_text("round 2\n")
    assert await git_state(repo, bookkeeping=DEFAULT_BOOKKEEPING_FILES) == kept


async def _git_tree(tree: WorkingTree) -> str | None:
    return (await tree.measure(())).git_tree
