"""`debug.log`: the instance's append-only JSONL record of errors, tool calls, evictions, warnings.

Each record is one line written with a single `write()` on a file opened with O_APPEND, under
a thread lock, so lines from concurrent tasks, threads or processes never interleave.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

Kind = Literal["error", "warning", "tool_call", "eviction", "info", "halt"]


class DebugLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def write(self, kind: Kind, event: str, **fields: Any) -> None:
        record = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "kind": kind}
        record["event"] = event
        record.update(fields)
        line = (json.dumps(record, default=str, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
