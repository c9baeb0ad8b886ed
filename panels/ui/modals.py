"""The dashboard's modal screens: answering an approval, and giving a halt its reason.

Each modal returns its result through `dismiss` (attributes down, results up): the app sends
the verb. Untrusted text (the command a tool would run, the policy's reason) arrives cleaned
by approvals.py and is shown as plain `Text`, never markup.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from panels.host.account import clean
from panels.ui.approvals import Question


class ApprovalScreen(ModalScreen[str | None]):
    """One open question; y, n, s (and a, when offered) answer it. Dismissed with the answer,
    or with None when the question closed elsewhere first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('yes')", "Yes"),
        Binding("n", "answer('no')", "No"),
        Binding("s", "answer('session')", "This session"),
        Binding("a", "answer('always')", "Always"),
    ]

    def __init__(self, question: Question, *, waiting: int) -> None:
        super().__init__(classes="approval")
        self.question = question
        self.waiting = waiting

    def compose(self) -> ComposeResult:
        q = self.question
        with Vertical(id="approval-box"):
            yield Static(Text(f"{clean(q.panel, 40)} asks (request {q.request})"),
                         id="approval-title")  # fmt: skip
            yield Static(Text(f"tool: {q.tool}"), id="approval-tool")
            yield Static(Text(q.target), id="approval-target")
            yield Static(Text(f"why: {q.reason}" if q.reason else ""), id="approval-reason")
            yield Static(Text(self._queue_line()), id="approval-queue")
            with Horizontal(id="approval-buttons"):
                for key, answer in q.answers().items():
                    yield Button(f"{answer} ({key})", id=f"answer-{answer}")

    def _queue_line(self) -> str:
        more = self.waiting - 1
        return f"{more} more waiting" if more > 0 else "no other approval waiting"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "a" (always) only when the policy offers it: otherwise the key does nothing.
        offered = self.question.answers().values()
        return action != "answer" or not parameters or parameters[0] in offered

    def action_answer(self, answer: str) -> None:
        if answer in self.question.answers().values():
            self.dismiss(answer)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(str(event.button.id).removeprefix("answer-"))


class HaltScreen(ModalScreen[str | None]):
    """A one-line reason for halting `panel`: Enter confirms (with it), Esc cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, panel: str) -> None:
        super().__init__(classes="halt")
        self.panel = panel

    def compose(self) -> ComposeResult:
        with Vertical(id="halt-box"):
            yield Static(Text(f"halt {clean(self.panel, 40)}: why? (Enter halts, Esc cancels)"))
            yield Input(placeholder="reason", max_length=4_000, id="halt-reason")

    def on_mount(self) -> None:
        self.query_one("#halt-reason", Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
