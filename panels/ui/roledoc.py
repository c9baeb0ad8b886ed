"""`RoleDocScreen`: edit a panel's role doc; the next turn reads the saved text.

The text is read from the file the panel uses (panelfiles.py finds it). Saving does not
write the file here: it sends `SetRole(text=...)`, and the host rewrites the panel's role doc
file atomically between turns (panels/host/turns/window.py), so an edit never lands in the middle
of a turn; the host reads the role doc again at the start of every turn. After a save the
screen shows the unified diff between the text as it was opened (or last saved) and the text
saved. Esc with unsaved edits asks for a second Esc. A read-only viewer (`send` None) may
read the doc and change nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import ClassVar

import anyio.to_thread
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, TextArea

from panels.hostdb.verbs import SetRole, Verb
from panels.text import clean
from panels.ui.panelfiles import find_panel_files
from runtime.errors import LaneError, MnemaraError
from runtime.instance.lane import split_front_matter
from runtime.instance.roledoc import read_role_doc

Send = Callable[[Verb], Awaitable[None]]


def role_diff(before: str, after: str, *, name: str) -> str:
    """The unified diff of one change of a role doc ('' when nothing changed)."""
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True),
        fromfile=f"{name} (before)", tofile=f"{name} (saved)",
    )  # fmt: skip
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


class RoleDocScreen(ModalScreen[None]):
    """One panel's role doc in a text area. Ctrl+S saves (through the host), Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save"),
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),  # typed text when editing; else not quit
    ]

    def __init__(
        self, panel: str, *, meta: dict[str, str], hostdb: Path, send: Send | None
    ) -> None:
        super().__init__(classes="roledoc")
        self.panel = panel
        self.meta = dict(meta)
        self.hostdb = hostdb
        self.send = send
        self.path: Path | None = None
        self.saved: str | None = None  # the text as opened, then as last saved; None: not loaded
        self.diff = ""
        self._discarding = False  # Esc was pressed once with unsaved edits
        self.loaded = False  # the doc was read, or why it cannot be is shown

    def compose(self) -> ComposeResult:
        with Vertical(id="roledoc-box"):
            yield Static(Text(f"role doc of {clean(self.panel, 40)}"), id="roledoc-title")
            yield Static(Text(""), id="roledoc-lane")
            yield TextArea("", id="roledoc-text", read_only=True, soft_wrap=True,
                           tab_behavior="focus", show_line_numbers=True)  # fmt: skip
            yield Static(Text("reading the role doc…"), id="roledoc-message")
            yield Static(Text(""), id="roledoc-diff")
        yield Footer()

    async def on_mount(self) -> None:
        self.run_worker(self._load(), name="roledoc", exclusive=True, exit_on_error=False)

    async def _load(self) -> None:
        try:
            await self._open()
        finally:
            self.loaded = True

    async def _open(self) -> None:
        try:
            path, text = await anyio.to_thread.run_sync(self._read)
        except (MnemaraError, OSError) as exc:
            self._say(f"cannot open the role doc: {clean(exc, 400)}")
            return
        if path is None:
            self._say(text)
            return
        self.path, self.saved = path, text
        self._show_lane(text)
        area = self.query_one("#roledoc-text", TextArea)
        area.load_text(text)
        area.read_only = self.send is None
        area.focus()
        where = clean(path, 200)
        self._say(f"{where}: read-only viewer, nothing can be saved" if self.send is None else
                  f"{where}: Ctrl+S saves (read on the panel's next turn), Esc closes")  # fmt: skip

    def _read(self) -> tuple[Path | None, str]:
        """(path, text) of the panel's role doc; (None, why) when it has none. Blocking."""
        files = find_panel_files(self.meta, self.panel, hostdb=self.hostdb)
        if files.role is None:
            return None, (f"panel {clean(self.panel, 40)} has no role doc file; set one first "
                          f"(`mnemara role --instance {files.paths.name} --set PATH`)")  # fmt: skip
        return files.role, read_role_doc(files.role)

    def _show_lane(self, text: str) -> LaneError | None:
        """Show the lane `text` declares (its front matter); the error when it has none that
        can be read."""
        shown = self.query_one("#roledoc-lane", Static)
        try:
            lane, _ = split_front_matter(text, str(self.path))
        except LaneError as exc:
            shown.update(Text(f"lane: cannot be read: {clean(exc, 400)}", style="bold red"))
            return exc
        if lane is None:
            shown.update(Text("lane: none (no front matter: the policy alone decides)"))
        else:
            shown.update(Text("lane: " + " · ".join(clean(line, 200) for line in lane.describe())))
        return None

    def _say(self, text: str) -> None:
        self.query_one("#roledoc-message", Static).update(Text(text))

    @property
    def edited(self) -> bool:
        return (
            self.saved is not None and self.query_one("#roledoc-text", TextArea).text != self.saved
        )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "save":
            return self.send is not None  # hidden from the footer, and never run
        return True

    async def action_save(self) -> None:
        if self.send is None or self.saved is None or self.path is None:
            return
        text = self.query_one("#roledoc-text", TextArea).text
        if text == self.saved:
            self._say("nothing changed since the last save")
            return
        if self._show_lane(text) is not None:
            self._say("not saved: the lane above cannot be read; the panel would halt on it")
            return
        # `text` rewrites the file the panel reads; `save` (config.json) is for a new path.
        await self.send(SetRole(panel=self.panel, text=text))
        self.diff = role_diff(self.saved, text, name=self.path.name)
        self.saved = text
        self._discarding = False
        self.query_one("#roledoc-diff", Static).update(Text(self.diff))
        self._say(f"saved: the host rewrites {clean(self.path, 200)} between turns; "
                  "the next turn reads it")  # fmt: skip

    def action_close(self) -> None:
        if self.edited and not self._discarding:
            self._discarding = True
            self._say("unsaved edits: Esc again throws them away, Ctrl+S saves")
            return
        self.dismiss(None)
