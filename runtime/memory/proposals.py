"""Files the agent writes for the operator to read: role-amendment proposals and the choice log.

A role amendment is a proposal under `role_proposals/`, never an edit of the role doc; a
choice is one JSON line in `choices.jsonl`. Neither steers the agent.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from runtime.memory.files import append_bytes


def slug(text: str, words: int = 8) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words]) or "proposal"


def write_proposal(folder: Path, text: str, rationale: str, severity: str, now: datetime) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{now.strftime('%Y-%m-%dT%H-%M-%SZ')}_{slug(text)}.md"
    n = 1
    while target.exists():  # two proposals in one second keep both
        n += 1
        target = folder / f"{now.strftime('%Y-%m-%dT%H-%M-%SZ')}_{slug(text)}-{n}.md"
    body = (
        f"---\ndate: {now.isoformat(timespec='seconds')}\nseverity: {severity}\n"
        f"rationale: {json.dumps(rationale, ensure_ascii=False)}\n---\n\n{text.strip()}\n"
    )
    target.write_text(body, encoding="utf-8")
    return target


def append_line(path: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8")
    append_bytes(path, line)
