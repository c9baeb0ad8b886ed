"""Allow-patterns: full-match regexes, evaluated by RE2 so that no pattern can be slow.

A pattern must describe the whole target (full match), so `git status` never allows
`git status; rm -rf ~`. An "always allow" answer stores the exact target escaped, which is a
plain literal. Patterns are RE2 syntax (google-re2), which runs in time linear in the target
whatever the pattern: `(a+)+` or `(a?){26}a{26}` is no slower than `git status`. What RE2
cannot run in linear time it does not offer: back-references and lookaround are refused when
the pattern is loaded, with the file and field named. Targets longer than MAX_TARGET_LENGTH
are never matched (they are asked about).

Differences from Python's `re` a hand-written pattern may meet: `\\w`, `\\d` and `\\s` are
ASCII only, and `(?P=name)`, `(?=...)`, `(?!...)`, `(?<=...)` and `\\1` do not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import re2

from runtime.errors import PolicyError

MAX_TARGET_LENGTH = 4_096
# Room for an escaped target of the longest length that can match (escaping at most doubles
# it), so a remembered rule always loads again.
MAX_PATTERN_LENGTH = 2 * MAX_TARGET_LENGTH + 100
# RE2's memory budget for one compiled pattern; a pattern that needs more is refused at load.
MAX_PATTERN_MEMORY = 8 << 20


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # the error is ours to report (a PolicyError), not stderr's
    options.max_mem = MAX_PATTERN_MEMORY
    return options


@dataclass(frozen=True)
class SafePattern:
    """A compiled allow-pattern (RE2: linear time in the target)."""

    source: str
    regex: Any  # re2's compiled pattern

    def matches(self, target: str) -> bool:
        return len(target) <= MAX_TARGET_LENGTH and self.regex.fullmatch(target) is not None


def exact_pattern(target: str) -> str:
    """The pattern that an "always allow" stores: this target and nothing else. (Python's
    escaping; every escape it writes is one RE2 reads the same way.)"""
    return re.escape(target)


def compile_pattern(
    source: str, *, path: Path | None = None, field: str | None = None
) -> SafePattern:
    """Compile `source` or raise PolicyError naming the file and field it came from."""
    if not source:
        raise PolicyError("empty pattern; remove it or write it out", path=path, field=field)
    if len(source) > MAX_PATTERN_LENGTH:
        raise PolicyError(
            f"pattern longer than {MAX_PATTERN_LENGTH} characters", path=path, field=field
        )
    try:
        regex = re2.compile(source, options=_options())
    except re2.error as exc:
        raise PolicyError(
            f"not a pattern RE2 can run ({_reason(exc)}): {source!r}; back-references and "
            "lookaround are not supported",
            path=path,
            field=field,
        ) from None
    return SafePattern(source=source, regex=regex)


def _reason(exc: Exception) -> str:
    """RE2's own words for why a pattern does not compile (it gives them as bytes)."""
    first = exc.args[0] if exc.args else ""
    return first.decode(errors="replace") if isinstance(first, bytes) else str(first)
