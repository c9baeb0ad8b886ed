"""`mnemara note` read without click: a note should take about as long as `mnemara --help`.

typer coerces every parameter of a command it runs through a pydantic TypeAdapter, and
importing pydantic costs more than the note itself. `note`'s arguments are simple enough to
read here: `-i/--instance NAME`, `--category NAME` (also `--opt=VALUE` and `-iNAME`), `--`,
then words. Anything else (help, an unknown or doubtful option, a missing instance or text)
returns None and the command goes through typer as usual, with its messages.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple


class NoteArguments(NamedTuple):
    instance: str
    text: list[str]
    category: str


def note_arguments(argv: Sequence[str]) -> NoteArguments | None:
    """`argv` (without the program name) as a plain `note` command, or None."""
    if not argv or argv[0] != "note":
        return None
    values = {"instance": "", "category": "note"}
    names = {"-i": "instance", "--instance": "instance", "--category": "category"}
    words: list[str] = []
    rest = iter(argv[1:])
    for token in rest:
        if token == "--":
            words += list(rest)
            break
        name, value = _option(token, names)
        if name is None:
            if token.startswith("-"):
                return None  # help, an unknown option, a lone "-": typer says what it means
            words.append(token)
            continue
        if value is None:
            value = next(rest, None)
            if value is None or value.startswith("-"):
                return None
        values[name] = value
    if not values["instance"] or not words:
        return None
    return NoteArguments(values["instance"], words, values["category"])


def _option(token: str, names: dict[str, str]) -> tuple[str | None, str | None]:
    """(option name, its value when attached) for a known option token, else (None, None)."""
    if token in names:
        return names[token], None
    flag, equals, value = token.partition("=")
    if equals and flag.startswith("--") and flag in names:
        return names[flag], value
    if token.startswith("-i") and not token.startswith("--") and len(token) > 2:
        return "instance", token[2:]
    return None, None
