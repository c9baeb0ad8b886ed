"""The REPL's read-only slash commands: what `view` shows for them.

Commands that change something are verbs (`verb_for`, panels/slash.py), which the face gives
to the host's dispatcher like any other operator's; a view never touches the live session.
The views (`/show`, `/context`, `/role_doc`, `/evict` alone, `/role` alone, `/tokens` alone,
`/skeleton`, `/rewind list`) only read: the store through a connection of their own, the
config, the role doc, the checkpoint records and files from disk. `/context` shows the parts
of the next request's input as the dashboard's context viewer does (runtime/window/budget.py).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import anyio.to_thread

from panels.repl.terminal import safe
from panels.slash import Command, SlashError
from runtime.errors import LaneError, RoleDocError
from runtime.instance.config import load_config
from runtime.instance.home import InstancePaths
from runtime.instance.lane import split_front_matter
from runtime.instance.roledoc import read_role_doc
from runtime.store import TurnStore
from runtime.window.budget import budget_lines, input_budget
from runtime.window.inspect import describe_row, describe_window
from runtime.window.rows import estimate_tokens

# A line REPL edits no file itself: its terminal is the reader's and the turn's output's,
# and the panel reads the role doc again at the start of every turn, so an edit saved in an
# editor elsewhere is taken by the next turn (as the dashboard's Ctrl+S is).
ROLE_EDIT = ("; edit the file in your editor, and the panel reads it again at the start of "
             "its next turn; /role PATH switches to another file")  # fmt: skip


async def view(command: Command, paths: InstancePaths) -> str | None:
    """The text of a read-only command, or None when it is not one."""
    name, args = command.name, command.args
    if name in ("context", "role_doc"):
        if args:
            hint = ROLE_EDIT if name == "role_doc" else "; /show N prints the last N rows"
            raise SlashError(f"/{name} takes no arguments{hint}")
        read = _context_text if name == "context" else _role_doc_text
        return await anyio.to_thread.run_sync(read, paths)
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


def _context_text(paths: InstancePaths) -> str:
    """`/context`: where the next request's input tokens go (as the dashboard's context viewer
    shows it), then every row with its id and tokens, and the slots."""
    config = load_config(paths.config)
    with TurnStore.open(paths.turns) as store:
        window = describe_window(store, config)
    role = _role_text(config.role_doc_path)
    parts = input_budget(window.rows, window.slots, window.summary, role)
    lines = ["where the next request's input tokens go:"]
    lines += [f"  {line}" for line in budget_lines(parts, config.max_window_tokens,
                                                   len(window.rows))]  # fmt: skip
    lines += ["rows (id, role, tokens; /pin, /unpin and /evict take these ids):"]
    lines += [f"  {safe(describe_row(row))}" for row in window.rows] or ["  (the window is empty)"]
    for slot in window.slots:
        lines.append(f"  slot {safe(slot.label)}: ~{estimate_tokens(slot.content)} tokens")
    return "\n".join(lines)


def _role_text(path: str) -> str | None:
    """The role doc's text; "" for none set, None when it cannot be read."""
    if not path:
        return ""
    try:
        return read_role_doc(Path(path))
    except RoleDocError:
        return None


def _role_doc_text(paths: InstancePaths) -> str:
    """`/role_doc`: the role doc's path, the lane its front matter declares, and its text."""
    path = load_config(paths.config).role_doc_path
    if not path:
        return f"no role doc is set; /role PATH sets one (saved to config){ROLE_EDIT}"
    text = read_role_doc(Path(path))  # RoleDocError says what is wrong: the REPL shows it
    try:
        lane, _ = split_front_matter(text, path)
        said = ["lane: none (no front matter: the policy alone decides)"] if lane is None else [
            f"lane: {line}" for line in lane.describe()]  # fmt: skip
    except LaneError as exc:
        said = [f"lane: cannot be read: {exc}"]
    rule = "-" * 40
    body = [safe(line) for line in text.splitlines()]
    return "\n".join([f"role doc: {safe(path)}", *said, rule, *body, rule, ROLE_EDIT.lstrip("; ")])


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
