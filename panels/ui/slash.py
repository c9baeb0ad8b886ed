"""The original's slash commands, typed in a pane's input: what each one does in the dashboard.

A line that starts with `/` is a command, not a message for the panel. The grammar is the
REPL's too (panels/slash.py): most commands are its verbs (`verb_for` builds the same typed
verb, so the host applies them in one place). The rest open a screen (`/role_doc`,
`/context`, `/show`, `/evict` alone), answer in the notice line (`/models`, `/tokens` alone,
`/role` alone), or are the viewer's own (`/help`, `/quit`, `/inbox` alone toggles). Nothing
here writes a file: a viewer only reads, and its changes go through the verbs. `Shown` text
is trusted (ours) or cleaned where it quotes a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from panels.hostdb import verbs
from panels.slash import HELP as REPL_HELP
from panels.slash import MODELS, Command, SlashError, parse, verb_for
from runtime.instance.home import InstancePaths

Screen = Literal["context", "role_doc", "help", "skeleton", "model", "tokens"]

# The dashboard's own commands, or its own meaning of a REPL command; the REPL's other lines
# (panels/slash.py HELP) hold here as written.
_OWN: tuple[tuple[str, str], ...] = (
    ("/role_doc", "edit the role doc; the panel reads it again on its next turn"),
    ("/context, /show", "where the input tokens go; browse, pin, unpin, evict, edit slots"),
    ("/role [PATH]", "open the role doc, or switch the panel to the role doc at PATH"),
    ("/evict", "eviction figures (opens the context viewer)"),
    ("/swap [MODEL|N]", "switch model from the next turn (saved); alone: choose one"),
    ("/tokens [N]", "set the window's token cap (500k, 1m, 200000); alone: ask"),
    ("/inbox [on|off]", "peer-message delivery: toggle, or switch on or off"),
    ("/name [LABEL]", "a label shown for the panel's replies; no label clears it"),
    ("/rewind list", "where to list the checkpoints (`mnemara rewind --list`, `mnemara logs`)"),
    ("/help", "this list, and the keys"),
    ("/quit, /exit", "close this viewer (the team goes on)"),
)
# Where the host runs in the dashboard's own process (`mnemara run`, `demo`), quitting stops it.
QUIT_STOPS = ("/quit, /exit", "close the dashboard and stop the team (its host runs here)")
_REPLACED = {"/role [PATH]", "/show [N]", "/evict", "/swap MODEL|N", "/tokens N", "/inbox [on|off]",
             "/stop", "/help", "/quit, /exit", "/rewind list", "/role_doc", "/context"}  # fmt: skip
HELP = (
    _OWN
    + tuple(line for line in REPL_HELP if line[0] not in _REPLACED)
    + (("/stop", "stop the turn in flight"),)
)


@dataclass(frozen=True)
class Send:
    verb: verbs.Verb


@dataclass(frozen=True)
class Open:
    screen: Screen
    arg: str = ""


@dataclass(frozen=True)
class Shown:
    text: str


@dataclass(frozen=True)
class ToggleInbox:
    pass


@dataclass(frozen=True)
class Quit:
    pass


Action = Send | Open | Shown | ToggleInbox | Quit


def is_command(text: str) -> bool:
    return text.lstrip().startswith("/")


def action_for(line: str, panel: str, paths: InstancePaths | None, team: str = "") -> Action:
    """What `line` does for `panel` of `team`; `SlashError` (its message says the right form)
    when it is not a command the dashboard knows. `paths` may be None when the host did not
    record where the panel's files are: then only the commands that need no file work."""
    command = parse(line)
    name, args = command.name, command.args
    simple = _simple(command, panel, team)
    if simple is not None:
        return simple
    if name == "name":
        return Send(verbs.SetName(panel=panel, label=" ".join(args)))
    if paths is None:
        raise SlashError(f"/{name} needs the panel's files, which the host did not record; "
                         "restart the team's host with this version of mnemara")  # fmt: skip
    verb = verb_for(command, panel, paths)
    if verb is None:
        raise SlashError(f"unknown command /{name}; /help lists them")
    return Send(verb)


def _simple(command: Command, panel: str, team: str) -> Action | None:
    """The commands that need no verb: screens, answers, the viewer's own."""
    name, args = command.name, command.args
    if name in ("role_doc", "context", "show") or (name in ("evict", "role") and not args):
        return Open("context" if name in ("context", "show", "evict") else "role_doc")
    if name == "help":
        return Open("help")
    if name == "skeleton":
        if len(args) != 1:
            raise SlashError("usage: /skeleton PATH")
        return Open("skeleton", args[0])
    if name == "quit":
        return Quit()
    if name == "models":
        return Shown("models: " + ", ".join(f"{i} {s} ({f})" for i, (s, f) in
                                            enumerate(MODELS, 1)))  # fmt: skip
    if name == "inbox" and not args:
        return ToggleInbox()
    if name == "tokens" and not args:
        return Open("tokens")
    if name == "rewind" and args == ("list",):
        return Shown(f"checkpoints: `mnemara rewind -t {team or 'TEAM'} -p {panel} --list` lists "
                     "them, and `mnemara logs` names the one taken before each turn; /rewind N "
                     "goes back to one")  # fmt: skip
    if name == "swap" and not args:
        return Open("model")
    return None


def help_text(stops_team: bool = False) -> str:
    """The commands, as the help screen lists them; `stops_team`: quitting this dashboard
    stops the team's host (it runs in the dashboard's process), and the list says so."""
    lines = [QUIT_STOPS if stops_team and usage == QUIT_STOPS[0] else (usage, what)
             for usage, what in HELP]  # fmt: skip
    width = max(len(usage) for usage, _ in lines)
    return "\n".join(f"{usage.ljust(width)}  {what}" for usage, what in lines)


def skeleton_page(path: str) -> str:
    """A Python file's signatures and docstrings (blocking: run it in a thread)."""
    from runtime.window.skeleton import skeleton_of

    try:
        source = Path(path).expanduser().read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise SlashError(f"cannot read {path}: {exc.strerror or exc}") from None
    return skeleton_of(source, path)
