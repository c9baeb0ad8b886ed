"""The caps that bound one decision's work, checked before any parsing.

A decision runs for every tool call, and its cost grows with the input: the shell lexer is
linear, but every argument is resolved against the filesystem once per directory the command
`cd`s into, which made a 100 kB command cost tens of seconds. The approver runs decisions in
a worker thread so the host's event loop never waits, but a panel still waits for its own
answer, so the work is capped too. An input beyond a cap is asked about at once, with a reason
that says it was too big to check: never allowed, since nothing about it was checked.
"""

from __future__ import annotations

import itertools
import re

# A Bash command longer than this is not parsed. 16 KiB is far beyond any command typed or
# generated for a real task (scripts go in files), and the same cap as runtime/guard's.
MAX_COMMAND_LENGTH = 16 * 1024
# Nor one with more words than this (counted roughly, before parsing). Each word may be a
# path, resolved once per working directory: 1,000 of them keep a decision well under a
# second even on a busy machine (bench/policy_decide.py prints the figures).
MAX_COMMAND_WORDS = 1_000
# Paths resolved for one command (arguments and redirections, once per working directory).
# Each costs a few system calls, about a tenth of a millisecond.
MAX_PATH_CHECKS = 2_000
# `cd` segments the policy follows in one command; every later argument is checked against
# each directory, so the cost is words x directories. More than this asks.
MAX_DIRECTORY_CHANGES = 3
# A path longer than PATH_MAX (4096 on Linux) cannot be opened anyway; one that long is asked
# about rather than resolved. The same cap applies to a Glob pattern.
MAX_PATH_LENGTH = 4_096
# Strings in an MCP or unknown tool's input that look like paths and are checked against the
# policy's own files; an input with more asks.
MAX_NAMED_PATHS = 256
# Nesting depth of an MCP or unknown tool's input; deeper input asks (and is not walked).
MAX_INPUT_DEPTH = 32

# A rough word: a run of characters that are not blanks or shell operators. Quoted text counts
# as several words, which errs on the side of asking.
_ROUGH_WORD = re.compile(r"[^\s;&|<>]+")


def command_too_big(command: str) -> str | None:
    """Why `command` is too big to check, or None. Linear in the length; parses nothing."""
    if len(command) > MAX_COMMAND_LENGTH:
        return (
            f"the command is too long to check ({len(command)} characters; "
            f"the limit is {MAX_COMMAND_LENGTH})"
        )
    words = sum(1 for _ in itertools.islice(_ROUGH_WORD.finditer(command), MAX_COMMAND_WORDS + 1))
    if words > MAX_COMMAND_WORDS:
        return f"the command is too long to check (more than {MAX_COMMAND_WORDS} words)"
    return None
