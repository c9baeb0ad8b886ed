"""Memory notes: the append-only `memory/YYYY-MM-DD.md` files that survive window eviction."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from runtime.home import InstancePaths


def append_note(
    paths: InstancePaths, text: str, category: str = "note", now: datetime | None = None
) -> Path:
    """Append one note block to today's memory file and return the file's path."""
    when = now or datetime.now(UTC)
    paths.memory.mkdir(parents=True, exist_ok=True)
    target = paths.memory / f"{when.date().isoformat()}.md"
    clean_category = " ".join(category.split()) or "note"
    block = f"## [{when.isoformat(timespec='seconds')}] {clean_category}\n\n{text.strip()}\n\n"
    # One write on an O_APPEND descriptor: concurrent writers never interleave inside a note.
    fd = os.open(target, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, block.encode("utf-8"))
    finally:
        os.close(fd)
    return target
