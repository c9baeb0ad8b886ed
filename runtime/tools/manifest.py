"""The file-state manifest: which files the agent read this session, and are they still so.

When a Read succeeds, the file's bytes on disk are hashed; when a request is assembled, the
same file's bytes are hashed again. Both sides hash the same thing (raw bytes, never the
line-numbered text the Read tool returned), so an untouched file reads `fresh` for ever, an
edited one `STALE`, a deleted one `gone`. A successful Write or Edit by the agent itself
re-hashes a tracked file: the agent knows what it wrote.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import anyio.to_thread

from runtime.instance.regular_file import open_regular_file
from runtime.turn.driver import DriverEvent, ToolCall, ToolResult
from runtime.window.evict import WRITE_TOOLS

# Past this size a file is fingerprinted by size and mtime instead of read in full.
HASH_LIMIT_BYTES = 64 * 1024 * 1024
_PATH_KEYS = ("file_path", "notebook_path")
State = Literal["fresh", "STALE", "gone"]


@dataclass(frozen=True)
class Fingerprint:
    digest: str
    size: int
    mtime: float


@dataclass(frozen=True)
class ManifestEntry:
    path: str
    state: State
    size: int
    mtime: float

    @property
    def tokens(self) -> int:
        return max(1, (self.size + 3) // 4)


def fingerprint(path: str) -> Fingerprint | None:
    """The file's content hash, size and mtime; None when it is gone or not a regular file.

    Opened by `open_regular_file`, so a path that became a FIFO or a device since it was Read
    is "gone" instead of a request that waits for ever (#24); at most HASH_LIMIT_BYTES are read.
    """
    try:
        with open_regular_file(path) as (fd, st):
            if st.st_size > HASH_LIMIT_BYTES:
                stamp = f"size-mtime:{st.st_size}:{st.st_mtime_ns}"
                return Fingerprint(stamp, st.st_size, st.st_mtime)
            digest = hashlib.sha256()
            left = HASH_LIMIT_BYTES + 1
            while left > 0 and (chunk := os.read(fd, min(1 << 20, left))):
                digest.update(chunk)
                left -= len(chunk)
    except OSError:
        return None
    return Fingerprint(digest.hexdigest(), st.st_size, st.st_mtime)


def render_manifest(entries: Sequence[ManifestEntry]) -> str | None:
    if not entries:
        return None
    lines = [
        "<<file manifest: files you read this session, checked against the disk now>>",
        "| file | state | size | modified (UTC) | ~tokens |",
        "|---|---|---|---|---|",
    ]
    for e in entries:
        if e.state == "gone":
            lines.append(f"| {e.path} | gone | - | - | - |")
            continue
        when = datetime.fromtimestamp(e.mtime, UTC).strftime("%Y-%m-%d %H:%M:%S")
        lines.append(f"| {e.path} | {e.state} | {e.size} B | {when} | {e.tokens} |")
    lines.append("STALE: changed on disk since you read it; Read it again before relying on it.")
    return "\n".join(lines)


class FileTracker:
    """Follows one session's file tool calls through their results."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self._pending: dict[str, tuple[str, str]] = {}  # tool_use_id -> (tool, path)
        self.reads: dict[str, Fingerprint] = {}  # in the order first read

    def _path(self, call: ToolCall) -> str | None:
        raw = next((call.input[k] for k in _PATH_KEYS if isinstance(call.input.get(k), str)), None)
        if not raw:
            return None
        return os.path.normpath(Path(self.cwd, os.path.expanduser(raw)))

    async def observe(self, event: DriverEvent) -> None:
        if isinstance(event, ToolCall) and (event.name == "Read" or event.name in WRITE_TOOLS):
            path = self._path(event)
            if path is not None:
                self._pending[event.id] = (event.name, path)
            return
        if not isinstance(event, ToolResult):
            return
        pending = self._pending.pop(event.tool_use_id, None)
        if pending is None or event.is_error:
            return
        tool, path = pending
        if tool in WRITE_TOOLS and path not in self.reads:
            return
        seen = await anyio.to_thread.run_sync(fingerprint, path)
        if seen is not None:
            self.reads[path] = seen

    async def entries(self) -> list[ManifestEntry]:
        reads = list(self.reads.items())
        if not reads:
            return []
        now = await anyio.to_thread.run_sync(lambda: [fingerprint(p) for p, _ in reads])
        out = []
        for (path, then), current in zip(reads, now, strict=True):
            if current is None:
                out.append(ManifestEntry(path, "gone", 0, 0.0))
            else:
                state: State = "fresh" if current.digest == then.digest else "STALE"
                out.append(ManifestEntry(path, state, current.size, current.mtime))
        return out

    async def manifest_text(self) -> str | None:
        return render_manifest(await self.entries())
