"""Measuring the world for real: git repositories in tmp_path changed by real subprocesses
(`sed -i`, `git add`, `git commit`), identical rewrites, untracked files, files outside git,
and the files a Bash command names."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from runtime.guard import gitstatus
from runtime.guard.gitstatus import git_snapshot, git_state, parse_status
from runtime.guard.world import FileHasher, WorkingTree, touched_paths
from runtime.turn.driver import ToolCallRequest

pytestmark = pytest.mark.anyio


async def sh(cwd: Path, *command: str) -> None:
    await anyio.run_process(list(command), cwd=cwd)


async def git(repo: Path, *args: str) -> None:
    await sh(repo, "git", "-c", "user.name=t", "-c", "user.email=t@t", *args)


@pytest.fixture
async def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    await git(path, "init", "-q")
    (path / "app.py").write_text("name = 'old'\n", encoding="utf-8")
    (path / ".gitignore").write_text("build/\n", encoding="utf-8")
    await git(path, "add", "-A")
    await git(path, "commit", "-q", "-m", "init")
    return path


async def no_slots() -> list[tuple[str, str]]:
    return []


async def test_outside_git_there_is_no_git_state(tmp_path: Path) -> None:
    assert await git_state(tmp_path) is None


async def test_outside_git_no_git_process_is_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[str, ...]] = []

    async def recording(cwd: Path, *args: str, **_: object) -> None:
        started.append(args)
        return None

    monkeypatch.setattr(gitstatus, "run_git", recording)
    assert await git_state(tmp_path) is None and started == []
    # A variable that points git elsewhere makes it ask git after all.
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere.git"))
    assert await git_state(tmp_path) is None and started == [("rev-parse", "--show-toplevel")]


async def test_a_repository_made_mid_session_is_seen_from_a_subdirectory(tmp_path: Path) -> None:
    sub = tmp_path / "project" / "src"
    sub.mkdir(parents=True)
    assert await git_state(sub) is None
    await git(tmp_path / "project", "init", "-q")
    assert await git_state(sub) is not None


async def test_a_sed_through_a_real_subprocess_changes_the_state(repo: Path) -> None:
    clean = await git_state(repo)
    assert clean is not None and clean == await git_state(repo)
    await sh(repo, "sed", "-i", "s/old/new/", "app.py")
    edited = await git_state(repo)
    assert edited not in (None, clean)
    # The same bytes written again: no change (content, not mtime, is compared).
    (repo / "app.py").write_text("name = 'new'\n", encoding="utf-8")
    assert await git_state(repo) == edited
    # Another change of the same size is a change.
    await sh(repo, "sed", "-i", "s/new/wen/", "app.py")
    assert await git_state(repo) not in (None, edited)


async def test_staging_and_committing_change_the_state(repo: Path) -> None:
    (repo / "app.py").write_text("name = 'staged'\n", encoding="utf-8")
    modified = await git_state(repo)
    await git(repo, "add", "app.py")
    staged = await git_state(repo)  # the work tree is the same, the index is not
    assert staged not in (None, modified)
    await git(repo, "commit", "-q", "-m", "two")
    committed = await git_state(repo)
    assert committed not in (None, modified, staged)
    snapshot = await git_snapshot(repo)
    assert snapshot is not None and snapshot.contents == ()  # a clean tree: nothing to hash


async def test_untracked_files_count_by_content_and_ignored_ones_do_not(repo: Path) -> None:
    before = await git_state(repo)
    (repo / "notes").mkdir()
    (repo / "notes" / "todo.txt").write_text("a\n", encoding="utf-8")
    added = await git_state(repo)
    assert added not in (None, before)
    (repo / "notes" / "todo.txt").write_text("b\n", encoding="utf-8")  # same size
    assert await git_state(repo) not in (None, added)
    (repo / "notes" / "todo.txt").write_text("a\n", encoding="utf-8")
    assert await git_state(repo) == added  # back to the same bytes: the same state
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_bytes(b"\0" * 10)
    assert await git_state(repo) == added
    snapshot = await git_snapshot(repo / "notes")  # from a subdirectory: the whole repository
    assert snapshot is not None and [p for p, _ in snapshot.contents] == ["notes/todo.txt"]


async def test_measuring_never_writes_to_the_repository(repo: Path) -> None:
    index = repo / ".git" / "index"
    os.utime(repo / "app.py", ns=(1, 1))  # stat-dirty: a plain `git status` would rewrite it
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    objects = sorted((repo / ".git" / "objects").rglob("*"))
    for _ in range(3):
        assert await git_state(repo) is not None
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before
    assert sorted((repo / ".git" / "objects").rglob("*")) == objects


async def test_a_slow_git_gives_no_state(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitstatus, "GIT_TIMEOUT_S", 0.0)
    assert await git_state(repo) is None


async def test_the_working_tree_hashes_touched_files_outside_git(tmp_path: Path) -> None:
    tree = WorkingTree(tmp_path, no_slots)
    try:
        await _hash_touched_files(tree, tmp_path)
    finally:
        tree.close()


async def _hash_touched_files(tree: WorkingTree, tmp_path: Path) -> None:
    target = tmp_path / "data.txt"
    target.write_text("one\n", encoding="utf-8")
    call = ToolCallRequest("t1", "Bash", {"command": "sed -i s/one/two/ data.txt"})
    touched = touched_paths(call, str(tmp_path))
    assert touched == (str(target),)
    first = await tree.measure(touched)
    assert first.git_tree is None and dict(first.files_written)[str(target)] != "gone"
    target.write_text("one\n", encoding="utf-8")  # an identical rewrite
    assert await tree.measure(touched) == first
    await sh(tmp_path, "sed", "-i", "s/one/two/", "data.txt")
    changed = await tree.measure(touched)
    assert changed != first
    target.unlink()
    assert dict((await tree.measure(touched)).files_written)[str(target)] == "gone"


async def test_slots_are_measured_by_value(tmp_path: Path) -> None:
    values = [("status", "a")]

    async def slots() -> list[tuple[str, str]]:
        return list(values)

    tree = WorkingTree(tmp_path, slots, git=lambda _: _none())
    first = await tree.measure(())
    values[0] = ("status", "b")
    assert (await tree.measure(())).slots != first.slots


async def _none() -> str | None:
    return None


def test_big_files_and_spent_budgets_count_by_size_and_mtime(tmp_path: Path) -> None:
    small, big = tmp_path / "small.txt", tmp_path / "big.bin"
    small.write_text("x" * 10, encoding="utf-8")
    big.write_bytes(b"y" * 100)
    hasher = FileHasher(file_bytes=50, total_bytes=1_000)
    digests = dict(hasher.digests([str(small), str(big), str(tmp_path / "nope")]))
    assert len(digests[str(small)]) == 64 and digests[str(big)].startswith("stat:100:")
    assert digests[str(tmp_path / "nope")] == "gone"
    spent = FileHasher(file_bytes=50, total_bytes=5)
    assert dict(spent.digests([str(small)]))[str(small)].startswith("stat:")
    assert dict(hasher.digests([str(tmp_path)]))[str(tmp_path)] == "gone"  # a directory


def test_porcelain_v2_is_parsed() -> None:
    oid = "a" * 40
    entries = [
        f"# branch.oid {oid}",
        "# branch.head main",
        "# branch.ab +1 -0",
        f"1 .M N... 100644 100644 100644 {oid} {oid} src/app.py",
        f"1 M. N... 100644 100644 100644 {oid} {oid} staged only.py",
        f"1 .D N... 100644 100644 000000 {oid} {oid} gone.py",
        f"2 RM N... 100644 100644 100644 {oid} {oid} R100 new name.py",
        "old name.py",
        f"u UU N... 100644 100644 100644 100644 {oid} {oid} {oid} conflict.py",
        "? notes/todo.txt",
        "",
    ]
    status = parse_status("\0".join(entries).encode())
    assert status.head == oid
    assert status.changed == ("src/app.py", "new name.py", "conflict.py", "notes/todo.txt")


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sed -i s/a/b/ x.py", ["x.py"]),
        ("sed -i -e s/a/b/ -e s/c/d/ src/x.py src/y.py", ["src/x.py", "src/y.py"]),
        ("grep -rn 'def main' src/app.py", ["src/app.py"]),
        ("cd sub && cat notes.md > ../out.txt", ["sub/notes.md", "out.txt"]),
        ("echo done >> log/run.log 2>/dev/null", ["log/run.log"]),
        ("pytest -x tests/test_a.py::test_one", ["tests/test_a.py"]),
        ("git add src/a.py && git commit -m 'fix it'", ["src/a.py"]),
        ("curl -s https://example.com/x.json -o x.json", ["x.json"]),
        ("pip install requests==2.32.3", []),
        ("make test", []),
        ("cat Makefile", ["Makefile"]),
        ("ls *.py", []),
        ('python -c "import os; print(os.getcwd())" && cat $HOME/x.txt', []),
        ("cat > gen.py <<'EOF'\nprint('hi.there')\nEOF", ["gen.py"]),
    ],
)
def test_the_files_a_bash_command_names(command: str, expected: list[str]) -> None:
    call = ToolCallRequest("t", "Bash", {"command": command})
    assert touched_paths(call, "/w") == tuple(f"/w/{p}" for p in expected)


def test_named_files_are_bounded_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    command = " ".join(f"f{i}.txt" for i in range(100)) + f" ; touch {marker}"
    found = touched_paths(ToolCallRequest("t", "Bash", {"command": f"cat {command}"}), "/w")
    assert len(found) == 32 and not marker.exists()
    huge = ToolCallRequest("t", "Bash", {"command": "cat a.txt " * 5_000})
    assert touched_paths(huge, "/w") == ()
    assert touched_paths(ToolCallRequest("t", "Read", {"file_path": "~/x"}), "/w") == (
        os.path.expanduser("~/x"),
    )
