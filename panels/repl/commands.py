"""The REPL's read-only slash commands: what `view` shows for them.

Commands that change something are verbs (`verb_for`, panels/slash.py), which the face gives
to the host's dispatcher like any other operator's; a view never touches the live session.
The views (`/show`, `/evict` alone, `/role` alone, `/tokens` alone, `/skeleton`,
`/rewind list`) only read: the store through a connection of their own, the config, the
checkpoint records and files from disk.
"""

from __future__ import annotations

import anyio
import anyio.to_thread

from panels.slash import Command, SlashError
from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.window.inspect import describe_window


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
    from runtime.window.skeleton import skeleton_of

    if len(args) != 1:
        raise SlashError("usage: /skeleton PATH")
    path = anyio.Path(args[0])
    try:
        source = await (await path.expanduser()).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SlashError(f"cannot read {args[0]}: {exc.strerror}") from None
    return skeleton_of(source, args[0])
