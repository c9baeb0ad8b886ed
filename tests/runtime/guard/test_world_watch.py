"""The watched git state against the full one, in real repositories in tmp_path: after each
change (edits, reverts, untracked and ignored files, new directories, deletes, renames, modes,
`git add`, commits, checkouts, rule files) the watched digest is the digest `git_state`
gives, and most changes are followed without measuring in full. No sleeps: events are queued
by the writing syscall, so a change is seen by the next measure.

The watch limit and a queue overflow take the real paths that handle them."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

from runtime.guard import gitwatch
from runtime.guard.gitrecords import join_status, split_status
from runtime.guard.gitstatus import git_state
from runtime.guard.gitwatch import WatchedGit
from runtime.guard.inotify import IN_Q_OVERFLOW, Inotify
from runtime.guard.world import FileHasher, WorkingTree

pytestmark = pytest.mark.anyio


async def sh(cwd: Path, *command: str) -> None:
    await anyio.run_process(list(command), cwd=cwd)


async def git(repo: Path, *args: str) -> None:
    await sh(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", *args)


@pytest.fixture
async def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    await git(path, "init", "-q")
    (path / "app.py").write_text("name = 'old'\n", encoding="utf-8")
    (path / "src" / "lib.py").write_text("lib = 1\n", encoding="utf-8")
    (path / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    await git(path, "add", "-A")
    await git(path, "commit", "-q", "-m", "init")
    return path


class Counted:
    """A watched probe that counts its full measures (git status of the whole tree)."""

    def __init__(self, repo: Path, monkeypatch: pytest.MonkeyPatch, **options: int) -> None:
        self.repo = repo
        self.full = 0
        self.probe = WatchedGit(repo, **options)
        real = gitwatch.git_snapshot

        async def counting(*args: object, **kwargs: object) -> object:
            self.full += 1
            return await real(*args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(gitwatch, "git_snapshot", counting)

    async def agrees(self) -> str | None:
        """The watched state, checked against a full measure."""
        watched = await self.probe.state()
        assert watched is not None and watched == await git_state(self.repo)
        return watched

    async def followed(self) -> str | None:
        """The watched state, made without a full measure."""
        before = self.full
        state = await self.agrees()
        assert self.full == before and self.probe.watching
        return state


@pytest.fixture
async def watched(repo: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Counted]:
    counted = Counted(repo, monkeypatch)
    try:
        yield counted
    finally:
        counted.probe.close()


async def test_edits_reverts_and_untracked_files_are_followed_without_git_status(
    repo: Path, watched: Counted
) -> None:
    clean = await watched.agrees()
    assert watched.probe.watching and watched.full == 1
    (repo / "app.py").write_text("name = 'new'\n", encoding="utf-8")
    edited = await watched.followed()
    assert edited != clean
    (repo / "app.py").write_text("name = 'old'\n", encoding="utf-8")  # reverted
    assert await watched.followed() == clean
    await sh(repo, "sed", "-i", "s/old/wen/", "app.py")  # a temporary file, renamed over
    sed = await watched.followed()
    assert sed not in (clean, edited)
    (repo / "notes" / "deep").mkdir(parents=True)
    (repo / "notes" / "deep" / "todo.txt").write_text("a\n", encoding="utf-8")
    untracked = await watched.followed()
    assert untracked != sed
    (repo / "notes" / "deep" / "todo.txt").write_text("b\n", encoding="utf-8")  # same size
    assert await watched.followed() != untracked
    (repo / "notes" / "deep" / "todo.txt").write_text("a\n", encoding="utf-8")
    assert await watched.followed() == untracked
    os.rename(repo / "notes" / "deep" / "todo.txt", repo / "notes" / "todo.txt")
    moved = await watched.followed()
    assert moved != untracked
    (repo / "src" / "lib.py").chmod(0o755)
    executable = await watched.followed()
    assert executable != moved
    (repo / "src" / "lib.py").chmod(0o644)
    assert await watched.followed() == moved
    (repo / "src" / "lib.py").unlink()
    assert await watched.followed() != moved
    (repo / "src" / "lib.py").write_text("lib = 1\n", encoding="utf-8")
    assert await watched.followed() == moved


async def test_ignored_files_and_directories_change_nothing(repo: Path, watched: Counted) -> None:
    clean = await watched.agrees()
    (repo / "run.log").write_text("x\n", encoding="utf-8")
    (repo / "build" / "lib").mkdir(parents=True)
    (repo / "build" / "lib" / "out.o").write_bytes(b"\0" * 10)
    await sh(
        repo, "sh", "-c", "mkdir -p made/build/x && echo y > made/build/x/y && echo z > made/z"
    )
    assert await watched.followed() != clean  # made/z is untracked; the rest is ignored
    (repo / "made" / "z").unlink()
    assert await watched.followed() == clean
    (repo / "build" / "lib" / "out.o").write_bytes(b"\1" * 10)  # not even watched
    (repo / "src" / "more.log").write_text("x\n", encoding="utf-8")
    assert await watched.followed() == clean


async def test_staging_committing_and_checking_out_are_measured_again(
    repo: Path, watched: Counted
) -> None:
    clean = await watched.agrees()
    (repo / "app.py").write_text("name = 'staged'\n", encoding="utf-8")
    modified = await watched.followed()
    await git(repo, "add", "app.py")
    staged = await watched.agrees()  # the index changed: measured in full
    assert staged not in (clean, modified)
    (repo / "app.py").write_text("name = 'again'\n", encoding="utf-8")  # staged, then edited
    both = await watched.followed()
    (repo / "app.py").write_text("name = 'staged'\n", encoding="utf-8")
    assert await watched.followed() == staged
    (repo / "app.py").unlink()
    assert await watched.followed() not in (staged, both)
    (repo / "app.py").write_text("name = 'staged'\n", encoding="utf-8")
    await git(repo, "commit", "-q", "-m", "two")
    committed = await watched.agrees()
    assert committed not in (clean, staged)
    await git(repo, "checkout", "-q", "HEAD~1")  # detached at the first commit
    assert await watched.agrees() not in (clean, committed)
    await git(repo, "checkout", "-q", "-")
    assert await watched.agrees() == committed
    await git(repo, "mv", "app.py", "main.py")  # a rename in the index
    renamed = await watched.agrees()
    (repo / "main.py").write_text("changed\n", encoding="utf-8")
    assert await watched.agrees() != renamed  # its record needs git: measured in full


async def test_rules_nested_repositories_and_moved_directories_rebuild_the_watch(
    repo: Path, watched: Counted
) -> None:
    await watched.agrees()
    (repo / "run.log").write_text("x\n", encoding="utf-8")
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")  # run.log now counts
    await watched.agrees()
    await git(repo / "src", "init", "-q", "inner")  # listed by git as one entry
    (repo / "src" / "inner" / "a.txt").write_text("a\n", encoding="utf-8")
    await watched.agrees()
    (repo / "src" / "x.txt").write_text("x\n", encoding="utf-8")
    os.rename(repo / "src", repo / "source")
    await watched.agrees()
    (repo / "source" / "x.txt").write_text("y\n", encoding="utf-8")
    await watched.followed()
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "exclude").write_text("source/x.txt\n", encoding="utf-8")
    excluded = await watched.agrees()
    (repo / "source" / "x.txt").write_text("z\n", encoding="utf-8")  # ignored now
    assert await watched.followed() == excluded


async def test_what_blob_ids_cannot_decide_is_measured_in_full(
    repo: Path, watched: Counted
) -> None:
    await watched.agrees()
    (repo / "link").symlink_to("app.py")
    before = watched.full
    linked = await watched.agrees()
    assert watched.full == before + 1
    (repo / "link").unlink()
    assert await watched.agrees() != linked
    (repo / ".gitattributes").write_text("*.py text eol=crlf\n", encoding="utf-8")
    await watched.agrees()  # rules changed: watched again, tracked files by git from now on
    before = watched.full
    (repo / "app.py").write_text("name = 'crlf'\n", encoding="utf-8")
    await watched.agrees()
    assert watched.full == before + 1
    (repo / "notes.txt").write_text("untracked files need no filter\n", encoding="utf-8")
    await watched.followed()


async def test_measuring_never_writes_to_the_repository(repo: Path, watched: Counted) -> None:
    index = repo / ".git" / "index"
    os.utime(repo / "app.py", ns=(1, 1))  # stat-dirty: a plain `git status` would rewrite it
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    await watched.agrees()
    (repo / "app.py").write_text("name = 'new'\n", encoding="utf-8")
    (repo / "new.txt").write_text("new\n", encoding="utf-8")
    await watched.followed()
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


async def test_past_the_watch_limit_it_asks_git_every_call_and_says_so_once(
    repo: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    counted = Counted(repo, monkeypatch, max_watches=2)
    try:
        with caplog.at_level(logging.WARNING, logger="runtime.guard.gitwatch"):
            assert await counted.probe.state() == await git_state(repo)
            (repo / "app.py").write_text("name = 'new'\n", encoding="utf-8")
            assert await counted.probe.state() == await git_state(repo)
        assert not counted.probe.watching
        assert [r.getMessage() for r in caplog.records] == [
            f"the world probe asks git status before every call in {repo}: "
            "more than 2 directories to watch"
        ]
    finally:
        counted.probe.close()


async def test_a_queue_overflow_rebuilds_the_watch(
    repo: Path, watched: Counted, monkeypatch: pytest.MonkeyPatch
) -> None:
    await watched.agrees()
    (repo / "app.py").write_text("name = 'lost'\n", encoding="utf-8")
    real = Inotify.drain

    def overflowed(self: Inotify) -> list[tuple[int, int, bytes]]:
        # What the kernel reports when its queue was full: the events since are lost.
        real(self)
        monkeypatch.setattr(Inotify, "drain", real)
        return [(-1, IN_Q_OVERFLOW, b"")]

    monkeypatch.setattr(Inotify, "drain", overflowed)
    before = watched.full
    assert await watched.agrees() is not None
    assert watched.full == before + 1 and watched.probe.watching
    (repo / "app.py").write_text("name = 'old'\n", encoding="utf-8")
    await watched.followed()


async def test_the_working_tree_closes_its_watch(repo: Path) -> None:
    async def no_slots() -> list[tuple[str, str]]:
        return []

    tree = WorkingTree(repo, no_slots)
    first = await tree.measure(())
    assert tree.watched is not None and tree.watched.watching
    tree.close()
    assert not tree.watched.watching
    assert (await tree.measure(())).git_tree == first.git_tree  # now by git status
    tree.close()  # idempotent
    plain = WorkingTree(repo, no_slots, watch=False)
    assert plain.watched is None and (await plain.measure(())).git_tree == first.git_tree


async def test_touched_files_are_vouched_for_by_the_watch_and_still_seen_to_change(
    repo: Path, tmp_path: Path
) -> None:
    async def no_slots() -> list[tuple[str, str]]:
        return []

    outside = tmp_path / "outside.txt"
    outside.write_text("a\n", encoding="utf-8")
    (repo / "link.txt").symlink_to(outside)  # its changes are not in the watched tree
    target, new = repo / "app.py", repo / "src" / "new.txt"
    touched = tuple(str(p) for p in (target, repo / "link.txt", new))
    tree = WorkingTree(repo, no_slots)
    try:

        async def agrees() -> tuple[tuple[str, str], ...]:
            files = (await tree.measure(touched)).files_written
            assert files == FileHasher().digests(sorted(touched))  # as measured afresh
            return files

        first = await agrees()
        assert tree.watched is not None and tree.watched.watches(str(target))
        assert not tree.watched.watches(str(repo / "link.txt"))
        assert await agrees() == first
        target.write_text("name = 'new'\n", encoding="utf-8")  # racily new: not cached by stat
        second = await agrees()
        target.write_text("name = 'wen'\n", encoding="utf-8")  # the same size, at once
        assert await agrees() != second
        outside.write_text("b\n", encoding="utf-8")
        new.write_text("new\n", encoding="utf-8")  # was gone
        assert dict(await agrees())[str(new)] != "gone"
    finally:
        tree.close()


def test_the_status_output_is_put_together_again_in_gits_order() -> None:
    oid = "a" * 40
    entries = [
        f"# branch.oid {oid}",
        "# branch.head main",
        f"1 .M N... 100644 100644 100644 {oid} {oid} b.py",
        f"2 R. N... 100644 100644 100644 {oid} {oid} R100 c.py",
        "a.py",
        f"1 .M N... 100644 100644 100644 {oid} {oid} d e.py",
        "? a.txt",
        "? z/y.txt",
    ]
    output = "".join(e + "\0" for e in entries).encode()
    split = split_status(output)
    assert split is not None and join_status(*split) == output
    assert sorted(split[1]) == [b"a.txt", b"b.py", b"c.py", b"d e.py", b"z/y.txt"]
    twice = f"1 D. N... 100644 000000 000000 {oid} {'0' * 40} a.py\0? a.py\0".encode()
    assert split_status(twice) is None
