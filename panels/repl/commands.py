"""What each slash command is: a verb for the host to apply, or a read-only view.

`verb_for` turns a command into a verb of the catalogue (panels/hostdb/verbs.py), which the
face gives to the host's dispatcher like any other operator's; it never touches the live
session. The views (`/show`, `/evict` alone, `/role` alone, `/tokens` alone, `/skeleton`,
`/rewind list`) only read: the store through a connection of their own, the config, the
checkpoint records and files from disk.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import anyio
import anyio.to_thread

from panels.hostdb import VerbError, parse_verb, verbs
from panels.repl.slash import Command, SlashError, parse_token_count, resolve_model
from runtime.config import load_config
from runtime.home import InstancePaths
from runtime.inspect import describe_window
from runtime.store import TurnStore

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


async def view(command: Command, paths: InstancePaths) -> str | None:
    """The text of a read-only command, or None when it is not one."""
    name, args = command.name, command.args
    if name == "show":
        last = int(args[0]) if args and args[0].isdigit() else 0
        return await anyio.to_thread.run_sync(_window_text, paths, last, False)
    if name == "rewind" and args == ("list",):
        return await anyio.to_thread.run_sync(_checkpoints_text, paths)
    if args:
        return await _skeleton(args) if name == "skeleton" else None
    if name == "evict":
        return await anyio.to_thread.run_sync(_window_text, paths, 0, True)
    if name == "role":
        config = await anyio.to_thread.run_sync(load_config, paths.config)
        return config.role_doc_path or "(no role doc set)"
    if name == "tokens":
        config = await anyio.to_thread.run_sync(load_config, paths.config)
        return f"max_window_tokens = {config.max_window_tokens}"
    if name == "skeleton":
        return await _skeleton(args)
    return None


def _window_text(paths: InstancePaths, last: int, summary_only: bool) -> str:
    config = load_config(paths.config)
    with TurnStore.open(paths.turns) as store:
        window = describe_window(store, config, last=last)
    return window.summary_text() if summary_only else window.as_text()


def _checkpoints_text(paths: InstancePaths) -> str:
    from runtime.checkpoint import open_store
    from runtime.checkpoint.listing import list_lines

    return "\n".join(list_lines(open_store(paths.root).checkpoints()))


async def _skeleton(args: tuple[str, ...]) -> str:
    from runtime.tools.skeleton import skeleton_of

    if len(args) != 1:
        raise SlashError("usage: /skeleton PATH")
    path = anyio.Path(args[0])
    try:
        source = await (await path.expanduser()).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SlashError(f"cannot read {args[0]}: {exc.strerror}") from None
    return skeleton_of(source, args[0])
