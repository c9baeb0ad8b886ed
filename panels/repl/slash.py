"""Slash commands of the line REPL: parsing and help, pure (no session, no I/O).

What each command does is in commands.py: a verb for the host, or a read-only view.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

HELP: tuple[tuple[str, str], ...] = (
    ("/role [PATH]", "show the role doc path, or switch to PATH (saved to config)"),
    ("/show [N]", "print the rolling window (last N rows)"),
    ("/clear [--all]", "wipe the window; pinned rows and slots stay unless --all"),
    ("/models", "list model shortcuts"),
    ("/swap MODEL|N", "switch model from the next turn (saved to config)"),
    ("/tokens N", "set max_window_tokens (accepts 500k, 1m, 200000)"),
    ("/note TEXT", "append to today's memory file"),
    ("/evict", "show eviction stats"),
    ("/evict tools|thinking|writes", "strip tool bodies / thinking / write pairs from rows"),
    ("/evict user|assistant", "drop every user (or assistant) row"),
    ("/evict N | /evict last N", "drop the N oldest / N newest rows"),
    ("/pin ROW_ID | /unpin ROW_ID", "protect a row from trimming, or no longer"),
    ("/slot LABEL [TEXT]", "set a slot (a value kept after the transcript); no text removes it"),
    ("/compress [N]", "shrink the window to N tokens (default: 25% of now)"),
    ("/compress reads", "stub older reads of a file as a diff or 'unchanged'"),
    ("/skeleton PATH", "print a Python file's signatures and docstrings"),
    ("/halt [REASON]", "halt the panel (the turn in flight stops; its inbox is kept)"),
    ("/resume", "let a halted panel (operator, sentinel or budget) go on"),
    ("/inbox [on|off]", "list what waits for the panel; on/off: deliver peers' messages or not"),
    ("/export [PATH]", "write the window as JSONL (default: <instance>/export-<time>.jsonl)"),
    ("/import PATH [--replace]", "load a JSONL export (--replace for a non-empty window)"),
    ("/rewind [N]", "put the files back as at checkpoint N (default: undo the last turn)"),
    ("/rewind list", "the checkpoints, one taken before each turn that may write"),
    ("/stop", "stop the turn in flight (Ctrl-C does the same)"),
    ("/help", "this list"),
    ("/quit, /exit", "stop the panel and leave (state is already saved)"),
)

MODELS: tuple[tuple[str, str], ...] = (
    ("opus", "claude-opus-4-7"),
    ("sonnet", "claude-sonnet-4-6"),
    ("haiku", "claude-haiku-4-5"),
)


class SlashError(ValueError):
    """A slash command that cannot be parsed; the message says the right form."""


@dataclass(frozen=True)
class Command:
    name: str
    args: tuple[str, ...]


def parse(line: str) -> Command:
    try:
        words = shlex.split(line.strip())
    except ValueError as exc:
        raise SlashError(f"cannot parse {line!r}: {exc}") from None
    if not words or not words[0].startswith("/"):
        raise SlashError("slash commands start with '/'; /help lists them")
    name = words[0][1:].lower()
    if name == "exit":
        name = "quit"
    return Command(name, tuple(words[1:]))


def parse_token_count(text: str) -> int:
    """'500k' -> 500000, '1m' -> 1000000, '200000' -> 200000."""
    raw = text.strip().lower().replace("_", "").replace(",", "")
    scale = 1
    if raw.endswith("k"):
        scale, raw = 1_000, raw[:-1]
    elif raw.endswith("m"):
        scale, raw = 1_000_000, raw[:-1]
    try:
        value = float(raw) * scale
    except ValueError:
        raise SlashError(f"not a token count: {text!r} (try 500k, 1m or 200000)") from None
    if value < 1_000:
        raise SlashError("a window needs at least 1000 tokens")
    return int(value)


def resolve_model(choice: str) -> str:
    """A shortcut name, a 1-based number from /models, or a full model id."""
    if choice.isdigit():
        index = int(choice) - 1
        if not 0 <= index < len(MODELS):
            raise SlashError(f"no model number {choice}; /models lists 1-{len(MODELS)}")
        return MODELS[index][1]
    for short, full in MODELS:
        if choice == short:
            return full
    return choice


def help_text() -> str:
    width = max(len(usage) for usage, _ in HELP)
    return "\n".join(f"  {usage.ljust(width)}  {what}" for usage, what in HELP)
