"""`RenderCache`: each window row's prompt block, kept between turns so that a turn renders only
the rows that are new or changed since the last one, and costs little more at 8,000 rows than
at 500.

Entries are keyed by row id and the row's revision (`TurnStore.revised_rows`). The store stamps
every insert and every change of a row, made by any process, with a number from one store-wide
counter that never goes back, so a revision names one content of a row: a row edited, pinned,
labelled, marked interrupted or compressed, or deleted and imported again under its id, comes
back with a revision the cache has not seen and is rendered afresh. One cache serves one store.

The text is whatever `render_row` returns, wrapped by `text_block`, exactly as `build_prompt`
does: the cache only remembers it. Entries of rows that left the window are dropped.

Why it also keeps the last window: the store hands out the same (revision, row) objects until
a row changes, so "the window is the last one, minus some oldest rows, plus new rows" is a list
comparison that C code settles by identity, and the blocks are reused as a list slice. Only
a window changed in the middle (an eviction, a pin) walks every row in Python, through the
cache. The blocks are shared between prompts and must not be changed in place (prompt.Prompt).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from runtime.turn.prompt import render_row, text_block
from runtime.window.rows import Block, Row

Revised = tuple[int, Row]


class RenderCache:
    """Prompt blocks by row id, each with the revision it was rendered from."""

    def __init__(self, render: Callable[[Row], str | None] = render_row) -> None:
        self._render = render
        self._entries: dict[int, tuple[int, Block | None]] = {}
        self._window: list[Revised] = []  # the window of the last call
        self._blocks: list[Block | None] = []  # its blocks, None for rows that render to none

    def __len__(self) -> int:
        return len(self._entries)

    def transcript(self, window: Sequence[Revised], *, leave_out: int | None = None) -> list[Block]:
        """The blocks of the window's (revision, row) pairs in order, rows with no text left out;
        the row with id `leave_out` (the input of the turn being run) is not part of it."""
        rows = self._without(list(window), leave_out)
        last, reused = self._window, self._reuse(rows)
        if reused is None:
            blocks = [self._block(entry) for entry in rows]
        else:
            skip, blocks = reused
            for _, row in last[:skip]:  # the oldest rows left; nothing else did
                self._entries.pop(row.id, None)
        self._window, self._blocks = rows, blocks
        if len(self._entries) > len(rows):  # every row now has an entry: the rest left
            alive = {row.id for _, row in rows}
            for gone in [i for i in self._entries if i not in alive]:
                del self._entries[gone]
        return list(filter(None, blocks))  # a block is a non-empty dict

    def _reuse(self, rows: list[Revised]) -> tuple[int, list[Block | None]] | None:
        """How many of the last window's oldest rows left and the blocks, reusing the last
        window's, when `rows` is that window minus those rows plus new ones; None when the
        window changed in other ways."""
        last = self._window
        if not last or not rows:
            return None
        try:
            skip = last.index(rows[0])
        except ValueError:
            return None
        kept = len(last) - skip
        if rows[:kept] != last[skip:]:
            return None
        return skip, self._blocks[skip:] + [self._block(entry) for entry in rows[kept:]]

    def _block(self, entry: Revised) -> Block | None:
        rev, row = entry
        cached = self._entries.get(row.id)
        if cached is None or cached[0] != rev:
            text = self._render(row)
            cached = self._entries[row.id] = (rev, None if text is None else text_block(text))
        return cached[1]

    @staticmethod
    def _without(rows: list[Revised], leave_out: int | None) -> list[Revised]:
        if leave_out is None:
            return rows
        if rows and rows[-1][1].id == leave_out:  # the turn's input is the newest row
            rows.pop()
            return rows
        return [entry for entry in rows if entry[1].id != leave_out]
