"""Checklist rows #17, #18, #23 and #24 for our own reading tools and the role doc.

`read_skeleton` runs in real turns of a real session (scripted model): behind the real
policy for the path rows (#17, #18, #23), and behind an approver that allows everything for
#24, so that what is tested there is the tool's own refusal of FIFOs, devices, sockets,
directories and huge files. The role doc is read through `mnemara role --set` and through
`RoleDocSource`, as the host does every turn. A FIFO that would block gets a rescue: after
30 s a writer opens it, so a broken reader ends (and the test fails on `rescued`) instead of
hanging the suite.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.errors import MemoryStoreError
from runtime.instance.home import InstancePaths
from runtime.instance.regular_file import CHUNK_BYTES, read_regular_file
from runtime.instance.roledoc import RoleDocSource
from runtime.memory.notes import FileNotes
from runtime.memory.slugs import page_path
from runtime.memory.wiki import FileWiki
from runtime.tools.manifest import fingerprint
from runtime.turn.driver import Done, DriverEvent, TextDelta, ToolCall, ToolResult, Usage
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

RESCUE_AFTER = 30.0
TEN_GB = 10 * 1024**3


@contextmanager
def rescue_if_stuck(fifo: Path) -> Iterator[dict[str, bool]]:
    """Unblock a reader or writer stuck opening `fifo` after RESCUE_AFTER seconds; say if it
    was needed."""
    done = threading.Event()
    state = {"rescued": False}

    def rescue() -> None:
        if done.wait(RESCUE_AFTER):
            return
        state["rescued"] = True
        while not done.is_set():
            with contextlib.suppress(OSError):  # ENXIO: no reader (yet)
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            # A stuck writer waits for a reader: give it one, and drain what it wrote.
            with contextlib.suppress(OSError):
                reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
                done.wait(0.1)
                with contextlib.suppress(OSError):
                    os.read(reader, 1 << 16)
                os.close(reader)
            done.wait(0.1)

    thread = threading.Thread(target=rescue, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        done.set()
        thread.join()


def tool_turn(*calls: tuple[str, dict[str, Any]]) -> list[DriverEvent]:
    events: list[DriverEvent] = [
        ToolCall(f"c{i}", f"mcp__mnemara__{name}", args) for i, (name, args) in enumerate(calls)
    ]
    return [*events, TextDelta("done"), Usage(10, 5), Done()]


async def skeleton_turn(
    cwd: Path, paths: list[str], approver: Any | None = None
) -> list[ToolResult]:
    driver = ScriptedDriver([tool_turn(*(("read_skeleton", {"path": p}) for p in paths))])
    async with open_session("t1", driver=driver, approver=approver, cwd=cwd) as session:
        events = [e async for e in session.turn("skim")]
    found = {e.tool_use_id: e for e in events if isinstance(e, ToolResult)}
    return [found[f"c{i}"] for i in range(len(paths))]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A readable Python file outside HOME."""
    other = tmp_path / "otheruser"
    other.mkdir()
    (other / "x.py").write_text('"""secret"""\n', encoding="utf-8")
    return other


@pytest.mark.anyio
async def test_17_18_23_paths_that_leave_home_are_refused(
    instance: InstancePaths,
    configure: Callable[..., Any],
    home: Path,
    outside: Path,
) -> None:
    """#17 `..`, #18 a symlink out of HOME, #23 /proc and /dev/fd views: the real policy says no.

    Every probe names one file outside HOME, so the sentinel would stop the turn at the
    fourth (the same refusal three times is a runaway's sign): it is off here, so that the
    policy answers each spelling itself."""
    # file_tool_home_only stays on
    configure(read_skeleton_enabled=True, runtime_sentinel=False)
    (home / "link").symlink_to(outside)
    with (outside / "x.py").open("rb") as held:
        probes = [
            "~/../otheruser/x.py",
            f"{home}/../otheruser/x.py",
            "~/link/x.py",
            f"/proc/self/root{outside}/x.py",
            f"/proc/{os.getpid()}/root{outside}/x.py",
            f"/dev/fd/{held.fileno()}",
        ]
        results = await skeleton_turn(home, probes)
    for path, result in zip(probes, results, strict=True):
        assert result.is_error, path
        assert "outside the allowed directories" in result.content, (path, result.content)
        assert "secret" not in result.content


@pytest.mark.anyio
async def test_24_fifo_devices_sockets_and_huge_files_are_refused_without_hanging(
    instance: InstancePaths,
    configure: Callable[..., Any],
    approver: Any,
    home: Path,
) -> None:
    """#24: every path is allowed by the approver, so the refusals are the tool's own."""
    configure(read_skeleton_enabled=True)
    fifo = home / "fifo.py"
    os.mkfifo(fifo)
    (home / "zero.py").symlink_to("/dev/zero")
    (home / "urandom.py").symlink_to("/dev/urandom")
    (home / "dir.py").mkdir()
    big = home / "big.py"
    with big.open("wb") as fh:
        fh.truncate(TEN_GB)  # sparse: takes no disk
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(home / "sock.py"))
    expected = {
        "fifo.py": "is a FIFO (named pipe), not a regular file",
        "zero.py": "is a character device, not a regular file",
        "urandom.py": "is a character device, not a regular file",
        "dir.py": "is a directory, not a regular file",
        "sock.py": "is a socket, not a regular file",
        "big.py": "is larger than 5 MiB",
    }
    try:
        with rescue_if_stuck(fifo) as stuck:
            results = await skeleton_turn(home, list(expected), approver)
    finally:
        listener.close()
    assert not stuck["rescued"], "read_skeleton blocked on a FIFO"
    for (name, needle), result in zip(expected.items(), results, strict=True):
        assert result.is_error and needle in result.content, (name, result.content)


@pytest.mark.anyio
async def test_24_a_cancelled_read_stops_at_the_next_chunk(tmp_path: Path) -> None:
    """#24 cancellation: a read in a worker thread ends once its caller is cancelled.

    The check passed in is anyio's own `check_cancelled` (as read_skeleton passes it); the
    caller's scope is cancelled during the second check, so the read must stop there, with
    the file closed, instead of reading on to the end.
    """
    big = tmp_path / "big.py"
    big.write_bytes(b"#" * (8 * CHUNK_BYTES))
    calls = 0
    before = len(os.listdir("/proc/self/fd"))
    with anyio.CancelScope() as scope:

        def check() -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                anyio.from_thread.run_sync(scope.cancel)
            anyio.from_thread.check_cancelled()

        read = partial(read_regular_file, big, 16 * CHUNK_BYTES, check_cancelled=check)
        await anyio.to_thread.run_sync(read)
    assert scope.cancelled_caught and calls == 2
    assert len(os.listdir("/proc/self/fd")) == before  # the descriptor was closed


runner = CliRunner()


def test_24_role_doc_that_is_a_fifo_device_or_huge_is_refused_by_the_cli(
    tmp_path: Path, mnemara_home: Path
) -> None:
    """#24 for `mnemara role --set`: exit 7, one line, no wait."""
    assert runner.invoke(app, ["init", "--instance", "r"]).exit_code == 0
    fifo = tmp_path / "role.md"
    os.mkfifo(fifo)
    big = tmp_path / "big.md"
    with big.open("wb") as fh:
        fh.truncate(TEN_GB)
    cases = {
        str(fifo): "is a FIFO (named pipe), not a regular file",
        "/dev/zero": "is a character device",
        str(big): "larger than 1 MiB",
    }
    with rescue_if_stuck(fifo) as stuck:
        outcomes = {p: runner.invoke(app, ["role", "-i", "r", "--set", p]) for p in cases}
    assert not stuck["rescued"], "role --set blocked on a FIFO"
    for path, needle in cases.items():
        result = outcomes[path]
        assert result.exit_code == 7 and needle in result.stderr, (path, result.stderr)
        assert "Traceback" not in result.stderr


def test_24_a_role_doc_replaced_by_a_fifo_does_not_stall_the_turn(tmp_path: Path) -> None:
    """#24 for the per-turn read: the last good text is kept and the problem reported."""
    doc = tmp_path / "role.md"
    doc.write_text("# Role v1\n", encoding="utf-8")
    source = RoleDocSource(doc)
    assert source.read().text == "# Role v1\n"
    doc.unlink()
    os.mkfifo(doc)
    with rescue_if_stuck(doc) as stuck:
        read = source.read()
    assert not stuck["rescued"], "the role doc read blocked on a FIFO"
    assert read.text == "# Role v1\n" and read.warning and "FIFO" in read.warning


def test_24_the_file_manifest_does_not_wait_on_a_fifo(tmp_path: Path) -> None:
    """#24 for the manifest: a file that became a FIFO (or a device) counts as gone."""
    path = tmp_path / "notes.py"
    os.mkfifo(path)
    with rescue_if_stuck(path) as stuck:
        seen = fingerprint(str(path))
    assert not stuck["rescued"], "the manifest blocked on a FIFO"
    assert seen is None and fingerprint("/dev/zero") is None
    with path.with_suffix(".big").open("wb") as fh:
        fh.truncate(TEN_GB)
    huge = fingerprint(str(path.with_suffix(".big")))
    assert huge is not None and huge.digest.startswith("size-mtime:")


def test_24_memory_files_that_became_fifos_are_refused_without_hanging(tmp_path: Path) -> None:
    """#24 for memory: a wiki page, a day of notes or the archive ledger replaced by a FIFO
    is refused, naming the file, on read and on append; nothing waits for a writer."""
    wiki, notes = FileWiki(tmp_path / "wiki"), FileNotes(tmp_path / "memory")
    page = page_path(wiki.root, "plans")
    page.parent.mkdir(parents=True)
    os.mkfifo(page)
    notes.root.mkdir()
    day = notes.root / f"{datetime.now(UTC).date().isoformat()}.md"
    os.mkfifo(day)
    notes.archive_dir.mkdir()
    os.mkfifo(notes.ledger)
    attempts: list[Callable[[], object]] = [
        lambda: wiki.read("plans"),
        lambda: wiki.write("plans", "more"),
        lambda: notes.append("a fact", category="fact"),
        lambda: notes.atoms(),
    ]
    for attempt in attempts:
        with contextlib.ExitStack() as stack:
            guards = [stack.enter_context(rescue_if_stuck(f)) for f in (page, day, notes.ledger)]
            with pytest.raises(MemoryStoreError) as caught:
                attempt()
        assert not any(g["rescued"] for g in guards), f"{attempt} blocked on a FIFO"
        assert "not a regular file" in str(caught.value) or "FIFO" in str(caught.value)
    with rescue_if_stuck(page) as stuck, rescue_if_stuck(notes.ledger) as stuck_ledger:
        assert wiki.atoms() == []  # a page that is not a file is not a page
        assert notes.archived() == []  # nor is a ledger
    assert not stuck["rescued"] and not stuck_ledger["rescued"]
