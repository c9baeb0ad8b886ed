"""The git store in a user's repository: their index, HEAD, branches, stash and config are
never touched; .gitignore decides what is checkpointed (untracked files that are not ignored
are); bytes are kept exactly whatever .gitattributes says; nested repositories are left out.
And the copy store's walk reads only what changed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from runtime.checkpoint import CheckpointSettings, open_store, rewind, take_and_prune
from runtime.checkpoint.copystore import CopyStore

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

SETTINGS = CheckpointSettings()


def git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    # GIT_OPTIONAL_LOCKS=0: `git status` here must not refresh the index it is checking.
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1", GIT_OPTIONAL_LOCKS="0",
               GIT_AUTHOR_NAME="u", GIT_AUTHOR_EMAIL="u@x",
               GIT_COMMITTER_NAME="u", GIT_COMMITTER_EMAIL="u@x")  # fmt: skip
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, check=True)
    return done.stdout.decode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A user's repository mid-work: commits, a branch, a stash, staged and unstaged edits,
    an untracked file and ignored build output."""
    work = tmp_path / "repo"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / ".gitignore").write_text("build/\n*.log\n")
    (work / "app.py").write_text("v = 1\n")
    (work / "lib.py").write_text("w = 1\n")
    git(work, "add", "-A")
    git(work, "commit", "-q", "-m", "one")
    git(work, "branch", "feature")
    (work / "app.py").write_text("v = 2\n")
    git(work, "stash", "-q")
    (work / "app.py").write_text("v = 3\n")
    git(work, "add", "app.py")  # staged
    (work / "lib.py").write_text("w = 2\n")  # not staged
    (work / "notes.txt").write_text("untracked, not ignored\n")
    (work / "build").mkdir()
    (work / "build" / "out.o").write_text("ignored output\n")
    (work / "run.log").write_text("ignored log\n")
    return work


def user_state(work: Path) -> tuple[object, ...]:
    return (
        git(work, "status", "--porcelain=v1", "--branch"),
        git(work, "stash", "list"),
        git(work, "branch", "-a", "-v"),
        git(work, "rev-parse", "HEAD"),
        git(work, "diff", "--cached"),
        (work / ".git" / "index").read_bytes(),
        (work / ".git" / "config").read_bytes(),
        sorted(p.name for p in (work / ".git" / "refs" / "heads").iterdir()),
    )


def test_the_users_repository_is_never_touched(repo: Path, tmp_path: Path) -> None:
    store = open_store(tmp_path / "instance", prefer="git")
    before = user_state(repo)
    first = take_and_prune(store, [repo], settings=SETTINGS, turn=1).checkpoint
    held = store.files(first)[str(repo)]
    assert "notes.txt" in held and "lib.py" in held and ".gitignore" in held
    assert not any(p.startswith("build/") or p.endswith(".log") for p in held)
    assert user_state(repo) == before
    (repo / "app.py").write_text("v = 4\n")
    (repo / "notes.txt").unlink()
    (repo / "made.txt").write_text("new\n")
    (repo / "build" / "out.o").write_text("rebuilt\n")
    take_and_prune(store, [repo], settings=SETTINGS, turn=2)
    report = rewind(store, first.number, settings=SETTINGS)
    assert report.ok
    assert user_state(repo) == before  # the user's index, stash, branches: as they were
    assert (repo / "app.py").read_text() == "v = 3\n"
    assert (repo / "notes.txt").read_text() == "untracked, not ignored\n"
    assert not (repo / "made.txt").exists()
    assert (repo / "build" / "out.o").read_text() == "rebuilt\n"  # ignored: not touched


def test_bytes_are_kept_whatever_gitattributes_says(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / ".gitattributes").write_text("* text eol=lf\n*.txt filter=lfs ident\n")
    body = b"$Id$\r\nwindows lines\r\n"
    (work / "crlf.txt").write_bytes(body)
    store = open_store(tmp_path / "instance", prefer="git")
    first = take_and_prune(store, [work], settings=SETTINGS, turn=1).checkpoint
    (work / "crlf.txt").write_bytes(b"changed\n")
    assert rewind(store, first.number, settings=SETTINGS).ok
    assert (work / "crlf.txt").read_bytes() == body


def test_a_turn_that_stops_ignoring_a_folder_does_not_lose_it_to_a_rewind(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / "node_modules" / "pkg").mkdir(parents=True)
    (work / "node_modules" / "pkg" / "index.js").write_text("module.exports = 1\n")
    (work / ".gitignore").write_text("node_modules/\n")
    (work / "app.js").write_text("one\n")
    store = open_store(tmp_path / "instance", prefer="git")
    first = take_and_prune(store, [work], settings=SETTINGS, turn=1).checkpoint
    (work / ".gitignore").write_text("")  # the turn stops ignoring it
    (work / "app.js").write_text("two\n")
    report = rewind(store, first.number, settings=SETTINGS)
    assert report.ok
    assert (work / ".gitignore").read_text() == "node_modules/\n"
    assert (work / "node_modules" / "pkg" / "index.js").is_file()  # ignored then: kept
    assert (work / "app.js").read_text() == "one\n"


def test_a_nested_repository_is_left_out(tmp_path: Path) -> None:
    work = tmp_path / "work"
    nested = work / "vendor" / "dep"
    nested.mkdir(parents=True)
    git(nested, "init", "-q")
    (nested / "dep.c").write_text("int x;\n")
    (work / "main.c").write_text("int main;\n")
    store = open_store(tmp_path / "instance", prefer="git")
    first = take_and_prune(store, [work], settings=SETTINGS, turn=1).checkpoint
    assert set(store.files(first)[str(work)]) == {"main.c"}
    (nested / "dep.c").write_text("changed by hand\n")
    assert rewind(store, first.number, settings=SETTINGS).ok
    assert (nested / "dep.c").read_text() == "changed by hand\n"


def test_an_unchanged_area_costs_no_new_objects_and_the_index_is_private(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    store = open_store(tmp_path / "instance", prefer="git")
    one = take_and_prune(store, [work], settings=SETTINGS, turn=1).checkpoint
    two = take_and_prune(store, [work], settings=SETTINGS, turn=2).checkpoint
    assert one.areas[0].tree == two.areas[0].tree and two.areas[0].changes.total == 0
    assert not (work / ".git").exists()  # an area outside git stays outside git


def test_the_copy_store_reads_only_what_changed(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for n in range(20):
        (work / f"f{n}.txt").write_text(f"{n}\n")
    store = open_store(tmp_path / "instance", prefer="copy")
    assert isinstance(store, CopyStore)
    read: list[Path] = []
    keep = store._keep_file

    def counting(path: Path) -> str:
        read.append(path)
        return keep(path)

    store._keep_file = counting  # type: ignore[method-assign]
    take_and_prune(store, [work], settings=SETTINGS, turn=1)
    assert len(read) == 20
    old = 1_000_000_000  # files written long before the walk: not racy
    for n in range(20):
        os.utime(work / f"f{n}.txt", ns=(old, old))
    store._last.clear()  # a fresh host: the last manifest comes from disk
    take_and_prune(store, [work], settings=SETTINGS, turn=2)
    read.clear()
    (work / "f3.txt").write_text("changed\n")
    checkpoint = take_and_prune(store, [work], settings=SETTINGS, turn=3).checkpoint
    assert read == [work / "f3.txt"]
    assert checkpoint.areas[0].changes.modified == 1


def test_dropped_checkpoints_go_and_a_gc_keeps_what_the_kept_ones_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from runtime.checkpoint import gitstore

    monkeypatch.setattr(gitstore, "LOOSE_OBJECTS_FOR_GC", -1)  # every drop packs the store
    work = tmp_path / "work"
    work.mkdir()
    store = open_store(tmp_path / "instance", prefer="git")
    keep = CheckpointSettings(keep=2)
    trees = []
    for turn in range(1, 5):
        (work / "a.txt").write_text(f"turn {turn}\n")
        taken = take_and_prune(store, [work], settings=keep, turn=turn)
        trees.append(taken.checkpoint.areas[0].tree)
    assert [c.number for c in store.checkpoints()] == [3, 4]
    refs = store.root / "git" / "refs" / "mnemara"
    assert sorted(p.name for p in refs.iterdir()) == ["3", "4"]
    count = git(store.root / "git", "count-objects", "-v")
    assert "count: 0" in count  # packed, and what only 1 and 2 held deleted:
    gone = subprocess.run(["git", "cat-file", "-e", trees[0]], cwd=store.root / "git")
    assert gone.returncode != 0
    (work / "a.txt").write_text("later\n")
    assert rewind(store, 3, settings=SETTINGS).ok
    assert (work / "a.txt").read_text() == "turn 3\n"


def test_a_lock_a_killed_host_left_does_not_stop_later_checkpoints(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    store = open_store(tmp_path / "instance", prefer="git")
    first = take_and_prune(store, [work], settings=SETTINGS, turn=1).checkpoint
    index = store.root / "git" / "mnemara-index" / first.areas[0].key
    Path(f"{index}.lock").write_bytes(b"")  # as a kill -9 during update-index leaves it
    (work / "a.txt").write_text("b\n")
    second = take_and_prune(store, [work], settings=SETTINGS, turn=2).checkpoint
    assert second.areas[0].changes.modified == 1
