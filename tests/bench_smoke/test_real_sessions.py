"""bench/real_sessions.py on a short slice of a session, written here in both formats.

The slice is made up for the test (the real transcripts stay in ../shared, read by the bench
only): a human prompt, a read, an edit, a shell command, Claude Code's own bookkeeping and a
read of its background task's output file, a fetch of a page, a task notification and a
second prompt. Confined, nothing of it is asked but the fetch of a host not on the list and
nothing is denied; unconfined, the edit and the command ask, as the strict rules say.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[2]
CWD = "/Users/someone/widget"
TASKS = "/private/tmp/claude-501/-Users-someone-widget/6f1e/tasks"

CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("Read", {"file_path": f"{CWD}/src/app.py"}, "print('hi')\n"),
    ("Edit", {"file_path": f"{CWD}/src/app.py", "old_string": "hi", "new_string": "hello"}, "ok"),
    ("Bash", {"command": "python3 -m pytest -q", "run_in_background": True}, "started b1"),
    ("TaskCreate", {"subject": "run the tests"}, "created 1"),
    ("Read", {"file_path": f"{TASKS}/b1.output"}, "3 passed\n"),
    ("WebFetch", {"url": "https://status.example.org/", "prompt": "up?"}, "up"),
]


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import real_sessions

    return real_sessions


def claude_format(path: Path) -> None:
    records: list[dict[str, Any]] = []

    def user(content: Any, **extra: Any) -> None:
        records.append({"type": "user", "cwd": CWD, "timestamp": "2026-01-02T10:00:00Z",
                        "message": {"role": "user", "content": content}, **extra})  # fmt: skip

    user("add a greeting")
    for i, (tool, tool_input, output) in enumerate(CALLS):
        records.append({"type": "assistant", "cwd": CWD, "timestamp": "2026-01-02T10:00:01Z",
                        "message": {"role": "assistant", "content": [
                            {"type": "tool_use", "id": f"t{i}", "name": tool,
                             "input": tool_input}]}})  # fmt: skip
        user([{"type": "tool_result", "tool_use_id": f"t{i}", "content": output}])
    user("<task-notification>\n<task-id>b1</task-id>\n</task-notification>")
    user("thanks", isSidechain=False)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def engram_format(path: Path) -> None:
    lines = [{"role": "user", "content": {"type": "text", "text": "add a greeting"}}]
    for i, (tool, tool_input, output) in enumerate(CALLS):
        use = {"type": "tool_use", "tool_name": tool, "tool_id": f"t{i}", "input": tool_input}
        result = {"type": "tool_result", "tool_id": f"t{i}", "output": output, "is_error": False}
        lines += [{"role": "assistant", "content": use}, {"role": "tool", "content": result}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    claude_format(folder / "a__claude.jsonl")
    engram_format(folder / "b__engram.jsonl")
    return folder


def test_both_formats_read_into_the_same_calls(bench: ModuleType, sessions: Path) -> None:
    import transcripts

    loaded = transcripts.load_all(sessions)
    assert [s.format for s in loaded] == ["claude", "engram"]
    for session in loaded:
        assert session.cwd == CWD
        assert [c.tool for c in session.calls] == [tool for tool, _, _ in CALLS]
        assert all(c.answered for c in session.calls)
    claude = loaded[0]
    assert [t.prompt for t in claude.turns] == ["add a greeting", "thanks"]
    assert claude.turns[0].notices and "task-notification" in claude.turns[0].notices[0]


def test_a_confined_replay_asks_only_about_an_unlisted_host(
    bench: ModuleType, sessions: Path
) -> None:
    tallies = anyio.run(lambda: bench.run(sessions, confined=True))
    for tally in tallies:
        assert tally.calls == len(CALLS)
        asked = [r for r in tally.refusals if r.kind == "asked"]
        assert [r.tool for r in asked] == ["WebFetch"], tally.refusals
        assert tally.count("denied") == 0 and tally.count("halted") == 0


def test_unconfined_the_strict_rules_ask_and_the_clis_own_files_stay_readable(
    bench: ModuleType, sessions: Path
) -> None:
    tallies = anyio.run(lambda: bench.run(sessions, confined=False))
    for tally in tallies:
        asked = {r.tool for r in tally.refusals if r.kind == "asked"}
        assert {"Edit", "Bash", "WebFetch"} <= asked, tally.refusals
        assert "TaskCreate" not in asked  # bookkeeping, confined or not
        assert tally.reads_denied() == 0  # the task's output file is the CLI's own


def test_the_bench_prints_its_figures_and_judges_its_targets(
    bench: ModuleType, sessions: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert bench.main(["--sessions", str(sessions), "--show", "2"]) == 1  # a tiny slice: >5%
    out = capsys.readouterr().out
    assert f"asked: 2 of {2 * len(CALLS)} calls (16.7%); target at most 5%" in out
    assert "denied: 0 (reads denied: 0; target 0)" in out and "halted: 0" in out
    assert "false halts: 0 of 2 sessions" in out and "load average" in out
    assert "TARGETS MISSED" in out and "asked a__claude 1.6 WebFetch" in out
    with pytest.raises(SystemExit) as usage:
        bench.main(["--sessions", str(sessions / "missing")])
    assert usage.value.code == 2
