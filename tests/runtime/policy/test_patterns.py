"""Allow-patterns: full match, exact remembering, RE2 evaluation whatever the pattern."""

from __future__ import annotations

import pytest

from runtime.errors import PolicyError
from runtime.policy.patterns import MAX_TARGET_LENGTH, compile_pattern, exact_pattern

# Shapes that backtrack catastrophically on a backtracking engine (Python's `re` took 4.6 s
# on `^(a+)+$` and a 27-character command, checklist #14; 8.7 s on `(a?){26}a{26}`). RE2
# runs each in time linear in the target, so they load and are simply matched.
CATASTROPHIC_ELSEWHERE = [
    "(a+)+",
    "^(a+)+$",
    "(a*)*b",
    "(?:x+x+)+y",
    r"(\w+\s?)+$",
    "(a|aa)+",
    "(a|a)*",
    "(.*a){3,}",
    ".*.*.*x",
    "a*a*a*b",
    ".{0,999}.{0,999}.{0,999}!",
    "git .* .* .*",
    "(a?){26}a{26}",
]

SAFE = [
    "git status",
    "^git status$",
    r"git\ diff( .*)?",
    "ls( .*)?",
    r"\S+ \S+ \S+ \S+",
    "[^/]*/[^/]*/[^/]*",
    "(foo|bar)+",
    r"\d+\.\d+\.\d+",
    "git (add|commit) .*",
]

# What RE2 does not do (it would need backtracking): refused at load, naming the field.
NOT_RE2 = [r"(a)\1+", "(?P<x>a)(?P=x)", "a(?=b)", "a(?!b)", "(?<=a)b", "(?>a+)+", "a++b"]


@pytest.mark.parametrize("source", CATASTROPHIC_ELSEWHERE + SAFE)
def test_every_pattern_runs_on_re2(source: str) -> None:
    pattern = compile_pattern(source)
    assert type(pattern.regex).__module__.startswith("re2")  # linear time, by construction


def test_a_pattern_that_backtracks_elsewhere_matches_correctly_here() -> None:
    pattern = compile_pattern("(a?){26}a{26}")
    assert pattern.matches("a" * 26) and pattern.matches("a" * 52)
    assert not pattern.matches("a" * 25) and not pattern.matches("a" * 53)
    hostile = compile_pattern("^(a+)+$")
    assert not hostile.matches("a" * 26 + "!") and hostile.matches("a" * 27)


@pytest.mark.parametrize("source", NOT_RE2)
def test_what_re2_cannot_run_is_refused_naming_the_field(source: str) -> None:
    with pytest.raises(PolicyError) as info:
        compile_pattern(source, field="Bash[0]")
    assert info.value.field == "Bash[0]" and "RE2" in str(info.value)


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
