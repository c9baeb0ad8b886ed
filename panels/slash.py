"""The slash-command grammar both faces share: the lines typed after `/` in the REPL
(panels/repl) and in a dashboard pane (panels/ui/slash.py).

`parse` reads a line into a `Command`; `verb_for` turns a command into a verb of the catalogue
(panels/hostdb/verbs.py), which a face gives to the host like any other operator's, or None
for the commands that are views or a face's own; `HELP` (the REPL's list, which the dashboard
amends) and `MODELS` are the words both show. What a face does with a view, and its own
commands, stay in the face. No session and no file is touched; the clock and the working
directory are read only for an export's default name and to make paths absolute.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from panels.hostdb import VerbError, parse_verb, verbs
from runtime.instance.home import InstancePaths

HELP: tuple[tuple[str, str], ...] = (
    ("/role [PATH]", "show the role doc path, or switch to PATH (saved to config)"),
    ("/role_doc", "print the role doc's path, lane and text (edit the file: next turn reads it)"),
    ("/show [N]", "print the rolling window (last N rows)"),
    ("/context", "where the input tokens go, and every row with its id and tokens"),
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


EVICT_USAGE = "usage: /evict [tools|thinking|writes|user|assistant|N|last N]"
REWIND_USAGE = "usage: /rewind [N] (N: a checkpoint's number, from /rewind list)"


def verb_for(command: Command, panel: str, paths: InstancePaths) -> verbs.Verb | None:
    """The verb a command gives, or None when the command is a view (or the face's own)."""
    try:
        found = _verb(command.name, command.args, paths)
    except VerbError as exc:
        raise SlashError(str(exc)) from None
    if found is None:
        return None
    name, fields = found
    try:
        return parse_verb(name, panel, fields)
    except VerbError as exc:
        raise SlashError(str(exc)) from None


Fields = dict[str, object]


def _verb(name: str, args: tuple[str, ...], paths: InstancePaths) -> tuple[str, Fields] | None:
    """(verb name, its fields) for a command; None for the commands that are not verbs."""
    if name in ("stop", "resume"):
        return name, {}
    if name == "halt":
        return "halt", {"reason": " ".join(args) or "halted by the operator"}
    if name == "inbox" and args:
        if args not in (("on",), ("off",)):
            raise SlashError("usage: /inbox [on|off]")
        return "inbox", {"on": args[0] == "on"}
    if name == "swap":
        if len(args) != 1:
            raise SlashError("usage: /swap MODEL|N")
        return "model", {"model": resolve_model(args[0]), "save": True}
    if name == "tokens" and args:
        return "tokens", {"max_window_tokens": parse_token_count(args[0]), "save": True}
    if name == "clear":
        return "clear", {"all": "--all" in args}
    if name == "note":
        if not args:
            raise SlashError("usage: /note TEXT")
        return "note", {"text": " ".join(args)}
    if name == "evict" and args:
        return "evict", _evict(args)
    if name == "compress":
        if args and args[0] == "reads":
            return "compress", {"reads": True}
        return "compress", {"target_tokens": parse_token_count(args[0]) if args else None}
    if name in ("pin", "unpin"):
        if len(args) != 1 or not args[0].isdigit():
            raise SlashError(f"usage: /{name} ROW_ID")
        return name, {"row_id": int(args[0])}
    if name == "slot":
        if not args:
            raise SlashError("usage: /slot LABEL [TEXT]  (no text removes the slot)")
        return "slot", {"label": args[0], "content": " ".join(args[1:]) or None}
    if name == "rewind" and args != ("list",):
        if len(args) > 1 or (args and not args[0].isdigit()):
            raise SlashError(REWIND_USAGE)
        return "rewind", {"turn": int(args[0]) if args else None}
    if name == "role" and args:
        return "role", {"path": str(Path(args[0]).expanduser().resolve()), "save": True}
    if name == "export":
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        target = Path(args[0]).expanduser() if args else paths.root / f"export-{stamp}.jsonl"
        return "export", {"path": str(target.resolve())}
    if name == "import":
        files = [a for a in args if a != "--replace"]
        if len(files) != 1:
            raise SlashError("usage: /import PATH [--replace]")
        path = str(Path(files[0]).expanduser().resolve())
        return "import", {"path": path, "replace": "--replace" in args}
    return None


def _evict(args: tuple[str, ...]) -> Fields:
    what = args[0].lower()
    if what in ("tools", "thinking", "writes", "user", "assistant") and len(args) == 1:
        return {"what": what}
    if what == "last" and len(args) == 2 and args[1].isdigit():
        return {"what": "newest", "count": int(args[1])}
    if what.isdigit() and len(args) == 1:
        return {"what": "oldest", "count": int(what)}
    raise SlashError(EVICT_USAGE)
