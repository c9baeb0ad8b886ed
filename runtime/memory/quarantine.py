"""Quarantine of a team's shared memory: what a halted turn wrote is kept, marked, and not searched.

When the host halts a panel (the watchdog, the sentinel or a budget), every fact that panel
wrote in that turn is suspect: a runaway may have written nonsense or an injected
instruction. The turn is entered in `quarantine.jsonl` (append-only, like the archive
ledger); from then on its wiki sections read back as a marker, its notes and sections leave
the search index, and graph nodes it made come back marked. `release` (the operator's call,
`mnemara memory quarantine --release`) undoes it. Facts are matched by their provenance:
the `<!-- panel=... epoch=... turn=... -->` line above a wiki section or note.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from runtime.memory.files import append_bytes, read_memory_text
from runtime.memory.model import Provenance
from sqlitekit.jsonload import load_json

_MARK = re.compile(r"^<!-- panel=(\S+) epoch=(\d+) turn=(\d+|-) -->$", re.MULTILINE)
Key = tuple[str, int, int | None]


def key_of(provenance: Provenance) -> Key:
    return (provenance.panel, provenance.epoch, provenance.turn)


def parse_key(text: str) -> Key:
    """`panel:epoch:turn` (turn may be `-`) as the CLI takes it; ValueError when malformed."""
    panel, epoch, turn = text.rsplit(":", 2)
    if not panel:
        raise ValueError("empty panel name")
    return (panel, int(epoch), None if turn == "-" else int(turn))


def show_key(key: Key) -> str:
    return f"{key[0]}:{key[1]}:{'-' if key[2] is None else key[2]}"


@dataclass(frozen=True)
class Entry:
    key: Key
    reason: str
    at: str


class Quarantine:
    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        # The ledger as last read, keyed by the file's (mtime, size): `holds` is asked once
        # per note or node, and the file changes only when a turn is halted or released.
        self._read: tuple[tuple[int, int] | None, list[Entry]] = (None, [])

    def add(self, provenance: Provenance, reason: str) -> None:
        self._record("quarantine", key_of(provenance), reason)

    def release(self, key: Key) -> bool:
        """Lift one turn's quarantine; False when it was not quarantined."""
        if key not in {entry.key for entry in self.entries()}:
            return False
        self._record("release", key, "released by the operator")
        return True

    def entries(self) -> list[Entry]:
        """The turns quarantined now, in the order they were quarantined."""
        try:
            info = self.ledger.stat()
        except FileNotFoundError:
            return []
        stamp = (info.st_mtime_ns, info.st_size)
        if self._read[0] != stamp:
            self._read = (stamp, self._parse())
        return list(self._read[1])

    def _parse(self) -> list[Entry]:
        active: dict[Key, Entry] = {}
        for line in read_memory_text(self.ledger).splitlines():
            try:
                item = load_json(line)
                key = parse_key(item["key"])
                if item["action"] == "quarantine":
                    active.setdefault(key, Entry(key, str(item["reason"]), str(item["at"])))
                else:
                    active.pop(key, None)
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line from a crash: that change did not happen
        return list(active.values())

    def keys(self) -> set[Key]:
        return {entry.key for entry in self.entries()}

    def holds(self, provenance: Provenance | None) -> bool:
        return provenance is not None and key_of(provenance) in self.keys()

    def holds_mark(self, rendered: str) -> bool:
        """Is a rendered provenance (`panel=.. epoch=.. turn=..`) quarantined?"""
        found = _MARK.fullmatch(f"<!-- {rendered} -->")
        return found is not None and _key(found) in self.keys()

    def mask(self, text: str) -> str:
        """A page with each quarantined section replaced by a marker saying whose it was."""
        keys = self.keys()
        if not keys:
            return text
        marks = list(_MARK.finditer(text))
        out = [text[: marks[0].start()] if marks else text]
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
            key = _key(mark)
            if key in keys:
                hidden = len(text[mark.end() : end].strip())
                out.append(
                    f"{mark.group()}\n[quarantined: {hidden:,} characters written by {key[0]} "
                    f"in turn {show_key(key)}, which was halted; kept until the operator "
                    "releases it]\n"
                )
            else:
                out.append(text[mark.start() : end])
        return "".join(out)

    def _record(self, action: str, key: Key, reason: str) -> None:
        at = datetime.now(UTC).isoformat(timespec="seconds")
        line = json.dumps({"action": action, "key": show_key(key), "reason": reason, "at": at})
        append_bytes(self.ledger, (line + "\n").encode("utf-8"))


def _key(mark: re.Match[str]) -> Key:
    turn = mark.group(3)
    return (mark.group(1), int(mark.group(2)), None if turn == "-" else int(turn))
