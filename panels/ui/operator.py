"""`OperatorApp`: what the operator does beyond a key: the original's slash commands typed in a
pane, the command palette, the modals that ask a value (a model, a token cap), and the screens
that open over the panes (the context viewer, the role-doc editor, a halt's record, help).

Every change leaves as a typed verb through `_send` (the control table, panels/ui/commands.py);
a read-only viewer has no sender, so nothing leaves it. `DashboardApp` (app.py) builds on this
with the panes, the tail and the keys; this class holds the state both use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from pathlib import Path

import anyio.to_thread
from pydantic import ValidationError
from rich.text import Text
from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen
from textual.widgets import Static

from panels.hostdb.verbs import Input, Pause, Resume, SetInbox, SetModel, SetTokens, Stop, Verb
from panels.slash import MODELS, SlashError, parse_token_count, resolve_model
from panels.text import clean
from panels.ui.commands import Sender
from panels.ui.context import ContextScreen
from panels.ui.modals import AskScreen, HaltRecordScreen, TextScreen
from panels.ui.pane import PanelPane
from panels.ui.panelfiles import instance_paths
from panels.ui.roledoc import RoleDocScreen
from panels.ui.slash import (
    Open,
    Quit,
    Send,
    Shown,
    ToggleInbox,
    action_for,
    help_text,
    is_command,
    skeleton_page,
)


class OperatorApp(App[None]):
    """The operator's side of the dashboard (see the module doc); `DashboardApp` sets the
    attributes below."""

    hostdb_path: Path
    read_only: bool
    stops_team: bool  # quitting stops the host: it runs in this process (`run`, `demo`)
    panes: dict[str, PanelPane]
    meta: dict[str, str]
    sent: list[int]  # ids of the commands this viewer queued
    _sender: Sender | None

    @property
    def main(self) -> Screen[object]:
        """The screen of the panes, under any modal open: the tail updates it all the same."""
        return self.screen_stack[0]

    def _notice(self, text: str) -> None:
        line = self.main.query_one("#notice", Static)
        line.update(Text(text))
        line.set_class(bool(text), "shown")  # hidden while empty: the panes keep the row

    def open_context(self, panel: str) -> None:
        """The context viewer of `panel` (browse only, on a read-only viewer)."""
        send = None if self.read_only else self._send
        self.push_screen(ContextScreen(panel, meta=self.meta, hostdb=self.hostdb_path, send=send))

    def open_role_doc(self, panel: str) -> None:
        """The role-doc editor of `panel` (read only, on a read-only viewer)."""
        send = None if self.read_only else self._send
        self.push_screen(RoleDocScreen(panel, meta=self.meta, hostdb=self.hostdb_path, send=send))

    def focused_pane(self) -> PanelPane | None:
        return pane_of(self.focused)

    def action_halt_record(self) -> None:
        pane = self.focused_pane()
        if pane is not None:
            self.open_halt_record(pane.panel)

    def open_halt_record(self, panel: str) -> None:
        """The latest halt of `panel` (rule, evidence, what came before), with resume."""
        pane = self.panes.get(panel)
        if pane is None:
            return
        if pane.halt is None:
            state = pane.status.state if pane.status is not None else "unknown"
            self._notice(f"{panel} is {state}: no halt of it in this viewer's events"
                         if state != "halted" else f"{panel} is halted; its record is older "
                         "than this viewer's events: `mnemara show` has it")  # fmt: skip
            return

        async def closed(resume: bool | None) -> None:
            if resume:
                await self._send(Resume(panel=panel))

        self.push_screen(HaltRecordScreen(panel, pane.halt, pane.halt_before,
                                          read_only=self.read_only), closed)  # fmt: skip

    def ask_model(self, panel: str) -> None:
        """Ask for the model `panel` uses from its next turn (saved to its config)."""

        def check(text: str) -> str | None:
            return _problem(lambda: SetModel(panel=panel, model=resolve_model(text.strip())))

        async def given(text: str | None) -> None:
            if text is not None:
                await self._send(SetModel(panel=panel, model=resolve_model(text.strip()),
                                          save=True))  # fmt: skip

        status = self.panes[panel].status if panel in self.panes else None
        shortcuts = ", ".join(f"{i} {short}" for i, (short, _) in enumerate(MODELS, 1))
        title = f"model for {clean(panel, 40)} ({shortcuts}, or a model id)"
        current = status.model if status else ""
        self.push_screen(AskScreen(title, value=current, check=check), given)

    def ask_tokens(self, panel: str) -> None:
        """Ask for the token cap of `panel`'s window (saved to its config)."""

        def check(text: str) -> str | None:
            return _problem(lambda: parse_token_count(text))

        async def given(text: str | None) -> None:
            if text is not None:
                await self._send(SetTokens(panel=panel, max_window_tokens=parse_token_count(text),
                                           save=True))  # fmt: skip

        self.push_screen(AskScreen(f"window token cap for {clean(panel, 40)} (500k, 1m, 200000)",
                                   check=check), given)  # fmt: skip

    async def toggle_inbox(self, panel: str) -> None:
        status = self.panes[panel].status if panel in self.panes else None
        if status is None:
            self._notice(f"{panel} has no status yet; try /inbox on or /inbox off")
            return
        await self._send(SetInbox(panel=panel, on=not status.inbox))

    async def on_panel_pane_input_given(self, message: PanelPane.InputGiven) -> None:
        if is_command(message.text):
            await self.slash(message.panel, message.text)
        else:
            await self._send(Input(panel=message.panel, text=message.text))

    async def slash(self, panel: str, line: str) -> None:
        """Run a slash command typed in `panel`'s input (panels/ui/slash.py says what each does)."""
        try:
            paths = instance_paths(self.meta, panel)
            action = action_for(line, panel, paths, self.meta.get("team", ""))
        except SlashError as exc:
            self._notice(str(exc))
            return
        match action:
            case Send(verb=verb):
                await self._send(verb)
            case Shown(text=text):
                self._notice(text)
            case ToggleInbox():
                await self.toggle_inbox(panel)
            case Quit():
                self.exit()
            case Open(screen=screen, arg=arg):
                await self._open(screen, panel, arg)

    async def _open(self, screen: str, panel: str, arg: str) -> None:
        if screen == "context":
            self.open_context(panel)
        elif screen == "role_doc":
            self.open_role_doc(panel)
        elif screen == "model":
            self.ask_model(panel)
        elif screen == "tokens":
            self.ask_tokens(panel)
        elif screen == "help":
            self.push_screen(self.help_page())
        elif screen == "skeleton":
            try:
                text = await anyio.to_thread.run_sync(skeleton_page, arg)
            except SlashError as exc:
                self._notice(str(exc))
                return
            self.push_screen(TextScreen(f"skeleton of {clean(arg, 80)}", text))

    def help_page(self) -> TextScreen:
        """The slash commands (saying whether quitting stops the team) and the keys."""
        text = help_text(self.stops_team) + "\n\n" + keys_text(self.BINDINGS)
        return TextScreen("slash commands and keys", text)

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Bus", "Show or hide the bus pane and its dead letters",
                            partial(self.run_action, "bus"))  # fmt: skip
        yield SystemCommand("Help", "Slash commands and keys",
                            lambda: self.push_screen(self.help_page()))  # fmt: skip
        pane = pane_of(screen.focused)
        if pane is None:
            return
        name = clean(pane.panel, 40)
        yield SystemCommand(f"Zoom {name}", "Show this pane alone, or all again",
                            partial(self.run_action, "zoom"))  # fmt: skip
        yield SystemCommand(f"Context of {name}", "Where its input tokens go; pin, evict, slots",
                            lambda: self.open_context(pane.panel))  # fmt: skip
        yield SystemCommand(f"Role doc of {name}", "Edit its role doc (read on its next turn)",
                            lambda: self.open_role_doc(pane.panel))  # fmt: skip
        yield SystemCommand(f"Why {name} halted", "Its latest halt: rule, evidence, resume",
                            lambda: self.open_halt_record(pane.panel))  # fmt: skip
        if self.read_only:
            return
        verbs_now: list[tuple[str, str, Verb]] = [
            (f"Pause {name}", "No new turn starts until resumed", Pause(panel=pane.panel)),
            (f"Resume {name}", "Let it go on (after a pause or a halt)", Resume(panel=pane.panel)),
            (f"Stop {name}'s turn", "Stop the turn in flight", Stop(panel=pane.panel)),
        ]
        for title, what, verb in verbs_now:
            yield SystemCommand(title, what, partial(self._send_soon, verb))
        yield SystemCommand(f"Halt {name}", "Halt it, with a reason",
                            partial(self.run_action, "halt"))  # fmt: skip
        yield SystemCommand(f"Swap model of {name}", "From its next turn, saved",
                            lambda: self.ask_model(pane.panel))  # fmt: skip
        yield SystemCommand(f"Token cap of {name}", "Its window's token cap, saved",
                            lambda: self.ask_tokens(pane.panel))  # fmt: skip
        yield SystemCommand(f"Inbox on/off for {name}", "Deliver peers' messages or hold them",
                            partial(self._toggle_soon, pane.panel))  # fmt: skip

    def _send_soon(self, verb: Verb) -> None:
        self.run_worker(self._send(verb), group="verbs")

    def _toggle_soon(self, panel: str) -> None:
        self.run_worker(self.toggle_inbox(panel), group="verbs")

    async def _send(self, verb: Verb) -> None:
        if self._sender is None:  # read-only: nothing offers to send; refuse all the same
            return
        ident = await self._sender.send(verb)
        self.sent.append(ident)
        target = f" to {verb.panel}" if verb.panel else ""
        self._notice(f"{verb.name}{target} queued as command {ident}")


def pane_of(node: DOMNode | None) -> PanelPane | None:
    """The pane that holds `node`, if any."""
    while node is not None:
        if isinstance(node, PanelPane):
            return node
        node = node.parent
    return None


def _problem(build: Callable[[], object]) -> str | None:
    """None when `build` works; otherwise its error, in one line."""
    try:
        build()
    except SlashError as exc:
        return str(exc)
    except ValidationError as exc:
        return "; ".join(str(e["msg"]) for e in exc.errors())
    return None


def keys_text(bindings: Iterable[BindingType]) -> str:
    """The app's keys, one a line."""
    shown = [b for b in bindings if isinstance(b, Binding) and b.description]
    lines = [f"{b.key:<8}  {b.description}" for b in shown]
    lines += ["f1        the command palette",
              "ctrl+s    send the input (Enter is a new line; Esc clears it)"]  # fmt: skip
    return "keys:\n" + "\n".join(lines)
