"""Real Claude Code sessions read into turns of tool calls, in either format they come in.

Two formats (../shared/reference/real-sessions/README.md has the details):

- `claude`: Claude Code's own session file: a JSON record a line; tool calls are `tool_use`
  blocks of assistant records, their results `tool_result` blocks of the user record after.
- `engram`: one block a line: `role` and a `content` holding a `tool_use` (`tool_name`,
  `tool_id`, `input`), a `tool_result` (`tool_id`, `output`, `is_error`) or text.

A turn starts at each message a human typed; task notifications from background jobs,
compaction summaries, command output and skill bodies are not typed by a human and start
none (they are kept as `notices` of the turn, which a replay reads as outside changes).
Subagent records (`isSidechain`) are left out: their calls come back as the Task's result.
The session's working directory is the records' `cwd` (claude), else the directory most
file-tool paths lie in (engram).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PureWindowsPath
from typing import Any

# Text of a user record that no human typed.
NOT_TYPED = (
    "<task-notification>", "<command-name>", "<command-message>", "<local-command-stdout>",
    "<local-command-caveat>", "<local-command-stderr>", "Caveat:", "<system-reminder>",
    "This session is being continued", "[Request interrupted", "<bash-input>",
    "<bash-stdout>", "<user-prompt-submit-hook>", "Base directory for this skill",
)  # fmt: skip
PATH_KEYS = ("file_path", "notebook_path", "path")


class TranscriptError(Exception):
    """A file is in neither format (the message names it)."""


@dataclass
class Call:
    id: str
    tool: str
    input: dict[str, Any]
    output: str = ""
    is_error: bool = False
    at: datetime | None = None  # when the call was made
    answered_at: datetime | None = None  # when its result came back
    answered: bool = False


@dataclass
class Turn:
    prompt: str
    at: datetime | None
    calls: list[Call] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)  # not typed: notifications, summaries
    # For each notice, how many of the turn's calls had been made when it came in.
    notice_after: list[int] = field(default_factory=list)


@dataclass
class Session:
    name: str
    format: str
    cwd: str
    turns: list[Turn]

    @property
    def calls(self) -> list[Call]:
        return [c for t in self.turns for c in t.calls]


def _time(text: Any) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _text_of(content: Any) -> str:
    """The text of a message or tool result: a string, or the text of its blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        kinds = ("text", None, "tool_result")
        texts = (
            b.get("text", b.get("content", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") in kinds
        )
        return "\n".join(_text_of(t) for t in texts)
    return ""


def _typed(text: str) -> bool:
    stripped = text.lstrip()
    return bool(stripped) and not stripped.startswith(NOT_TYPED)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TranscriptError(f"{path}: line {number} is not JSON ({exc})") from None
            if isinstance(record, dict):
                yield record


def detect(path: Path) -> str:
    for record in _records(path):
        if "role" in record and "content" in record:
            return "engram"
        if record.get("type") in ("user", "assistant", "summary", "system", "queue-operation"):
            return "claude"
    raise TranscriptError(f"{path}: neither a Claude Code session file nor an engram transcript")


def load(path: Path) -> Session:
    """The session in `path`, whichever format it is in."""
    kind = detect(path)
    turns, cwd = (_claude if kind == "claude" else _engram)(path)
    turns = [t for t in turns if t.calls or t.prompt]
    return Session(path.stem, kind, cwd or _common_root(turns), turns)


def load_all(directory: Path) -> list[Session]:
    files = sorted(p for p in directory.glob("*.jsonl") if p.is_file())
    if not files:
        raise TranscriptError(f"{directory}: no *.jsonl transcripts there")
    return [load(p) for p in files]


class _Builder:
    def __init__(self) -> None:
        self.turns: list[Turn] = []
        self.pending: dict[str, Call] = {}

    def turn(self) -> Turn:
        if not self.turns:
            self.turns.append(Turn("", None))
        return self.turns[-1]

    def human(self, text: str, at: datetime | None) -> None:
        if _typed(text):
            self.turns.append(Turn(text, at))
        elif text.strip():
            turn = self.turn()
            turn.notices.append(text)
            turn.notice_after.append(len(turn.calls))

    def call(self, ident: str, tool: str, tool_input: Any, at: datetime | None) -> None:
        call = Call(ident, tool, tool_input if isinstance(tool_input, dict) else {}, at=at)
        self.turn().calls.append(call)
        self.pending[ident] = call

    def result(self, ident: str, output: str, is_error: bool, at: datetime | None) -> None:
        call = self.pending.pop(ident, None)
        if call is not None:
            call.output, call.is_error, call.answered_at, call.answered = output, is_error, at, True


def _claude(path: Path) -> tuple[list[Turn], str]:
    built = _Builder()
    cwds: Counter[str] = Counter()
    for record in _records(path):
        if record.get("isSidechain") or record.get("type") not in ("user", "assistant"):
            continue
        if isinstance(record.get("cwd"), str):
            cwds[record["cwd"]] += 1
        at = _time(record.get("timestamp"))
        content = (record.get("message") or {}).get("content")
        if record["type"] == "assistant":
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    built.call(str(block.get("id")), str(block.get("name")), block.get("input"), at)
            continue
        if record.get("isMeta"):
            continue
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for block in results:
            output = _text_of(block.get("content"))
            built.result(str(block.get("tool_use_id")), output, bool(block.get("is_error")), at)
        if not results:
            built.human(_text_of(blocks), at)
    return built.turns, cwds.most_common(1)[0][0] if cwds else ""


def _engram(path: Path) -> tuple[list[Turn], str]:
    built = _Builder()
    for record in _records(path):
        at = _time(record.get("timestamp"))
        contents = record.get("content")
        for content in contents if isinstance(contents, list) else [contents]:
            if not isinstance(content, dict):
                continue
            kind = content.get("type")
            if kind == "tool_use":
                ident = str(content.get("tool_id") or content.get("id"))
                tool = str(content.get("tool_name") or content.get("name"))
                built.call(ident, tool, content.get("input"), at)
            elif kind == "tool_result":
                ident = str(content.get("tool_id") or content.get("tool_use_id"))
                output = _text_of(content.get("output", content.get("content", "")))
                built.result(ident, output, bool(content.get("is_error")), at)
            elif kind == "text" and record.get("role") == "user":
                built.human(str(content.get("text", "")), at)
    return built.turns, ""


def _common_root(turns: list[Turn]) -> str:
    """The project directory most absolute file-tool paths lie in (three parts deep under a
    home directory: /Users/me/project, C:/Users/me/project; two elsewhere)."""
    roots: Counter[str] = Counter()
    for turn in turns:
        for call in turn.calls:
            for key in PATH_KEYS:
                value = call.input.get(key)
                if isinstance(value, str) and value:
                    roots.update(_root_of(value))
    return roots.most_common(1)[0][0] if roots else ""


def _root_of(raw: str) -> list[str]:
    if len(raw) > 2 and raw[1] == ":":  # a Windows drive
        parts = PureWindowsPath(raw).parts
        depth = 4 if len(parts) > 2 and parts[1].lower() == "users" else 3
        return ["/".join(p.rstrip("\\") for p in parts[:depth])] if len(parts) > depth else []
    if not raw.startswith("/"):
        return []
    parts = raw.split("/")
    depth = 4 if len(parts) > 2 and parts[1] in ("Users", "home") else 3
    return ["/".join(parts[:depth])] if len(parts) > depth else []
