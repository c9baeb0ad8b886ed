"""The checkpoints as lines a person reads (`mnemara rewind --list`, the REPL's `/rewind
list`). Pure.

Checkpoint N is taken before a turn; what that turn changed is what checkpoint N+1 found
changed, so each line shows the next one's changes ("the newest" for the last). Notes are
the turn's input, which came from the operator or a peer: control characters are dropped.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from runtime.checkpoint.model import Changes, Checkpoint

NOTE = 40


def _clean(text: str, limit: int) -> str:
    flat = "".join(c if c.isprintable() else " " for c in text)
    flat = " ".join(flat.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _changes(checkpoint: Checkpoint) -> Changes:
    total = [a.changes for a in checkpoint.areas]
    sample = tuple(p for c in total for p in c.sample)[:3]
    return Changes(sum(c.added for c in total), sum(c.modified for c in total),
                   sum(c.removed for c in total), sample)  # fmt: skip


def _before(checkpoint: Checkpoint) -> str:
    if checkpoint.kind == "rewind":
        return _clean(checkpoint.note or "before a rewind", NOTE + 10)
    turn = f"turn {checkpoint.turn}" if checkpoint.turn is not None else "a turn"
    note = f': "{_clean(checkpoint.note, NOTE)}"' if checkpoint.note else ""
    return f"before {turn}{note}"


def list_lines(checkpoints: Sequence[Checkpoint]) -> list[str]:
    """One line per checkpoint, oldest first, under a header."""
    if not checkpoints:
        return ["(no checkpoints yet: one is taken before each turn that may write files)"]
    ordered = sorted(checkpoints, key=lambda c: c.number)
    lines = [f"{'#':>5}  {'taken':<19}  {'files':>6}  what, and what came of it"]
    for index, checkpoint in enumerate(ordered):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(checkpoint.at))
        files = sum(a.files for a in checkpoint.recorded())
        after = ordered[index + 1] if index + 1 < len(ordered) else None
        if after is None:
            came = "the newest"
        else:
            changes = _changes(after)
            shown = (
                f" ({', '.join(_clean(p, 40) for p in changes.sample)})" if changes.sample else ""
            )
            came = f"then {changes.describe()}{shown}"
        skipped = [a for a in checkpoint.areas if a.skipped]
        left = f"; {len(skipped)} area(s) left out" if skipped else ""
        lines.append(
            f"{checkpoint.number:>5}  {when:<19}  {files:>6}  {_before(checkpoint)}; {came}{left}"
        )
    return lines
