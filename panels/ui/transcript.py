"""`Transcript`: a pane's scrolling record of its panel's events, streamed as they come.

A line-API widget: it keeps logical lines (one per entry, reply text split at newlines) and
their word-wrapped rows for the current width, and renders only the rows on screen, so a
transcript of 100,000 lines scrolls as fast as one of ten. Streamed text extends the open
line and re-wraps that line alone; a tool result re-wraps its call's line and the few after
it. The oldest lines go, a block at a time, past `max_lines`. It follows the end while the
view is at the end, and stays put while the operator has scrolled back.
"""

from __future__ import annotations

from typing import ClassVar

from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from panels.ui.entries import Entry, Fold, Kind, Line, Stream

MAX_LINES = 100_000
MAX_LINE_CHARS = 8_000  # a longer run of text without a newline goes on in a new line
FOLD_REACH = 200  # lines back that a tool result looks for its call


class Transcript(ScrollView, can_focus=False):
    """The transcript. `add` takes the entries of panels/ui/entries.py."""

    # Rows are wrapped to the width: nothing to scroll sideways. The gutter keeps the width
    # the same whether the scrollbar shows or not, so its arrival never re-wraps everything.
    DEFAULT_CSS = """
    Transcript {
        overflow-x: hidden;
        scrollbar-gutter: stable;
    }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "transcript--text",
        "transcript--tool",
        "transcript--note",
        "transcript--alert",
        "transcript--operator",
    }

    def __init__(self, *, max_lines: int = MAX_LINES, classes: str | None = None) -> None:
        super().__init__(classes=classes)
        self.max_lines = max_lines
        # The lines and their rows are kept in flat lists of strings and ints, not objects a
        # line: a long transcript then costs the garbage collector almost nothing to walk.
        self._text: list[str] = []  # logical lines
        self._kind: list[Kind] = []
        self._start: list[int] = []  # index of each wrapped line's first row
        self._rows: list[str] = []  # the rows for the current width
        self._row_kind: list[Kind] = []
        self._keys: dict[str, int] = {}  # tool call id -> its line's number (see _base)
        self._base = 0  # lines trimmed so far: line number n is at index n - _base
        self._width = 0  # the width the rows were wrapped for; 0 before the first layout
        self._wrapped = 0  # logical lines (from the first) whose rows are in _rows
        self._open = False  # the last line is reply text that a stream piece may extend

    @property
    def line_count(self) -> int:
        return len(self._text)

    @property
    def text(self) -> str:
        """Every logical line, joined (what a copy of the whole transcript would give)."""
        return "\n".join(self._text)

    def last_lines(self, count: int) -> list[str]:
        return self._text[-count:] if count > 0 else []

    def add(self, entries: list[Entry]) -> None:
        """Show these entries at the end."""
        if not entries:
            return
        first = len(self._text)
        for entry in entries:
            first = min(first, self._take(entry))
        first -= self._trim()
        self._rewrap_from(max(0, first))

    def _append(self, text: str, kind: Kind, key: str | None = None) -> int:
        self._text.append(text)
        self._kind.append(kind)
        if key is not None:
            self._keys[key] = self._base + len(self._text) - 1
        return len(self._text) - 1

    def _take(self, entry: Entry) -> int:
        """Apply one entry; returns the index of the first logical line it changed."""
        match entry:
            case Stream(text=text):
                return self._stream(text)
            case Line(text=text, kind=kind, key=key):
                self._open = False
                return self._append(text, kind, key)
            case Fold(key=key, text=text, error=error):
                self._open = False
                index = self._keys.pop(key, -1) - self._base
                if 0 <= index < len(self._text) and len(self._text) - index <= FOLD_REACH:
                    self._text[index] = f"{self._text[index]}  {text}"
                    if error:
                        self._kind[index] = "alert"
                    return index
                return self._append(f"  {text}", "alert" if error else "tool")
        return len(self._text)

    def _stream(self, text: str) -> int:
        pieces = text.split("\n")
        changed = len(self._text)
        if self._open and self._text:
            changed -= 1
            self._text[-1] += pieces.pop(0)
        for piece in pieces:
            self._append(piece, "text")
        self._open = True
        while len(self._text[-1]) > MAX_LINE_CHARS:  # a line without end: cut it into lines
            rest = self._text[-1][MAX_LINE_CHARS:]
            self._text[-1] = self._text[-1][:MAX_LINE_CHARS]
            self._append(rest, "text")
        return changed

    def _trim(self) -> int:
        """Drop the oldest lines past the cap; returns how many went."""
        excess = len(self._text) - self.max_lines
        if excess <= 0:
            return 0
        drop = excess + self.max_lines // 10  # a block at a time: trimming moves every row
        drop = min(drop, len(self._text))
        first_row = self._start[drop] if drop < self._wrapped else len(self._rows)
        del self._text[:drop], self._kind[:drop]
        del self._rows[:first_row], self._row_kind[:first_row]
        self._start = [start - first_row for start in self._start[drop:]]
        self._wrapped = max(0, self._wrapped - drop)
        self._base += drop
        self._keys = {k: n for k, n in self._keys.items() if n >= self._base}
        return drop

    def _rewrap_from(self, index: int) -> None:
        """Wrap logical lines from `index` on again (all of them when the width changed)."""
        width = self._wrap_width()
        if width != self._width:
            self._width = width
            index = 0
        index = min(index, self._wrapped)
        cut = self._start[index] if index < self._wrapped else len(self._rows)
        del self._rows[cut:], self._row_kind[cut:], self._start[index:]
        for text, kind in zip(self._text[index:], self._kind[index:], strict=True):
            self._start.append(len(self._rows))
            rows = _wrap(text, width)
            self._rows.extend(rows)
            self._row_kind.extend([kind] * len(rows))
        self._wrapped = len(self._text)
        self.virtual_size = Size(width, len(self._rows))
        self.refresh()

    def _wrap_width(self) -> int:
        return max(10, self.scrollable_content_region.width or self.size.width or 80)

    def on_mount(self) -> None:
        self.anchor()  # follow the end until the operator scrolls back, and again once back

    def on_resize(self) -> None:
        if self._wrap_width() != self._width:
            self._rewrap_from(0)

    def render_line(self, y: int) -> Strip:
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        base = self.rich_style
        if index >= len(self._rows):
            return Strip.blank(width, base)
        text, kind = self._rows[index], self._row_kind[index]
        style = base + self.get_component_rich_style(f"transcript--{kind}")
        return Strip([Segment(text, style)]).crop_extend(0, width, base)


def _wrap(text: str, width: int) -> list[str]:
    """`text` in rows of at most `width` cells, broken at spaces where it can be."""
    if len(text) <= width and cell_len(text) <= width:
        return [text]
    rows: list[str] = []
    row: list[str] = []
    used = -1  # cells of the row so far, less the space before its first word
    for word in text.split(" "):
        cells = cell_len(word)
        if used + 1 + cells <= width:
            row.append(word)
            used += 1 + cells
            continue
        if row:
            rows.append(" ".join(row))
        row, used = [word], cells
        if cells > width:
            *full, last = chop_cells(word, width)
            rows.extend(full)
            row, used = [last], cell_len(last)
    rows.append(" ".join(row))
    return rows
