"""What a call does, whatever its spelling: the key the sentinel compares calls by. Pure.

`call_identity(name, input, root)` starts from the spelled key (calls.call_key: canonical
JSON, Bash respelt with waits and times as placeholders, option runs sorted) and folds the
spellings that do the same thing into one, from the data in equivalents.toml:

- paths: a path under the panel's root is written relative to it (`/repo/src/a.py`,
  `./src/a.py` and `src/a.py` are one path), `..` and `.` folded, in file tools and in the
  words of a Bash command alike;
- programs: the names one program goes by (`python3` is `python`, `py.test` is `pytest`),
  `python -m pytest` is `pytest`, runners and wrappers are taken off (`uv run`, `npx`,
  `sudo`, `timeout N`: commands.unwrap), subcommand aliases (`git st`, `npm t`, `npm run
  test`) folded;
- options: long spellings that have a short one (`--line-number` is `-n`), and for the
  programs listed, single-letter options run together (`-la` is `-a -l`) split before
  each run of options is sorted;
- whole-file reads: `cat F` (and the other programs under [reads]) and a Read of F with no
  offset or limit are one observation, `read F`.

What is not listed stays as spelt: the rules would rather miss a disguised repeat than take
two different calls for one. Reads that are spelt differently and still return the same
content are caught by their results (rules.same_observation), not here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from runtime.guard.calls import (
    FILE_TOOLS,
    call_key,
    canonical_arguments,
    equivalents_data,
    normalise_command,
)
from runtime.guard.commands import segments, unwrap

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)
_CLUSTER = re.compile(r"^-[A-Za-z]{2,}$")
_PATH_KEYS = ("file_path", "notebook_path", "path")


@dataclass(frozen=True)
class Equivalents:
    programs: Mapping[str, tuple[str, ...]]
    modules: Mapping[str, str]
    subcommands: Mapping[str, Mapping[str, str]]
    run_scripts: Mapping[str, frozenset[str]]
    options: Mapping[str, Mapping[str, str]]
    clusters: frozenset[str]
    file_readers: frozenset[str]


@cache
def equivalents() -> Equivalents:
    """The data of equivalents.toml (read once; a broken file is a bug of the package)."""
    data = equivalents_data()
    return Equivalents(
        programs={k: tuple(v.split()) for k, v in data["programs"].items()},
        modules=dict(data["modules"]),
        subcommands={k: dict(v) for k, v in data["subcommands"].items()},
        run_scripts={k: frozenset(v) for k, v in data["run_scripts"].items()},
        options={k: dict(v) for k, v in data["options"].items()},
        clusters=frozenset(data["clusters"]["programs"]),
        file_readers=frozenset(data["reads"]["file"]),
    )


def call_identity(name: str, arguments: Mapping[str, Any], root: str | None = None) -> str:
    """The key two calls share when they do the same thing (see the module docstring)."""
    if name == "Read" and not arguments.get("offset") and not arguments.get("limit"):
        path = arguments.get("file_path")
        if isinstance(path, str):
            return "read\0" + canonical_path(path, root)
    if name == "Bash":
        command = arguments.get("command")
        rest = {k: v for k, v in arguments.items() if k != "command"}
        if isinstance(command, str):
            done = command_identity(command, root)
            if done.startswith("read\0"):
                return done
            others = call_key(name, rest)
            return f"Bash\0{done}" if others == "{}" else f"Bash\0{done}\0{others}"
    moved = {
        k: canonical_path(v, root) if k in _PATH_KEYS and isinstance(v, str) else v
        for k, v in arguments.items()
    }
    if name in FILE_TOOLS:
        return f"{name}\0{canonical_arguments(moved)}"
    return f"{name}\0{call_key(name, moved)}"


def canonical_path(path: str, root: str | None) -> str:
    """`path` folded (`.`, `..`, doubled slashes) and, under `root`, relative to it."""
    if not path or _URL.match(path):
        return path
    base = root or "/"
    full = os.path.normpath(path if path.startswith("/") else os.path.join(base, path))
    if root:
        top = os.path.normpath(root)
        if full == top:
            return "."
        if full.startswith(top.rstrip("/") + "/"):
            return full[len(top.rstrip("/")) + 1 :]
    return full


def command_identity(command: str, root: str | None) -> str:
    """A Bash command folded by the equivalences; `read\\0PATH` for a whole-file read."""
    parts = segments(command)
    if not parts or not all(p.parsed for p in parts):
        return normalise_command(command)
    data = equivalents()
    folded = []
    for part in parts:
        if part.prefix or part.redirects:
            folded.append(normalise_command(" ".join((*part.prefix, *part.spelled,
                                                      *part.redirects))))  # fmt: skip
            continue
        words = _fold_program(unwrap(list(part.words)), data)
        whole_file = len(words) == 2 and not words[1].startswith("-")
        if len(parts) == 1 and whole_file and words[0] in data.file_readers:
            return "read\0" + canonical_path(words[1], root)
        folded.append(_respell(words, data, root))
    return " ; ".join(folded)


def _fold_program(words: list[str], data: Equivalents) -> list[str]:
    if not words:
        return words
    program = os.path.basename(words[0])
    if re.match(r"^python[0-9.]*$", program):
        program = "python"
    words = [*data.programs.get(program, (program,)), *words[1:]]
    if words[0] == "python" and len(words) > 2 and words[1] == "-m":
        module = data.modules.get(words[2])
        if module is not None:
            words = [module, *words[3:]]
    program = words[0]
    aliases = data.subcommands.get(program, {})
    if len(words) > 1 and words[1] in aliases:
        words = [program, aliases[words[1]], *words[2:]]
    scripts = data.run_scripts.get(program, frozenset())
    if len(words) > 2 and words[1] == "run" and words[2] in scripts:
        words = [program, *words[2:]]
    return words


def _respell(words: list[str], data: Equivalents, root: str | None) -> str:
    """Normalise a folded simple command with calls.normalise_command, options folded first."""
    program = words[0] if words else ""
    table = {**data.options.get("*", {}), **data.options.get(program, {})}
    out: list[str] = []
    for i, word in enumerate(words):
        if i and word in table:
            out.append(table[word])
        elif i and program in data.clusters and _CLUSTER.match(word):
            out.extend(f"-{letter}" for letter in word[1:])
        elif i and ("/" in word or word in (".", "..")) and not word.startswith("-"):
            out.append(canonical_path(word, root))
        else:
            out.append(word)
    return normalise_command(" ".join(_quote(w) for w in out))


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[\w@%+=:,./-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"
