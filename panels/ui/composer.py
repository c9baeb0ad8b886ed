"""`Composer`: a pane's multi-line input. Ctrl+S sends, Enter is a newline, Esc clears.

It is one row (the transcript above keeps the room); focused, a bar marks it and it grows with
its text, up to half its pane (dashboard.tcss), and shrinks back when the focus leaves."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import TextArea


class Composer(TextArea):
    """A text area that posts `Composer.Submitted` with its text on Ctrl+S, then empties."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "submit", "Send", show=True),
        Binding("escape", "clear", "Clear", show=True),
    ]

    class Submitted(Message):
        """The operator sent the composer's text (never empty or only whitespace)."""

        def __init__(self, composer: Composer, text: str) -> None:
            super().__init__()
            self.composer = composer
            self.text = text

        @property
        def control(self) -> Composer:
            return self.composer

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, tab_behavior="focus", show_line_numbers=False,
                         placeholder="type here · ctrl+s sends")  # fmt: skip

    def action_submit(self) -> None:
        text = self.text
        if not text.strip():
            return
        self.clear()
        self.post_message(self.Submitted(self, text))

    def action_clear(self) -> None:
        self.clear()
