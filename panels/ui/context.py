"""`ContextScreen`: where one panel's input tokens go, its rows and slots, and window verbs.

The screen reads the panel's turn store read-only (storeview.py) and never writes it: pin,
unpin, evict and set-slot are verbs handed to the app's `send`, which queues them in
host.sqlite for the host to apply between turns. The store is polled with `PRAGMA
data_version`, so the change shows as soon as the host commits it. A read-only viewer
(`send` None) browses and changes nothing. Row and slot text is untrusted: cleaned, and shown
as `Text`, never markup.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, suppress
from pathlib import Path
from typing import ClassVar

import anyio
import anyio.to_thread
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Input, Static, TextArea
from textual.worker import Worker, WorkerError

from panels.hostdb.verbs import Evict, Pin, SetSlot, Unpin, Verb
from panels.text import clean
from panels.ui.panelfiles import PanelFiles, find_panel_files
from panels.ui.storeview import StoreView, WindowState, budget, open_store_view
from runtime.errors import MnemaraError
from runtime.instance.roledoc import read_role_doc
from runtime.window.budget import budget_lines
from runtime.window.rows import Row, estimate_tokens, text_of

Send = Callable[[Verb], Awaitable[None]]
POLL = 0.1  # seconds between looks at the store's data_version


def first_line(row: Row, limit: int = 80) -> str:
    """A row's first line of text (or its block kinds), cleaned for display."""
    text = text_of(row.blocks).strip()
    if text:
        return clean(text.splitlines()[0], limit)
    kinds = sorted({str(b.get("type", "?")) for b in row.blocks})
    return clean(f"({', '.join(kinds) or 'empty'})", limit)


def budget_text(state: WindowState, role_text: str | None, files: PanelFiles) -> Text:
    """The budget as lines: part, tokens, how the count is known."""
    parts = budget(state, role_text, files.config)
    cap = files.config.max_window_tokens
    return Text("\n".join(budget_lines(parts, cap, len(state.rows))))


class SlotForm(ModalScreen[tuple[str, str | None] | None]):
    """A slot's name and text. Ctrl+S saves (empty text removes the slot), Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save"),
        Binding("escape", "cancel", "Cancel"),
    ]

    def __init__(self, label: str = "", content: str = "") -> None:
        super().__init__(classes="slot-form")
        self.label = label
        self.content = content

    def compose(self) -> ComposeResult:
        with Vertical(id="slot-box"):
            yield Static(Text("slot (Ctrl+S saves, empty text removes it, Esc cancels)"))
            yield Input(self.label, placeholder="slot name", max_length=200, id="slot-label")
            yield TextArea(self.content, id="slot-content", soft_wrap=True, tab_behavior="focus")
            yield Static(Text(""), id="slot-problem")

    def on_mount(self) -> None:
        target = "#slot-content" if self.label else "#slot-label"
        self.query_one(target).focus()

    def action_save(self) -> None:
        label = self.query_one("#slot-label", Input).value.strip()
        if not label:
            self.query_one("#slot-problem", Static).update(Text("name the slot first"))
            return
        content = self.query_one("#slot-content", TextArea).text
        self.dismiss((label, content if content.strip() else None))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ContextScreen(ModalScreen[None]):
    """One panel's context. Space marks rows; p pins or unpins the row under the cursor; e
    evicts the marked rows (or the one under the cursor); s edits the slot under the cursor,
    a adds a slot. With `send` None (a read-only viewer) only browsing is offered."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),  # not the app's quit: this screen only
        Binding("space", "mark", "Mark row"),
        Binding("p", "pin", "Pin/unpin"),
        Binding("e", "evict", "Evict"),
        Binding("s", "edit_slot", "Edit slot"),
        Binding("a", "add_slot", "Add slot"),
    ]

    def __init__(
        self, panel: str, *, meta: dict[str, str], hostdb: Path, send: Send | None
    ) -> None:
        super().__init__(classes="context")
        self.panel = panel
        self.meta = dict(meta)
        self.hostdb = hostdb
        self.send = send
        self.files: PanelFiles | None = None
        self.state: WindowState | None = None
        self.marked: set[int] = set()
        self.problem: str | None = None  # why the store cannot be shown, when it cannot
        self._resources = AsyncExitStack()
        self._worker: Worker[None] | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="context-box"):
            yield Static(Text(f"context of {clean(self.panel, 40)}"), id="context-title")
            yield Static(Text("reading the store…"), id="context-budget")
            yield DataTable(id="context-rows", cursor_type="row", zebra_stripes=True)
            yield DataTable(id="context-slots", cursor_type="row")
            yield Static(Text(""), id="context-message")
        yield Footer()

    def on_mount(self) -> None:
        rows = self.query_one("#context-rows", DataTable)
        rows.add_columns("", "id", "role", "pinned", "tokens", "first line")
        slots = self.query_one("#context-slots", DataTable)
        slots.add_columns("slot", "tokens", "first line")
        rows.focus()
        self._worker = self.run_worker(self._watch(), name="context", exclusive=True)

    async def on_unmount(self) -> None:
        # As the app does with its tail: the worker goes first, then the connection it used.
        if self._worker is not None:
            self._worker.cancel()
            with suppress(WorkerError):
                await self._worker.wait()
        await self._resources.aclose()

    async def _watch(self) -> None:
        try:
            files = await anyio.to_thread.run_sync(
                lambda: find_panel_files(self.meta, self.panel, hostdb=self.hostdb)
            )
            self.files = files
            self.query_one("#context-title", Static).update(
                Text(f"context of {clean(self.panel, 40)}: {clean(files.store, 200)}")
            )
            view = await self._resources.enter_async_context(open_store_view(files.store))
            while True:
                await self._refresh(view, files)
                await anyio.sleep(POLL)
        except (MnemaraError, OSError) as exc:
            self._fail(str(exc))

    async def _refresh(self, view: StoreView, files: PanelFiles) -> None:
        state = await view.poll()
        if state is None:
            return
        role_text = await anyio.to_thread.run_sync(_role_text, files.role)
        self.state = state
        self.marked &= {r.id for r in state.rows}
        self.query_one("#context-budget", Static).update(budget_text(state, role_text, files))
        self._show_rows(state)
        self._show_slots(state)

    def _fail(self, why: str) -> None:
        self.problem = clean(why, 400)
        self.query_one("#context-budget", Static).update(
            Text(f"cannot show this panel's context: {self.problem}")
        )

    def _show_rows(self, state: WindowState) -> None:
        table = self.query_one("#context-rows", DataTable)
        cursor = table.cursor_row
        table.clear()
        for row in state.rows:
            tokens = f"{row.tokens}" if row.tokens_exact else f"~{row.tokens}"
            table.add_row(Text("*" if row.id in self.marked else ""), Text(str(row.id)),
                          Text(row.role), Text("yes" if row.pinned else ""), Text(tokens),
                          Text(first_line(row)), key=str(row.id))  # fmt: skip
        if state.rows:
            table.move_cursor(row=min(cursor, len(state.rows) - 1))

    def _show_slots(self, state: WindowState) -> None:
        table = self.query_one("#context-slots", DataTable)
        table.clear()
        for slot in state.slots:
            preview = clean(slot.content.strip().splitlines()[0] if slot.content.strip() else "")
            table.add_row(Text(clean(slot.label, 60)), Text(f"~{estimate_tokens(slot.content)}"),
                          Text(preview), key=slot.label)  # fmt: skip

    def _say(self, text: str) -> None:
        self.query_one("#context-message", Static).update(Text(text))

    def _cursor_row(self) -> Row | None:
        table = self.query_one("#context-rows", DataTable)
        if self.state is None or not self.state.rows or table.row_count == 0:
            return None
        return self.state.rows[min(table.cursor_row, len(self.state.rows) - 1)]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in {"pin", "evict", "edit_slot", "add_slot"}:
            return self.send is not None  # hidden from the footer, and never run
        return True

    async def _give(self, verb: Verb, done: str) -> None:
        if self.send is None:
            return
        await self.send(verb)
        self._say(f"{done}: queued; the host applies it between turns")

    def action_close(self) -> None:
        self.dismiss(None)

    def action_mark(self) -> None:
        row = self._cursor_row()
        if row is None:
            return
        self.marked ^= {row.id}
        table = self.query_one("#context-rows", DataTable)
        table.update_cell(str(row.id), table.ordered_columns[0].key,
                          Text("*" if row.id in self.marked else ""))  # fmt: skip

    async def action_pin(self) -> None:
        row = self._cursor_row()
        if row is not None:
            verb: Verb = (Unpin if row.pinned else Pin)(panel=self.panel, row_id=row.id)
            await self._give(verb, f"{'unpin' if row.pinned else 'pin'} row {row.id}")

    async def action_evict(self) -> None:
        row = self._cursor_row()
        ids = sorted(self.marked) or ([row.id] if row is not None else [])
        if not ids:
            return
        self.marked.clear()
        shown = ", ".join(str(i) for i in ids[:10]) + (" …" if len(ids) > 10 else "")
        await self._give(Evict(panel=self.panel, what="rows", row_ids=ids),
                         f"evict rows {shown} (pinned rows are kept)")  # fmt: skip

    def action_edit_slot(self) -> None:
        table = self.query_one("#context-slots", DataTable)
        if self.state is None or not self.state.slots:
            self.action_add_slot()
            return
        slot = self.state.slots[min(table.cursor_row, len(self.state.slots) - 1)]
        self.app.push_screen(SlotForm(slot.label, slot.content), self._slot_given)

    def action_add_slot(self) -> None:
        self.app.push_screen(SlotForm(), self._slot_given)

    async def _slot_given(self, result: tuple[str, str | None] | None) -> None:
        if result is None:
            return
        label, content = result
        try:
            verb = SetSlot(panel=self.panel, label=label, content=content)
        except ValueError as exc:  # a name or text out of range: say so, send nothing
            self._say(f"slot not set: {clean(exc, 200)}")
            return
        done = (
            f"remove slot {clean(label, 60)}" if content is None else f"set slot {clean(label, 60)}"
        )
        await self._give(verb, done)


def _role_text(path: Path | None) -> str | None:
    """The role doc's text for the budget; None when it cannot be read (the budget says so)."""
    if path is None:
        return ""
    try:
        return read_role_doc(path)
    except MnemaraError:
        return None
