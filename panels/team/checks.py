"""What the team file's schema cannot see: reused names, unknown senders, missing files.

These checks need the whole file (every panel's name, whether the team has its own bus) or
the disk (role docs, the rehearsal script), so they are not pydantic validators. They run
over the raw TOML data, not the validated model, so that they report alongside the schema's
errors however many those are; a value of the wrong type is skipped here (the schema
reports it). Each finding is a location and a message; load.py adds the file and the line.
Relative paths are taken from the team file's directory (`resolve_path`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from panels.team.locate import Loc, line_of
from panels.team.model import RESERVED_NAMES, SENDER_PATTERN, SendLimits, find_duplicates

Finding = tuple[Loc, str]
Panels = list[tuple[int, dict[str, Any]]]  # (index in the file, the raw table)


def resolve_path(base: Path, value: str | None) -> Path | None:
    """`value` as a path; relative to `base` (the team file's directory) unless absolute."""
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def check_team(data: dict[str, Any], *, text: str, base: Path) -> list[Finding]:
    """Every problem of these kinds in the parsed file `data` (whose source is `text`)."""
    team = data.get("team")
    team = team if isinstance(team, dict) else {}
    raw = data.get("panels")
    panels = [
        (i, p) for i, p in enumerate(raw if isinstance(raw, list) else ()) if isinstance(p, dict)
    ]
    return [
        *_duplicates(panels, text),
        *_unknown_senders(panels, team, own_bus=team.get("bus") is None),
        *_missing_files(team, panels, base),
        *_missing_dirs(team, base),
        *_batches_over_sends(team, panels),
        *_externals(team, panels),
    ]


def _duplicates(panels: Panels, text: str) -> list[Finding]:
    named = [(i, p) for i, p in panels if isinstance(p.get("name"), str)]
    pairs = [(p["name"], _instance(p)) for _, p in named]
    found: list[Finding] = []
    reused_name: set[int] = set()
    for at, key, value, first_at in find_duplicates(pairs):
        (index, panel), (first, first_panel) = named[at], named[first_at]
        by = _used_by(text, first, key if key in first_panel else "name")
        if key == "name":
            reused_name.add(index)
            message = f"panel name {value!r} is already used {by}; give each panel its own name"
            found.append((("panels", index, "name"), message))
        elif "instance" in panel:
            message = f"instance {value!r} is already used {by}; give each panel its own instance"
            found.append((("panels", index, "instance"), message))
        elif index not in reused_name:  # the instance is the name: one problem, not two
            message = (
                f"instance {value!r} (the panel's name, as it sets no `instance`) is already "
                f"used {by}; set `instance`"
            )
            found.append((("panels", index, "name"), message))
    return found


def _instance(panel: dict[str, Any]) -> str:
    instance = panel.get("instance")
    return instance if isinstance(instance, str) else str(panel["name"])


def _used_by(text: str, index: int, key: str) -> str:
    line = line_of(text, ("panels", index, key))
    return f"by the panel on line {line}" if line else f"by panels[{index}]"


def _unknown_senders(panels: Panels, team: dict[str, Any], *, own_bus: bool) -> list[Finding]:
    # A team on a foreign bus (`bus = ...`) may hear senders from outside the team.
    if not own_bus:
        return []
    names = list(dict.fromkeys(p["name"] for _, p in panels if isinstance(p.get("name"), str)))
    external = team.get("external")
    known = set(names) | RESERVED_NAMES | set(external if isinstance(external, dict) else ())
    found: list[Finding] = []
    for index, panel in panels:
        senders = panel.get("listens_to")
        for at, sender in enumerate(senders if isinstance(senders, list) else ()):
            if not isinstance(sender, str) or not re.fullmatch(SENDER_PATTERN, sender):
                continue  # the schema reports it
            if sender not in known:
                message = (
                    f"{sender!r} is not a panel of this team; use one of {', '.join(names)} "
                    "(or operator, host), or set `bus` in [team] to share another team's bus"
                )
                found.append((("panels", index, "listens_to", at), message))
    return found


def _batches_over_sends(team: dict[str, Any], panels: Panels) -> list[Finding]:
    """A batch larger than one turn may answer: the host would take only `per_turn` of it
    (the replies past it would be refused), so a `max_messages` above it is a mistake, said
    with both numbers. Only a value the file sets is checked; the default fits any per_turn."""
    sends = team.get("sends")
    given = sends.get("per_turn") if isinstance(sends, dict) else None
    per_turn = given if type(given) is int else SendLimits().per_turn
    found: list[Finding] = []
    for index, panel in panels:
        batch = panel.get("batch")
        wanted = batch.get("max_messages") if isinstance(batch, dict) else None
        if type(wanted) is int and wanted > per_turn:
            message = (
                f"max_messages = {wanted} is more than a turn may send ([team.sends] per_turn "
                f"= {per_turn}): the replies past {per_turn} would be refused; set max_messages "
                f"to {per_turn} or less, or raise per_turn"
            )
            found.append((("panels", index, "batch", "max_messages"), message))
    return found


def _missing_files(team: dict[str, Any], panels: Panels, base: Path) -> list[Finding]:
    wanted: list[tuple[Loc, str, Any]] = [
        (("team", "rehearsal"), "rehearsal script", team.get("rehearsal")),
        *((("panels", i, "role"), "role doc", p.get("role")) for i, p in panels),
    ]
    found: list[Finding] = []
    for loc, what, value in wanted:
        path = resolve_path(base, value) if isinstance(value, str) else None
        if path is None:
            continue
        try:
            if path.is_file():
                continue
            problem = (
                f"{what} '{path}' is not a file" if path.exists() else f"no {what} at '{path}'"
            )
        except OSError as exc:
            problem = f"cannot read {what} '{path}' ({exc.strerror})"
        found.append((loc, f"{problem}; create it or fix the path"))
    return found


def _missing_dirs(team: dict[str, Any], base: Path) -> list[Finding]:
    """`readable` and `writable` name directories the sandbox binds; one that is not there
    would be skipped without a word, so it is refused here."""
    found: list[Finding] = []
    for key in ("readable", "writable"):
        values = team.get(key)
        for at, value in enumerate(values if isinstance(values, list) else ()):
            path = resolve_path(base, value) if isinstance(value, str) else None
            if path is None or path.is_dir():
                continue
            problem = f"'{path}' is not a directory" if path.exists() else f"no directory '{path}'"
            found.append((("team", key, at), f"{problem}; create it or fix the path"))
    return found


def _externals(team: dict[str, Any], panels: Panels) -> list[Finding]:
    """`[team.external.<name>]`: the name is nobody else's (a panel's or the host's own), and
    `writes_to` names panels of this team, or is "*" for all of them."""
    external = team.get("external")
    names = [p["name"] for _, p in panels if isinstance(p.get("name"), str)]
    found: list[Finding] = []
    for name, table in external.items() if isinstance(external, dict) else ():
        if name in RESERVED_NAMES or name in names:
            what = "the host's own" if name in RESERVED_NAMES else "a panel's name"
            message = f"{name!r} is {what}; give the external agent a name of its own"
            found.append((("team", "external", name), message))
        targets = table.get("writes_to") if isinstance(table, dict) else None
        for at, target in enumerate(targets if isinstance(targets, list) else ()):
            if not isinstance(target, str) or target == "*" or target in names:
                continue
            message = (
                f'{target!r} is not a panel of this team; use one of {", ".join(names)} or "*"'
            )
            found.append((("team", "external", name, "writes_to", at), message))
    return found
