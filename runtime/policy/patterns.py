"""Allow-patterns: full-match regexes, refused when loaded if they could backtrack badly.

A pattern must describe the whole target (`re.fullmatch`), so `git status` never allows
`git status; rm -rf ~`. An "always allow" answer stores the exact target escaped, which is a
plain literal. Hand-written patterns are parsed with the standard library's own regex parser
and refused when their shape is known to backtrack catastrophically: a repeat inside a repeat
(`(a+)+`), a repeated alternation whose branches can start alike (`(a|ab)*`), back-references,
or more than a few open-ended wildcards. Targets longer than MAX_TARGET_LENGTH are never
matched (they are asked about), which bounds the polynomial cases that remain.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.errors import PolicyError

with warnings.catch_warnings():
    # sre_parse is the documented-deprecated alias of re._parser, which has no type stubs.
    warnings.simplefilter("ignore", DeprecationWarning)
    import sre_constants as c
    import sre_parse

MAX_TARGET_LENGTH = 4_096
# Room for an escaped target of the longest length that can match (escaping at most doubles
# it), so a remembered rule always loads again.
MAX_PATTERN_LENGTH = 2 * MAX_TARGET_LENGTH + 100
# Variable repeats that can trade characters with each other (`.*.*`, `a*a*`) make the worst
# case a polynomial in the target length whose degree is the length of such a chain. Two is
# fast for 4 KiB targets (milliseconds); three already takes seconds.
MAX_AMBIGUOUS_CHAIN = 2

_REPEATS = (c.MAX_REPEAT, c.MIN_REPEAT)
_POSSESSIVE = (c.POSSESSIVE_REPEAT,)


@dataclass(frozen=True)
class SafePattern:
    """A compiled allow-pattern that passed the backtracking check."""

    source: str
    regex: re.Pattern[str]

    def matches(self, target: str) -> bool:
        return len(target) <= MAX_TARGET_LENGTH and self.regex.fullmatch(target) is not None


def exact_pattern(target: str) -> str:
    """The pattern that an "always allow" stores: this target and nothing else."""
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
        regex = re.compile(source)
    except re.error as exc:
        raise PolicyError(f"not a valid regex ({exc}): {source!r}", path=path, field=field) from exc
    risk = backtracking_risk(source)
    if risk:
        raise PolicyError(
            f"pattern {source!r} refused: {risk}; rewrite it without that construct",
            path=path,
            field=field,
        )
    return SafePattern(source=source, regex=regex)


def backtracking_risk(source: str) -> str | None:
    """Why `source` could backtrack catastrophically, or None when its shape is safe."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            parsed = sre_parse.parse(source)
    except re.error as exc:
        return f"not a valid regex ({exc})"
    try:
        _Scan().items(parsed, in_repeat=False)
    except _Risky as exc:
        return str(exc)
    if _ambiguous_chain(parsed) > MAX_AMBIGUOUS_CHAIN:
        return f"more than {MAX_AMBIGUOUS_CHAIN} wildcards that can match the same text in a row"
    return None


class _Risky(Exception):
    """Internal: carries the reason out of the recursive scan."""


class _Scan:
    def items(self, items: Any, *, in_repeat: bool) -> None:
        for op, av in items:
            if op in _REPEATS:
                self.repeat(av, in_repeat=in_repeat)
            elif op in _POSSESSIVE:
                # A possessive repeat never gives back what it matched: no backtracking into it.
                self.items(av[2], in_repeat=False)
            elif op is c.SUBPATTERN:
                self.items(av[3], in_repeat=in_repeat)
            elif op is c.ATOMIC_GROUP:
                self.items(av, in_repeat=False)
            elif op is c.BRANCH:
                for branch in av[1]:
                    self.items(branch, in_repeat=in_repeat)
            elif op in (c.ASSERT, c.ASSERT_NOT):
                self.items(av[1], in_repeat=in_repeat)
            elif op in (c.GROUPREF, c.GROUPREF_EXISTS):
                raise _Risky("back-references can take exponential time")

    def repeat(self, av: Any, *, in_repeat: bool) -> None:
        _low, high, body = av
        many = high > 1
        if many and in_repeat:
            raise _Risky("a repeat nested inside another repeat, like (a+)+")
        if many and _has_overlapping_branch(body):
            raise _Risky("a repeated alternation whose branches can start with the same text")
        self.items(body, in_repeat=in_repeat or many)


def _has_overlapping_branch(body: Any) -> bool:
    """True when an alternation directly under a repeat has branches that may start alike.

    Only branches that each start with a distinct literal character are accepted: anything
    wider (a class, an optional first item, a nested group) is treated as overlapping.
    """
    for op, av in body:
        if op is c.SUBPATTERN and _has_overlapping_branch(av[3]):
            return True
        if op is c.BRANCH:
            firsts: list[int] = []
            for branch in av[1]:
                if len(branch) == 0 or branch[0][0] is not c.LITERAL:
                    return True
                firsts.append(branch[0][1])
            if len(set(firsts)) != len(firsts):
                return True
        # sre_parse folds `a|b` into IN [a, b] and `ab|ac` into `a(?:b|c)`: both are safe.
    return False


# Character sets are approximated over Latin-1: enough to tell `\S` from a space or `[^/]`
# from a slash, which is what decides whether two wildcards can trade characters.
_UNIVERSE = frozenset(range(256))


def _ambiguous_chain(items: Any) -> int:
    """The longest run of variable repeats that can hand characters to one another.

    A mandatory item that none of the run's repeats can match (the space in `\\S+ \\S+`) pins
    the boundary and starts a new run; optional content never pins anything.
    """
    longest = 0
    chain = 0
    union: frozenset[int] = frozenset()
    for kind, chars in _events(items, optional=False):
        if kind == "repeat":
            if chain and chars & union:
                chain += 1
                union |= chars
            else:
                chain, union = 1, chars
            longest = max(longest, chain)
        elif kind == "fixed" and not chars & union:
            chain, union = 0, frozenset()
    return longest


def _events(items: Any, *, optional: bool) -> Any:
    for op, av in items:
        if op in _REPEATS or op in _POSSESSIVE:
            low, high, body = av
            if low != high and high > 1 and op not in _POSSESSIVE:
                yield "repeat", _chars_of(body)
            elif low == 0:
                yield from _events(body, optional=True)
            else:
                yield from _events(body, optional=optional)
        elif op is c.SUBPATTERN:
            yield from _events(av[3], optional=optional)
        elif op is c.BRANCH:
            for branch in av[1]:
                yield from _events(branch, optional=True)
        elif op in (c.LITERAL, c.NOT_LITERAL, c.ANY, c.IN, c.CATEGORY):
            yield ("soft" if optional else "fixed"), _chars_of([(op, av)])


def _chars_of(items: Any) -> frozenset[int]:
    """The Latin-1 characters that the first item of `items` can match (all, if unknown)."""
    if len(items) != 1:
        return _UNIVERSE
    op, av = items[0]
    if op is c.LITERAL:
        return frozenset({av})
    if op is c.NOT_LITERAL:
        return _UNIVERSE - {av}
    if op is c.ANY:
        return _UNIVERSE - {ord("\n")}
    if op is c.CATEGORY:
        return frozenset(x for x in _UNIVERSE if _in_category(av, chr(x)))
    if op is c.IN:
        return frozenset(x for x in _UNIVERSE if _in_class(av, chr(x)))
    return _UNIVERSE


def _in_class(entries: Any, char: str) -> bool:
    negate = False
    hit = False
    for kind, av in entries:
        if kind is c.NEGATE:
            negate = True
        elif kind is c.LITERAL:
            hit = hit or ord(char) == av
        elif kind in (c.RANGE, c.RANGE_UNI_IGNORE):
            hit = hit or av[0] <= ord(char) <= av[1]
        elif kind is c.CATEGORY:
            hit = hit or _in_category(av, char)
        else:
            hit = True
    return hit != negate


def _in_category(category: Any, char: str) -> bool:
    tests = {
        c.CATEGORY_DIGIT: char.isdigit(),
        c.CATEGORY_SPACE: char.isspace(),
        c.CATEGORY_WORD: char.isalnum() or char == "_",
    }
    for positive, negative in (
        (c.CATEGORY_DIGIT, c.CATEGORY_NOT_DIGIT),
        (c.CATEGORY_SPACE, c.CATEGORY_NOT_SPACE),
        (c.CATEGORY_WORD, c.CATEGORY_NOT_WORD),
    ):
        if category is positive:
            return tests[positive]
        if category is negative:
            return not tests[positive]
    return True
