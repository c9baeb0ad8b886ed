"""The words of a Bash command, split without running it, and the files they name. Pure.

`segments` splits a command into simple commands and their words with the policy's strict
lexer (runtime/policy/shell.py). A command outside that subset (`$(...)`, here-documents,
`for` loops) is split roughly instead (shlex, cut at `;`, `&&`, `||`, `|`, `&` and newlines,
here-document bodies dropped): good enough for the guesses made from it (programs.py, and the
keys of calls.py), which never decide a permission. `unwrap` finds the command a wrapper runs
(`sudo x`, `timeout 5 x`, `env A=1 x`, `uv run x`, `npx x`).

`named_paths` gives the words that may name files (they contain `/` or `.`, or are a known
file name such as `Makefile`; not options, URLs, globs, the program, its subcommand, nor the
pattern of grep or sed), plus the targets of write redirections, made absolute against the
call's cwd (following `cd DIR` segments), at most `MAX_NAMED_PATHS` of them.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from runtime.policy.shell import Script, parse_command

MAX_COMMAND_CHARS = 16_384  # longer commands are not split (nothing is named, all "changes")
MAX_NAMED_PATHS = 32


@dataclass(frozen=True)
class Segment:
    """One simple command: its words (after quote removal) and the files it redirects into."""

    words: tuple[str, ...]
    writes: tuple[str, ...] = ()
    spelled: tuple[str, ...] = ()  # each word re-quoted (the lexer's canonical spelling)
    quoted: tuple[bool, ...] = ()  # each word: were quotes used (so it is no option)
    prefix: tuple[str, ...] = ()  # NAME=value assignments before the command, spelled
    redirects: tuple[str, ...] = ()  # every redirection, spelled
    parsed: bool = True  # False: split roughly (the command was outside the lexer's subset)


@lru_cache(maxsize=512)  # a loop sends the same command again and again
def segments(command: str) -> tuple[Segment, ...]:
    """The simple commands of `command`, strictly parsed when possible, else split roughly."""
    if len(command) > MAX_COMMAND_CHARS:
        return ()
    parsed = parse_command(command)
    if isinstance(parsed, Script):
        return tuple(
            Segment(
                words=tuple(w.value for w in c.words),
                writes=tuple(r.target.value for r in c.redirects if r.writes and r.target),
                spelled=tuple(w.canonical for w in c.words),
                quoted=tuple(w.quoted for w in c.words),
                prefix=tuple(w.canonical for w in c.assignments),
                redirects=tuple(r.canonical for r in c.redirects),
            )
            for c in parsed.commands
        )
    return tuple(_rough_segments(_strip_heredocs(command)))


_HEREDOC_RE = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


def _strip_heredocs(command: str) -> str:
    """The command without the bodies of its here-documents (they are data, not words)."""
    lines = command.split("\n")
    out: list[str] = []
    ending: list[str] = []
    for line in lines:
        if ending:
            if line.strip() == ending[0]:
                ending.pop(0)
            continue
        out.append(line)
        ending = [m.group(2) for m in _HEREDOC_RE.finditer(line)]
    return "\n".join(out)


_OPERATORS = frozenset({";", "&&", "||", "|", "&", "|&", ";;", "(", ")", "\n"})
_REDIRECT_RE = re.compile(r"^\d*(>>?|&>>?|>\|)$")


def _rough_segments(command: str) -> Iterator[Segment]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unterminated quote
        tokens = command.split()
    words: list[str] = []
    writes: list[str] = []
    pending_write = False
    for token in tokens:
        if token in _OPERATORS or set(token) <= set(";&|()"):
            if words:
                yield _rough(words, writes)
            words, writes, pending_write = [], [], False
        elif _REDIRECT_RE.match(token):
            pending_write = True
        elif set(token) <= set("<>&"):
            continue
        elif pending_write:
            writes.append(token)
            pending_write = False
        else:
            words.append(token)
    if words:
        yield _rough(words, writes)


def _rough(words: list[str], writes: list[str]) -> Segment:
    return Segment(tuple(words), tuple(writes), tuple(words), (False,) * len(words), parsed=False)


# -- wrappers and small predicates (programs.py uses them too) ------------------------------

WRAPPERS = frozenset({"sudo", "nohup", "time", "command", "exec", "builtin", "stdbuf"})
INTERPRETERS = re.compile(r"^(python[0-9.]*|pypy[0-9.]*)$")
RUNNERS = {"uv": ("run",), "poetry": ("run",), "pipenv": ("run",), "pdm": ("run",),
            "hatch": ("run",), "bundle": ("exec",), "npm": ("exec",), "rye": ("run",)}  # fmt: skip


def unwrap(words: list[str]) -> list[str]:
    """The command a wrapper runs: `sudo x`, `timeout 5 x`, `env A=1 x`, `uv run x`, `npx x`."""
    for _ in range(8):
        if not words:
            return words
        head = os.path.basename(words[0])
        if head in WRAPPERS or head == "env":
            words = drop_options(words[1:], valued=("-u", "--unset", "-C", "--chdir"))
            while words and "=" in words[0]:
                words = words[1:]
        elif head in ("timeout", "nice", "ionice", "xargs"):
            valued = ("-s", "--signal", "-k", "--kill-after", "-n", "-c", "-I", "-L", "-P")
            words = drop_options(words[1:], valued=valued)
            if head == "timeout" and words and is_duration(words[0]):
                words = words[1:]
        elif head in ("npx", "bunx", "pnpx"):
            words = drop_options(words[1:], valued=("-p", "--package"))
        elif head in RUNNERS and len(words) > 1 and words[1] in RUNNERS[head]:
            words = drop_options(words[2:], valued=("--with", "--python", "-p", "--env-file"))
        else:
            return words
    return words


def drop_options(words: list[str], *, valued: tuple[str, ...]) -> list[str]:
    while words and words[0].startswith("-") and words[0] != "-":
        words = words[2:] if words[0] in valued else words[1:]
    return words


def is_null_device(target: str) -> bool:
    return target in ("/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty")


_DURATION_RE = re.compile(r"^\d+(\.\d+)?[smhd]?$")


def is_duration(word: str) -> bool:
    return bool(_DURATION_RE.match(word))


# -- the files a command names ----------------------------------------------------------------

_KNOWN_FILES = frozenset(
    {
        "Makefile", "makefile", "GNUmakefile", "Dockerfile", "Containerfile", "Procfile",
        "Gemfile", "Rakefile", "Justfile", "justfile", "Vagrantfile", "Jenkinsfile", "LICENSE",
        "README", "CODEOWNERS", "Pipfile", "Brewfile",
    }
)  # fmt: skip
# Programs whose first positional word is a pattern or a script, not a file.
_PATTERN_FIRST = frozenset(
    {"grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "jq", "yq",
     "perl"}
)  # fmt: skip
_PATTERN_OPTIONS = frozenset({"-e", "--regexp", "-f", "--file", "--expression", "-E"})
# Programs whose first positional word is a subcommand.
_WITH_SUBCOMMAND = frozenset(
    {"git", "npm", "yarn", "pnpm", "cargo", "go", "docker", "podman", "kubectl", "pip", "pip3",
     "uv", "poetry", "gh", "helm", "terraform", "brew", "apt", "apt-get", "dotnet", "mix",
     "make", "systemctl", "conda", "rustup", "bundle", "gem"}
)  # fmt: skip


def named_paths(command: str, cwd: str) -> tuple[str, ...]:
    """The files `command` may read or write, absolute; see the module docstring."""
    found: list[str] = []
    base = cwd
    for segment in segments(command):
        if segment.words[:1] == ("cd",) and len(segment.words) == 2:
            base = _absolute(segment.words[1], base)
            continue
        for word in (*_path_words(segment), *segment.writes):
            if _looks_like_path(word) and not is_null_device(word):
                found.append(_absolute(word, base))
            if len(found) >= MAX_NAMED_PATHS:
                return tuple(dict.fromkeys(found))
    return tuple(dict.fromkeys(found))


def _path_words(segment: Segment) -> Iterator[str]:
    words = list(segment.words)
    while words and "=" in words[0]:
        words.pop(0)
    words = unwrap(words)
    if not words:
        return
    program = os.path.basename(words[0])
    rest = words[1:]
    skip_positional = 0
    if program in _WITH_SUBCOMMAND:
        skip_positional = 1
    if program in _PATTERN_FIRST and not any(w in _PATTERN_OPTIONS for w in rest):
        skip_positional = 1
    if INTERPRETERS.match(program) and rest[:1] == ["-m"]:
        rest, skip_positional = rest[2:], 0
    after_pattern_option = False
    for word in rest:
        if after_pattern_option:
            after_pattern_option = False
            continue
        if word in _PATTERN_OPTIONS and program in _PATTERN_FIRST:
            after_pattern_option = True
            continue
        if word.startswith("-"):
            continue
        if "::" in word:  # a pytest node id: tests/test_a.py::test_x
            word = word.split("::", 1)[0]
        if skip_positional:
            skip_positional -= 1
            continue
        yield word


def _looks_like_path(word: str) -> bool:
    if not word or len(word) > 4096 or "\0" in word or "://" in word or "=" in word:
        return False
    if word.strip("./~") == "" or word.strip("0123456789.") == "":
        return False
    if any(c in word for c in "*?[]$`{}<>|;&\n"):
        return False
    return "/" in word or "." in word or word in _KNOWN_FILES


def _absolute(word: str, base: str) -> str:
    return os.path.normpath(os.path.join(base, os.path.expanduser(word)))
