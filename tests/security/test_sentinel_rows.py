"""Checklist row #45: the sentinel cannot be dodged by spelling, does not trip on honest work,
and permissions.json fails closed when damaged and loses nothing when written at once.

The sentinel runs on a session's live path (scripted driver, real files, a real git repo, the
world measured by the real probe); permissions.json is written by real processes at once.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from runtime.errors import PolicyError
from runtime.guard.calls import call_key
from runtime.instance.home import InstancePaths
from runtime.policy.rules import load_rules, remember_targets
from runtime.turn.driver import (
    Decision,
    Done,
    DriverEvent,
    TextDelta,
    ToolCall,
    ToolCallRequest,
    ToolResult,
    Usage,
)
from runtime.turn.open import open_session
from runtime.turn.scripted import ScriptedDriver

ROOT = Path(__file__).resolve().parents[2]


class Executing:
    """Allows every call and applies a Write's bytes or runs a Bash command for real, as the
    tool is about to; remembers what it was asked (a stopped call never gets here)."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.asked: list[str] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call.tool_use_id)
        if call.name == "Bash":
            await anyio.run_process(["bash", "-c", call.input["command"]], cwd=self.cwd,
                                    check=False)  # fmt: skip
        elif call.name == "Write":
            path = Path(call.input["file_path"])
            await anyio.to_thread.run_sync(path.write_text, call.input["content"])
        return Decision(allow=True)


def turn(*calls: tuple[str, dict[str, Any], str]) -> list[DriverEvent]:
    """One turn that makes `calls` (name, input, result) in order."""
    events: list[DriverEvent] = [TextDelta("working. ")]
    for i, (name, args, out) in enumerate(calls):
        events += [ToolCall(f"c{i}", name, args), ToolResult(f"c{i}", out)]
    return [*events, TextDelta("done"), Usage(10, 5), Done()]


async def run_turn(
    cwd: Path, calls: list[tuple[str, dict[str, Any], str]]
) -> tuple[Any, list[str]]:
    """Run one turn of `calls` on instance t1; (the halt record or None, ids that ran)."""
    policy = Executing(cwd)
    async with open_session("t1", driver=ScriptedDriver([turn(*calls)]), approver=policy,
                            cwd=cwd) as session:  # fmt: skip
        async for _ in session.turn("go"):
            pass
        return session.halted, policy.asked


@pytest.fixture
def sentinel_on(configure: Callable[..., Any]) -> None:
    configure(runtime_sentinel=True)


@pytest.fixture
async def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    (path / "src").mkdir(parents=True)
    for name in ("a.py", "b.py"):
        (path / "src" / name).write_text("value = 1\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    await anyio.run_process([*git, "init", "-q"], cwd=path)
    await anyio.run_process([*git, "add", "-A"], cwd=path)
    await anyio.run_process([*git, "commit", "-q", "-m", "init"], cwd=path)
    return path


# -- evasion and false positives --------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    "calls",
    [
        [("Grep", {"pattern": "todo", "path": "src"}, "none"),
         ("Grep", {"path": "src", "pattern": "todo"}, "none"),
         ("Grep", {"path": "src", "pattern": "todo"}, "none")],
        [("Bash", {"command": "ls src"}, "a.py b.py"),
         ("Bash", {"command": "ls   src "}, "a.py b.py"),
         ("Bash", {"command": "\tls src", "description": "list again"}, "a.py b.py")],
    ],
    ids=["reordered-keys", "extra-whitespace"],
)  # fmt: skip
async def test_45_reordered_keys_or_extra_whitespace_do_not_evade_the_repeat_rule(
    anyio_backend: str, repo: Path, sentinel_on: None, calls: list[Any]
) -> None:
    """#45: the same call with its JSON keys reordered, or a Bash command spaced differently,
    counts as the same call: the third never runs."""
    halted, ran = await run_turn(repo, calls)
    assert halted is not None and "repeat" in str(halted)
    assert ran == ["c0", "c1"]


def test_45_whitespace_inside_a_file_writer_payload_is_kept() -> None:
    """#45: an Edit retried with corrected indentation is another call (its whitespace is
    meaning), while its keys are still canonical."""
    edit = {"file_path": "/w/a.py", "old_string": "x = 1", "new_string": "    x = 2"}
    fixed = {**edit, "new_string": "  x = 2"}
    assert call_key("Edit", edit) != call_key("Edit", fixed)
    assert call_key("Edit", edit) == call_key("Edit", dict(reversed(list(edit.items()))))


@pytest.mark.anyio
async def test_45_alternating_a_b_a_b_a_is_stopped(
    anyio_backend: str, repo: Path, sentinel_on: None
) -> None:
    """#45: A, B, A, B, A with nothing changing between them is stopped before the fifth."""
    a = ("Bash", {"command": "cat src/a.py"}, "value = 1")
    b = ("Bash", {"command": "cat src/b.py"}, "value = 1")
    halted, ran = await run_turn(repo, [a, b, a, b, a])
    assert halted is not None
    assert "c4" not in ran and len(ran) < 5


@pytest.mark.anyio
async def test_45_git_status_after_each_edit_is_not_a_loop(
    anyio_backend: str, repo: Path, sentinel_on: None
) -> None:
    """#45: a legitimate `git status` after each of five real edits never trips the sentinel."""
    calls: list[tuple[str, dict[str, Any], str]] = []
    for i in range(5):
        content = f"value = {i + 2}\n"
        calls += [("Write", {"file_path": str(repo / "src" / "a.py"), "content": content}, "ok"),
                  ("Bash", {"command": "git status"}, " M src/a.py")]  # fmt: skip
    halted, ran = await run_turn(repo, calls)
    assert halted is None
    assert ran == [f"c{i}" for i in range(10)]


# -- permissions.json: damaged, and written at once -------------------------------------------


@pytest.mark.parametrize("content", ['{"Bash": ["git\\\\ status"', "\x00\x00\x00", '{"Bash": "x"}'])
def test_45_a_damaged_permissions_json_fails_closed_naming_the_file(
    content: str, instance: InstancePaths, tmp_path: Path
) -> None:
    """#45: a truncated, zeroed or misshapen permissions.json: the rehearsal's Bash call
    (it would write notes.txt) never runs, the command exits 8 with one line naming the file,
    and an "always allow" saved meanwhile refuses too, leaving the bytes as they were."""
    instance.permissions.write_text(content, encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", "rehearse", "-i", "t1", "--script",
         str(ROOT / "examples" / "rehearsal" / "solo.toml"), "--prompt", "hello",
         "--prompt", "write the notes"],
        cwd=work, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "MNEMARA_NO_TUI": "1"},
    )  # fmt: skip
    assert done.returncode == 8, done.stderr
    assert done.stderr.count("\n") == 1 and str(instance.permissions) in done.stderr
    assert "Traceback" not in done.stderr
    assert not (work / "notes.txt").exists()
    with pytest.raises(PolicyError, match=str(instance.permissions)):
        remember_targets(instance.permissions, "Bash", ["ls"])
    assert instance.permissions.read_text(encoding="utf-8") == content


_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from runtime.policy.rules import remember_targets
    path, who, count = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    for i in range(count):
        remember_targets(path, "Bash", [f"echo {who} {i}"])
    """
)


def test_45_two_processes_saving_always_allow_at_once_lose_no_rule_and_never_tear(
    tmp_path: Path,
) -> None:
    """#45: two processes each save 60 "always allow" rules into one permissions.json at the
    same time while this one reads it: every rule is kept and no read sees a torn file."""
    path = tmp_path / "permissions.json"
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), who, "60"], cwd=ROOT)
        for who in ("left", "right")
    ]
    reads = 0
    try:
        while any(w.poll() is None for w in writers):
            load_rules(path)  # raises PolicyError on a torn or half-written file
            reads += 1
    finally:
        codes = [w.wait(timeout=120) for w in writers]
    assert codes == [0, 0]
    saved = {p.source for p in load_rules(path).patterns_for("Bash")}
    assert len(saved) == 120
    assert reads > 0
