"""Allow-patterns: full match, exact remembering, and refusing shapes that backtrack badly."""

from __future__ import annotations

import time

import pytest

from runtime.errors import PolicyError
from runtime.policy.patterns import (
    MAX_TARGET_LENGTH,
    backtracking_risk,
    compile_pattern,
    exact_pattern,
)

CATASTROPHIC = [
    "(a+)+",
    "(a*)*b",
    "(?:x+x+)+y",
    r"(\w+\s?)+$",
    "(a|aa)+",
    "(a|a)*",
    "(.*a){3,}",
    r"(a)\1+",
    "(?P<x>a)(?P=x)",
    ".*.*.*x",
    "a*a*a*b",
    ".{0,999}.{0,999}.{0,999}!",
    "git .* .* .*",
]

SAFE = [
    "git status",
    "^git status$",
    r"git\ diff( .*)?",
    "ls( .*)?",
    r"\S+ \S+ \S+ \S+",
    "[^/]*/[^/]*/[^/]*",
    "(foo|bar)+",
    "(?>a+)+",
    "a++b",
    r"\d+\.\d+\.\d+",
    "git (add|commit) .*",
]


@pytest.mark.parametrize("source", CATASTROPHIC)
def test_catastrophic_patterns_are_refused(source: str) -> None:
    assert backtracking_risk(source) is not None
    with pytest.raises(PolicyError) as info:
        compile_pattern(source, field="Bash[0]")
    assert info.value.field == "Bash[0]"


@pytest.mark.parametrize("source", SAFE)
def test_ordinary_patterns_are_accepted(source: str) -> None:
    assert backtracking_risk(source) is None
    compile_pattern(source)


@pytest.mark.parametrize("source", SAFE)
def test_accepted_patterns_stay_fast_on_hostile_targets(source: str) -> None:
    pattern = compile_pattern(source)
    started = time.perf_counter()
    for filler in ("a", " ", "/", "1.", "ab"):
        pattern.matches(filler * (MAX_TARGET_LENGTH // len(filler)) + "\x00")
    assert time.perf_counter() - started < 1.0


@pytest.mark.parametrize("source", ["", "(", "[a-", "a" * 9_000])
def test_invalid_or_oversized_patterns_are_refused(source: str) -> None:
    with pytest.raises(PolicyError):
        compile_pattern(source)


def test_matching_is_full_not_search() -> None:
    pattern = compile_pattern("git status")
    assert pattern.matches("git status")
    assert not pattern.matches("git status; rm -rf ~")
    assert not pattern.matches("echo; git status")
    assert not pattern.matches("git status\n")
    assert compile_pattern("^git status$").matches("git status")


def test_exact_pattern_matches_only_its_target() -> None:
    target = "rm -rf ./build/*.o (old) [x]"
    pattern = compile_pattern(exact_pattern(target))
    assert pattern.matches(target)
    assert not pattern.matches(target + " ")
    assert not pattern.matches("rm -rf ./build/a.o (old) [x]")


def test_the_longest_matchable_target_can_be_remembered() -> None:
    target = "echo " + "$" * (MAX_TARGET_LENGTH - 5)
    assert compile_pattern(exact_pattern(target)).matches(target)


def test_overlong_targets_never_match() -> None:
    pattern = compile_pattern("echo .*")
    assert not pattern.matches("echo " + "x" * MAX_TARGET_LENGTH)
