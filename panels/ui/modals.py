"""The dashboard's modal screens: answering an approval, asking one line (a halt's reason,
a model, a token cap), a halt's record with resume, and a page of text.

Each modal returns its result through `dismiss` (attributes down, results up): the app sends
the verb. Untrusted text (the command a tool would run, the policy's reason) arrives cleaned
by approvals.py and is shown as plain `Text`, never markup.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from panels.hostdb.catalogue import Halted
from panels.text import clean
from panels.ui.approvals import Question
from runtime.policy.asking import ANSWER_KEYS, Answer

_LABELS = {
    Answer.YES: "Yes",
    Answer.NO: "No",
    Answer.SESSION: "This session",
    Answer.ALWAYS: "Always",
}


class ApprovalScreen(ModalScreen[str | None]):
    """One open question; y, n, s (and a, when offered) answer it. Dismissed with the answer,
    or with None when the question closed elsewhere first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(key, f"answer('{answer}')", _LABELS[answer]) for key, answer in ANSWER_KEYS.items()
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
            # A long command or reason scrolls in its own box: the answer buttons stay on
            # screen at any size (dashboard.tcss bounds the box by the screen's height).
            with VerticalScroll(id="approval-scroll"):
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


class AskScreen(ModalScreen[str | None]):
    """One line asked of the operator: Enter gives it (when `check` finds nothing wrong with
    it; otherwise the problem shows and the screen stays), Esc cancels (None)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, *, placeholder: str = "", value: str = "",
                 check: Callable[[str], str | None] | None = None) -> None:  # fmt: skip
        super().__init__(classes="ask")
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self.check = check

    def compose(self) -> ComposeResult:
        with Vertical(classes="ask-box"):
            yield Static(Text(f"{self.title_text} (Enter gives it, Esc cancels)"))
            yield Input(value=self.value, placeholder=self.placeholder, max_length=4_000)
            yield Static(Text(""), classes="ask-problem")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        problem = self.check(event.value) if self.check is not None else None
        if problem:
            self.query_one(".ask-problem", Static).update(Text(problem))
            return
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class HaltScreen(AskScreen):
    """A one-line reason for halting `panel`."""

    def __init__(self, panel: str) -> None:
        super().__init__(f"halt {clean(panel, 40)}: why?", placeholder="reason")
        self.panel = panel


class HaltRecordScreen(ModalScreen[bool]):
    """Why a panel is halted: who halted it, the rule, the evidence, the turn, and what the
    panel did just before. `r` (or the button) resumes: dismissed with True; Esc closes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "resume", "Resume"),
        Binding("escape", "close", "Close"),
    ]

    def __init__(self, panel: str, halt: Halted, before: list[str], *, read_only: bool) -> None:
        super().__init__(classes="halt-record")
        self.panel = panel
        self.halt = halt
        self.before = before
        self.read_only = read_only

    def compose(self) -> ComposeResult:
        h = self.halt
        with Vertical(classes="record-box"):
            turn = f" in turn {h.turn}" if h.turn else ""  # a halt between turns has none
            yield Static(Text(f"{clean(self.panel, 40)} is halted{turn}"), classes="record-title")
            yield Static(Text(f"by: {clean(h.by, 60)} ({clean(h.source, 40)})"))
            yield Static(Text(f"rule: {clean(h.rule, 200)}"))
            # The evidence and the lines before scroll in a box of their own: the buttons stay
            # on screen at any size (dashboard.tcss bounds it by the screen's height).
            with VerticalScroll(classes="record-body"):
                yield Static(Text(f"evidence: {clean(h.message, 2_000)}"),
                             classes="record-evidence")  # fmt: skip
                yield Static(Text("just before:"), classes="record-label")
                yield Static(Text("\n".join(clean(line, 300) for line in self.before) or "-"),
                             classes="record-before")  # fmt: skip
            with Horizontal(classes="record-buttons"):
                if not self.read_only:
                    yield Button("resume (r)", id="record-resume", variant="warning")
                yield Button("close (Esc)", id="record-close")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "resume" or not self.read_only

    def action_resume(self) -> None:
        if not self.read_only:
            self.dismiss(True)

    def action_close(self) -> None:
        self.dismiss(False)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "record-resume":
            self.action_resume()
        else:
            self.action_close()


class TextScreen(ModalScreen[None]):
    """A page of text to read (help, a file's skeleton); Esc or q closes it. The text is
    shown as plain `Text`, never markup."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close"),
        Binding("q", "close", "Close", show=False),
    ]

    def __init__(self, title: str, text: str) -> None:
        super().__init__(classes="text-page")
        self.title_text = title
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="page-box"):
            yield Static(Text(f"{self.title_text}  (Esc closes)"), classes="page-title")
            with VerticalScroll(classes="page-body"):
                yield Static(Text(self.text))

    def action_close(self) -> None:
        self.dismiss(None)
