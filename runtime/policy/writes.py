"""Which words of a shell command name files, and which of those files it writes.

A path is judged by what the command does to it (inspection.py): writing the policy's own
files or the host's stores is denied, writing another protected path asks, and merely
naming a protected path asks too. `path_arguments` lists every word, or part of a word, that
may be a path: operands, the value after `=` (`--output=F`, `of=F`), a value attached to a
short option (`-oF`: always for an output or target option the program has, otherwise when
it looks like a path) and the word after an option that takes one.

`WRITERS` says which of them a program writes. It is a floor, not a proof: a program not
listed that writes a protected file is still asked about, because naming one asks. Where a
program's destination is a directory, each source lands inside it under its own name
(`cp bus.sqlite ~/.mnemara/_teams/crew/`), so that path is judged too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from runtime.policy.commands import runs_module
from runtime.policy.options import Grammar, spelling_matches
from runtime.policy.shell import SimpleCommand, Word

_GRAMMAR = Grammar()  # getopt_long-like: abbreviated long options count


@dataclass(frozen=True)
class PathArgument:
    value: str
    glob: bool = False
    writes: bool = False  # the program creates, changes, truncates, moves or deletes it
    removes: bool = False  # it may remove or move a whole tree there (rm -r, mv)


@dataclass(frozen=True)
class Writer:
    """What one program writes. Option names are spelled as in options.py."""

    operands: Literal["all", "destination", "none"] = "none"
    removes: bool = False  # removes or moves a directory tree (its operands)
    copies: bool = False  # each source lands in the destination as <destination>/<name>
    values: tuple[str, ...] = ()  # options that take the next word as their value
    targets: tuple[str, ...] = ()  # options whose value is the destination directory
    outputs: tuple[str, ...] = ()  # options whose value is a file it writes (`of` for dd)
    in_place: tuple[str, ...] = ()  # options that make it write every operand (`sed -i`)
    grammar: Grammar = _GRAMMAR  # how `in_place` may be spelled (`sed -ni`, `-i.bak`)


# Long options that name an output file or directory in any program that has them.
OUTPUTS = ("--output", "--out", "--outfile", "--out-file", "--output-file", "--output-document",
           "--output-dir", "--outdir", "--log-file", "--logfile", "--target-directory")  # fmt: skip

_ALL = Writer("all")
_REMOVES = Writer("all", removes=True)
_COPY_VALUES = ("-S", "--suffix")
_TARGETS = ("-t", "--target-directory")
_CC = Writer(outputs=("-o",))

WRITERS: dict[str, Writer] = {
    # Remove, move or change a tree: stores inside an operand go with it.
    "rm": _REMOVES, "rmdir": _REMOVES, "unlink": _REMOVES, "shred": _REMOVES, "srm": _REMOVES,
    "chmod": _REMOVES, "chown": _REMOVES, "chgrp": _REMOVES, "chattr": _REMOVES,
    "setfacl": _REMOVES,
    "mv": Writer("all", removes=True, copies=True, values=_COPY_VALUES, targets=_TARGETS),
    # Write, create or replace every operand (compressors replace the file with the archive).
    # Keys are as program_of spells them, version digits dropped: `bzip2` is `bzip`.
    "truncate": _ALL, "touch": _ALL, "tee": _ALL, "mkdir": _ALL, "mkfifo": _ALL,
    "mknod": _ALL, "fallocate": _ALL, "sponge": _ALL, "ed": _ALL, "dos2unix": _ALL,
    "unix2dos": _ALL, "gzip": _ALL, "gunzip": _ALL, "bzip": _ALL, "bunzip": _ALL, "xz": _ALL,
    "unxz": _ALL, "lzma": _ALL, "rename": _ALL, "wipe": _ALL,
    # The SQL shells may write any database they open, and ATTACH others (`sqlite3`). Even
    # `sqlite3 -readonly db` writes: its `.open db` dot-command reopens the file read-write.
    "sqlite": _ALL, "sqlite-utils": _ALL, "litecli": _ALL, "duckdb": _ALL,
    # `--remove-source-files` deletes the sources; `--delete` prunes the destination.
    "rsync": Writer("all", copies=True),
    # Write the destination: the last operand, or the value of -t.
    "cp": Writer("destination", copies=True, values=_COPY_VALUES, targets=_TARGETS),
    "ln": Writer("destination", copies=True, values=_COPY_VALUES, targets=_TARGETS),
    "link": Writer("destination"),
    "install": Writer(
        "destination",
        copies=True,
        values=(*_COPY_VALUES, "-m", "--mode", "-o", "--owner", "-g", "--group"),
        targets=_TARGETS,
        in_place=("-d", "--directory"),
    ),
    "scp": Writer("destination", copies=True,
                  values=("-c", "-F", "-i", "-J", "-l", "-o", "-P", "-S", "-D", "-X")),
    # Write every operand only when editing in place.
    "sed": Writer(values=("-e", "--expression", "-f", "--file", "-l", "--line-length"),
                  in_place=("-i", "--in-place"), grammar=Grammar(values=frozenset("efl"))),
    "perl": Writer(in_place=("-i",), grammar=Grammar(values=frozenset("eEIlmMx"))),
    # Write the value of an output option.
    "dd": Writer(outputs=("of",)),
    "sort": Writer(outputs=("-o",)), "shuf": Writer(outputs=("-o",)),
    "iconv": Writer(outputs=("-o",)), "patch": Writer(outputs=("-o",)),
    "pandoc": Writer(outputs=("-o",)),
    "cc": _CC, "gcc": _CC, "g++": _CC, "c++": _CC, "clang": _CC, "clang++": _CC, "ld": _CC,
    "rustc": _CC, "go": _CC,
    "curl": Writer(outputs=("-o", "-c", "--cookie-jar", "-D", "--dump-header", "--trace",
                            "--trace-ascii", "--stderr", "--etag-save")),
    "wget": Writer(outputs=("-O", "-o", "-a", "--append-output", "-P", "--directory-prefix")),
}  # fmt: skip


def path_arguments(command: SimpleCommand, program: str) -> list[PathArgument]:
    """Every word (or part of one) of `command` that may be a path, and whether it is written."""
    words = command.words[1:]
    writer = WRITERS.get(program, Writer())
    if program in ("python", "pypy") and runs_module([w.value for w in words], "sqlite3"):
        writer = WRITERS["sqlite"]  # `python -m sqlite3 db`: the standard library's SQL shell
    in_place = any(
        spelling_matches(s, w.value, writer.grammar) for s in writer.in_place for w in words
    )
    found: list[PathArgument] = []
    operands: list[Word] = []
    targets: list[Word] = []
    pending = ""  # what the next word is: "target", "output" or "value"
    only_operands = False
    for word in words:
        value = word.value
        if pending:
            kind, pending = pending, ""
            if kind == "target":
                targets.append(word)
            else:
                found.append(PathArgument(value, word.glob, writes=kind == "output"))
        elif only_operands or not value.startswith("-") or value == "-":
            operands.append(word)
            key, eq, rest = value.partition("=")
            if eq and rest:
                found.append(PathArgument(rest, word.glob, writes=key in writer.outputs))
        elif value == "--":
            only_operands = True
        else:
            pending = _option(word, writer, found, targets)
    writes_all = writer.operands == "all" or in_place
    for word in operands:
        found.append(PathArgument(word.value, word.glob, writes=writes_all,
                                  removes=writes_all and writer.removes))  # fmt: skip
    if in_place:
        pass
    elif writer.operands == "destination" or (writer.copies and targets):
        found.extend(_destination(operands, targets))
    elif writer.copies and len(operands) > 1:
        found.extend(_destination(operands[:-1], operands[-1:]))
    # A path that is written is judged as a write only, not also as a mention.
    written = {a.value for a in found if a.writes}
    return list(dict.fromkeys(a for a in found if a.writes or a.value not in written))


def _option(word: Word, writer: Writer, found: list[PathArgument], targets: list[Word]) -> str:
    """Judge one option word; return what its next word is, if it takes one."""
    value = word.value
    name, eq, rest = value.partition("=")
    outputs = (*writer.outputs, *OUTPUTS)
    if value.startswith("--"):
        kind = _kind(name, writer, outputs)
        if eq:
            if kind == "target":
                targets.append(Word(rest, rest, glob=word.glob))
            else:
                found.append(PathArgument(rest, word.glob, writes=kind == "output"))
            return ""
        return kind
    kind = _kind(value, writer, outputs)
    if kind:
        return kind
    attached = value[2:].removeprefix("=")
    short_kind = _kind(value[:2], writer, outputs)
    if attached and short_kind == "target":
        targets.append(Word(attached, attached, glob=word.glob))
    elif attached and short_kind == "output":
        # The rest of the word is the option's value, path-like or not: `sort -oreturns.db`
        # writes returns.db just as `sort -o returns.db` does.
        found.append(PathArgument(attached, word.glob, writes=True))
    elif attached and value[:2] == "-o" and _pathish(attached):
        # Another program's `-o` is only a guess at an output: believed when it looks like
        # a path (`-o./x`), not when it may be a cluster of flags (`-ox`).
        found.append(PathArgument(attached, word.glob, writes=True))
    elif _pathish(attached):
        found.append(PathArgument(attached, word.glob))
    if eq and rest:
        found.append(PathArgument(rest, word.glob))  # `-Dname=PATH`
    return ""


def _kind(name: str, writer: Writer, outputs: tuple[str, ...]) -> str:
    if _named(name, writer.targets):
        return "target"
    if _named(name, outputs):
        return "output"
    if _named(name, writer.values):
        return "value"
    return ""


def _named(value: str, spellings: tuple[str, ...]) -> bool:
    """`value` is exactly one of these options (short ones alone, long ones maybe shortened)."""
    for spelling in spellings:
        if not spelling.startswith("-") or len(spelling) == 2:
            if value == spelling:
                return True
        elif spelling_matches(spelling, value, _GRAMMAR):
            return True
    return False


def _destination(sources: list[Word], targets: list[Word]) -> list[PathArgument]:
    """The destination, and each source's name inside it."""
    if not targets:
        if not sources:
            return []
        # One operand (`ln -s ../shared/x`) puts the link in the working directory.
        dest = sources[-1] if len(sources) > 1 else Word(".", ".")
        sources = sources[:-1] if len(sources) > 1 else sources
    else:
        dest = targets[-1]
    found = [PathArgument(dest.value, dest.glob, writes=True)]
    if dest.glob:
        return found
    for source in sources:
        name = source.value.rstrip("/").rsplit("/", 1)[-1]
        if name not in ("", ".", "..") and not source.glob:
            found.append(PathArgument(f"{dest.value.rstrip('/')}/{name}", writes=True))
    return found


def _pathish(text: str) -> bool:
    return bool(text) and (text[0] in "/~." or "/" in text)
