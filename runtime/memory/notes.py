"""Dated notes on disk: `memory/YYYY-MM-DD.md`, append-only, one block per note.

A block is the original mnemara's shape, so its files parse here and ours parse there:

    ## [2026-12-01T09:14:03+00:00] insight
    <!-- panel=engineer epoch=2 turn=41 -->      (only when the writer is known)

    The text.

    **applies_to:**
    - deploy
    - disk

Structured fields are `**key:** value` lines; a list is a real Markdown list. The original
wrote a list field as Python's text for it (`**applies_to:** ['reads', 'writes']`), read back
here as the list it was (`parse_list_text`), never as text cut at its commas. Archiving
(replay's near-duplicates) never edits a day file: the block is copied to
`memory/archive/YYYY-MM-DD.md` and its source recorded in `memory/archive/archived.jsonl`;
restoring appends a line there, so every archive is reversible.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from runtime.memory.files import append_bytes, read_memory_text
from runtime.memory.model import Atom, Provenance, note_source
from sqlitekit.jsonload import load_json

# The original's structured observation, in the order it is written out.
PAYLOAD_FIELDS = ("observation", "evidence", "prediction", "applies_to", "confidence")
_HEADER = re.compile(r"^##\s*\[([^\]\n]+)\]\s*([^\n]*)$", re.MULTILINE)
_PROVENANCE = re.compile(r"\A<!-- panel=(\S+) epoch=(\d+) turn=(\d+|-) -->\n?")
_FIELD = re.compile(r"^\*\*([A-Za-z_][A-Za-z0-9_]*):\*\*[ \t]*(.*)$")
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_FORGED = re.compile(r"^(?:##\s*\[|<!-- panel=)", re.MULTILINE)
_MAX_LIST_TEXT = 4096  # a field longer than this is text, not a list the original wrote


def render_block(
    text: str,
    category: str,
    payload: Mapping[str, Any] | None,
    provenance: Provenance | None,
    when: datetime,
) -> str:
    """One note block as written to the day file (ends with a blank line)."""
    head = f"## [{when.isoformat(timespec='seconds')}] {category}\n"
    if provenance is not None:
        head += f"<!-- {provenance.render()} -->\n"
    return f"{head}\n{render_body(text, payload or {})}\n\n"


def neutralise(text: str) -> str:
    """Text with every line that would read as a note header or a provenance mark escaped
    (`\\## [`, `\\<!-- panel=`): written text cannot start a forged note, nor claim another
    writer, nor hide a quarantined section behind someone else's mark."""
    return _FORGED.sub(lambda m: "\\" + m.group(), text)


def render_body(text: str, payload: Mapping[str, Any]) -> str:
    """The text, then the payload's known fields, then any others as a JSON block."""
    text = neutralise(text)
    parts = [text.strip()] if text.strip() else []
    for key in PAYLOAD_FIELDS:
        if key in payload:
            parts.append(_render_field(key, payload[key]))
    rest = {k: v for k, v in payload.items() if k not in PAYLOAD_FIELDS}
    if rest:
        parts.append("```json\n" + json.dumps(rest, sort_keys=True, ensure_ascii=False) + "\n```")
    return "\n\n".join(parts)


def _render_field(key: str, value: Any) -> str:
    if isinstance(value, list | tuple):
        items = "\n".join(f"- {_one_line(item)}" for item in value)
        return f"**{key}:**\n{items}" if items else f"**{key}:**"
    return f"**{key}:** {_one_line(value)}"


def _one_line(value: Any) -> str:
    shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return " ".join(shown.split())


def parse_payload(body: str) -> dict[str, Any]:
    """The `**key:**` fields of a note body (lists back as lists); other text is ignored."""
    payload: dict[str, Any] = {}
    key: str | None = None
    for line in body.splitlines():
        field = _FIELD.match(line)
        if field:
            key, value = field.group(1), field.group(2).strip()
            payload[key] = value if value else []
        elif key is not None and line.startswith("- ") and isinstance(payload[key], list):
            payload[key].append(line[2:].strip())
        elif line.strip():
            key = None
    for name, value in payload.items():
        if isinstance(value, str) and (items := parse_list_text(value)) is not None:
            payload[name] = items
    if isinstance(payload.get("applies_to"), str):  # the original wrote "a, b"
        payload["applies_to"] = [p.strip() for p in payload["applies_to"].split(",") if p.strip()]
    return payload


def parse_list_text(text: str) -> list[Any] | None:
    """The list a one-line field holds when it is a JSON or Python list of strings and numbers
    (`["a", 1]`, `['a', 'b']`, as the original wrote its lists); None for any other text."""
    if not (text.startswith("[") and text.endswith("]")) or len(text) > _MAX_LIST_TEXT:
        return None
    try:
        value = ast.literal_eval(text)  # literals only: no name is looked up, nothing runs
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if isinstance(value, list) and all(
        isinstance(item, str | int | float) and not isinstance(item, bool) for item in value
    ):
        return value
    return None


def parse_day(day_file: str, content: str) -> list[Atom]:
    """The note blocks of one day file's content, in file order."""
    atoms = []
    seen: Counter[str] = Counter()
    for header, end in _cut(content):
        block = content[header.start() : end]
        seen[block] += 1  # a block repeated word for word is another note (note_source)
        body = content[header.end() : end].lstrip("\n")
        provenance = None
        mark = _PROVENANCE.match(body)
        if mark:
            turn = None if mark.group(3) == "-" else int(mark.group(3))
            provenance = Provenance(mark.group(1), int(mark.group(2)), turn)
            body = body[mark.end() :]
        body = body.strip()
        atoms.append(
            Atom(
                source=note_source(day_file, block, seen[block]),
                kind="note",
                text=body,
                category=header.group(2).strip() or "note",
                written_at=header.group(1).strip(),
                payload=parse_payload(body),
                provenance=provenance,
            )
        )
    return atoms


def _cut(content: str) -> list[tuple[re.Match[str], int]]:
    """Each block of a day file's content: its header, and where the block ends."""
    headers = list(_HEADER.finditer(content))
    ends = [header.start() for header in headers[1:]] + [len(content)]
    return list(zip(headers, ends, strict=True))


def written_at(atom: Atom) -> datetime | None:
    try:
        when = datetime.fromisoformat(atom.written_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


class FileNotes:
    """The NoteStore of an instance (or of a team's shared memory): files under `root`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.archive_dir = root / "archive"
        self.ledger = self.archive_dir / "archived.jsonl"

    def append(
        self,
        text: str,
        category: str = "note",
        payload: Mapping[str, Any] | None = None,
        provenance: Provenance | None = None,
        now: datetime | None = None,
    ) -> Atom:
        when = now or datetime.now(UTC)
        clean = " ".join(category.split()) or "note"
        block = render_block(text, clean, payload, provenance, when)
        day_file = f"{when.date().isoformat()}.md"
        target = self.root / day_file
        # A file another writer left without a final newline would glue our header to its
        # last line, and the header is only found at the start of a line.
        if target.is_file() and target.stat().st_size and _last_byte(target) != b"\n":
            block = "\n" + block
        append_bytes(target, block.encode("utf-8"))
        written = block.lstrip("\n")
        atom = parse_day(day_file, written)[0]
        content = read_memory_text(target)
        if content.count(written) > 1:
            # The same words in the same second are in the file already (a retry, a script's
            # repeat): this note is a later occurrence, with a source of its own.
            count = sum(content[h.start() : end] == written for h, end in _cut(content))
            atom = replace(atom, source=note_source(day_file, written, max(1, count)))
        return atom

    def atoms(self, since: datetime | None = None) -> list[Atom]:
        hidden = set(self.archived())
        found: list[Atom] = []
        for path in sorted(self.root.glob("*.md")):
            if since and _DAY.fullmatch(path.stem) and path.stem < since.date().isoformat():
                continue  # a whole day before the cutoff
            for atom in parse_day(path.name, read_memory_text(path)):
                when = written_at(atom)
                if atom.source in hidden or (since and when is not None and when < since):
                    continue
                found.append(atom)
        return found

    def archive(self, sources: Sequence[str], reason: str) -> list[str]:
        wanted = set(sources) - set(self.archived())
        done = []
        now = datetime.now(UTC).isoformat(timespec="seconds")
        for atom in self.atoms():
            if atom.source not in wanted:
                continue
            day = atom.source.split("/", 1)[1].split("#", 1)[0]
            copy = f"<!-- archived {atom.source} at {now}: {_one_line(reason)} -->\n"
            copy += f"## [{atom.written_at}] {atom.category}\n\n{atom.text}\n\n"
            append_bytes(self.archive_dir / day, copy.encode("utf-8"))
            self._record("archive", atom.source, reason, now)
            done.append(atom.source)
        return done

    def restore(self, sources: Sequence[str]) -> list[str]:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        done = [s for s in sources if s in set(self.archived())]
        for source in done:
            self._record("restore", source, "restored", now)
        return done

    def archived(self) -> list[str]:
        return [source for source, archived in self._states().items() if archived]

    def restored(self) -> list[str]:
        return [source for source, archived in self._states().items() if not archived]

    def _states(self) -> dict[str, bool]:
        """Each source the ledger names: True while archived, False once restored."""
        if not self.ledger.is_file():
            return {}
        state: dict[str, bool] = {}
        for line in read_memory_text(self.ledger).splitlines():
            try:
                entry = load_json(line)
                state[str(entry["source"])] = entry["action"] == "archive"
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line from a crash: that archive did not happen
        return state

    def _record(self, action: str, source: str, reason: str, at: str) -> None:
        line = json.dumps({"action": action, "source": source, "reason": reason, "at": at})
        append_bytes(self.ledger, (line + "\n").encode("utf-8"))


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as fh:
        fh.seek(-1, os.SEEK_END)
        return fh.read(1)
