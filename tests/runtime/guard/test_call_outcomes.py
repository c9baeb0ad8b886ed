"""A call's result as the sentinel compares it: what is masked because it changes from run to
run, when two results are the same outcome or the same observation, and which lines of a
failure make its error signature (two failures are the same error only when they share one)."""

from __future__ import annotations

import pytest

from runtime.guard.calls import (
    OBSERVATION_CHARS,
    OUTPUT_LIMIT,
    SIGNATURE_CHARS,
    as_read,
    canonical_error,
    error_phrases,
    error_signature,
    hashed,
    normalise_output,
    observation,
    outcome_digest,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\x1b[31mred\x1b[0m \x1b[?25lx", "red x"),
        # Date-times and clock times.
        ("at 2024-01-02T03:04:05.123+02:00 x", "at <time> x"),
        ("at 2024-01-02 03:04 x", "at <time> x"),
        ("at 2024-01-02T03%3A04%3A05Z x", "at <time> x"),
        ("12:34:56.789 ok", "<time> ok"),
        ("1:02:03 ok", "<time> ok"),
        ("12:34 ok", "12:34 ok"),
        # Durations.
        ("took 0.42s", "took <dur>"),
        ("12ms 5us 7ns 3µs", "<dur> <dur> <dur> <dur>"),
        ("1m3s 2m0.5s", "<dur> <dur>"),
        ("3 minutes ago", "<dur> ago"),
        ("5 days 1 day 2 hrs 1 hour 4h 5 mins 2 sec 3 secs 1 second", " ".join(["<dur>"] * 9)),
        ("2 Seconds", "<dur>"),
        ("5 apples 3x", "5 apples 3x"),
        # Addresses, UUIDs and object ids.
        ("ptr 0xdeadbeef", "ptr 0x<addr>"),
        ("0xabc", "0xabc"),
        ("u 123e4567-E89B-12d3-a456-426614174000", "u <uuid>"),
        ("commit abc1234 done", "commit <id> done"),
        ("deadbeefcafe1", "<id>"),
        ("abcdefa 1234567 abc123", "abcdefa 1234567 abc123"),
        ("a" * 39 + "1", "<id>"),
        ("a" * 40 + "1", "a" * 40 + "1"),
        # `id=`-style values, process ids, attempt counters.
        ("id=foo-1.2 x", "id=<id> x"),
        ("ID: 77 Id:x", "ID: <id> Id:<id>"),
        ("kid=3", "kid=3"),
        ("pid 1234", "pid <n>"),
        ("PID=55 process: 7 pid#8", "PID=<n> process: <n> pid#<n>"),
        (
            "attempt 3 retry #2 Try 4 round 5 iteration 9 poll 3",
            ("attempt <n> retry #<n> Try <n> round <n> iteration <n> poll <n>"),
        ),
        # Temporary paths end at a space, quote, bracket or punctuation.
        ("/tmp/pytest-1/x.py:3", "<tmp>:3"),
        ("/private/var/folders/ab/c d", "<tmp> d"),
        ("/var/tmp/x,y '/tmp/a'", "<tmp>,y '<tmp>'"),
        ("(/tmp/a) /tmp/b;c", "(<tmp>) <tmp>;c"),
        ("/home/tmp/x", "/home<tmp>"),
        # `./` in front of a path, after a space, `:`, `(` or `=`; not `../`.
        ("./src/x.py see (./a) x=./b f:./c", "src/x.py see (a) x=b f:c"),
        ("../a .hidden ./ ./.x", "../a .hidden ./ ./.x"),
        # Trailing whitespace on each line.
        ("trailing   \nline2  \r\n", "trailing\nline2"),
    ],
)
def test_what_changes_from_run_to_run_is_masked(text: str, expected: str) -> None:
    assert normalise_output(text) == expected


def test_a_long_result_keeps_its_head_and_tail() -> None:
    half = OUTPUT_LIMIT // 2
    text = "h" * half + "MIDDLE" + "t" * half
    assert normalise_output(text) == "h" * half + "\n<...>\n" + "t" * half
    at_limit = "x" * OUTPUT_LIMIT
    assert normalise_output(at_limit) == at_limit
    one_over = "a" + "x" * OUTPUT_LIMIT
    assert normalise_output(one_over) == "a" + "x" * (half - 1) + "\n<...>\n" + "x" * half
    assert OUTPUT_LIMIT == 65536


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("Read", "     1\tfirst\n    12\tsecond", "first\nsecond"),
        ("Read", "1\u2192first\n2\u2192second", "first\nsecond"),
        ("Read", "x 1\tkept", "x 1\tkept"),
        ("Grep", "     1\tfirst", "     1\tfirst"),
    ],
)
def test_a_read_loses_its_line_numbers(name: str, content: str, expected: str) -> None:
    assert as_read(name, content) == expected


def test_an_outcome_is_pass_or_fail_with_the_normalised_result() -> None:
    first = outcome_digest(False, "done in 0.4s at 12:00:01")
    assert first == outcome_digest(False, "done in 3s at 13:10:59  ")
    assert first != outcome_digest(True, "done in 0.4s at 12:00:01")
    assert first != outcome_digest(False, "done twice")
    assert len(first) == 32
    assert outcome_digest(True, "x") == hashed("fail", "x")
    assert outcome_digest(False, "x") == hashed("pass", "x")


def test_undecodable_bytes_kept_as_surrogates_still_hash() -> None:
    """A result read with `surrogateescape` holds lone surrogates; hashing must not fail."""
    digest = outcome_digest(True, "bad byte \udcff here")
    assert digest == hashed("fail", "bad byte \udcff here")
    assert len(digest) == 32 and digest != outcome_digest(True, "bad byte  here")
    assert observation("x" * 40 + "\udcff")[1] == 41


def test_an_observation_is_the_content_whatever_the_call() -> None:
    digest, length = observation("  found 3 files under /tmp/abc at 12:00:01  \n")
    assert (digest, length) == observation("found 3 files under /tmp/xyz at 09:30:00")
    assert digest == hashed("seen", "found 3 files under <tmp> at <time>")
    assert length == len("found 3 files under <tmp> at <time>")
    assert digest != outcome_digest(False, "found 3 files under <tmp> at <time>")


@pytest.mark.parametrize(
    "content",
    [
        "",
        "  \n \x1b[0m ",
        "(Bash completed with no output)",
        "No matches found",
        "No files found",
        "  (no content)\n",
    ],
)
def test_a_result_that_says_nothing_is_no_observation(content: str) -> None:
    assert observation(content) == (None, 0)


def test_only_long_results_are_compared_across_calls() -> None:
    assert OBSERVATION_CHARS == 40


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("all good\n", set()),
        ("", set()),
        ("Traceback", set()),
        # Shell prefixes, exit codes and summaries are left out.
        ("bash: line 1: foo: command not found", {"command not found"}),
        ("/bin/sh: 3: foo: command not found", {"command not found"}),
        ("/usr/bin/bash: line 2: x: command not found", {"command not found"}),
        ("zsh: permission denied: /etc/x", {"permission denied /etc/x"}),
        ("dash: 1: error here", {"error here"}),
        ("sh: 4: error here", {"error here"}),
        ("sh:error here", {"sh:error here"}),
        ("Exit code 1\nexit status: 2\nEXIT CODE -1", set()),
        ("exit code 1 error", {"exit code <n> error"}),
        ("2 failed, 3 passed in 0.1s", set()),
        ("===== 1 failed in 2s =====", set()),
        ("== 3 errors in x", set()),
        ("1 error", set()),
        ("3 failures", {"<n> failures"}),
        ("3 tests failed", {"<n> tests failed"}),
        # Markers, program names, quotes, `./`, case and numbers.
        ("E   AssertionError: 3 != 4", {"<n> != <n>"}),
        (">>> Error: x", {"x"}),
        ('error: "x" missing', {"x missing"}),
        ("[ERROR] Failed to build", {"failed to build"}),
        ("Error: file ./src/a.py not found at line 12", {"file src/a.py not found at line <n>"}),
        ("mypy: src/a.py:3: error: bad", {"src/a.py:<n>: error: bad"}),
        # Operating-system errors: the phrase and the paths the line names.
        ("cat x.txt: No such file or directory", {"no such file or directory x.txt"}),
        ("cat: ./x.txt: No such file or directory", {"no such file or directory"}),
        ("ls: cannot access foo: No such file or directory", {"no such file or directory"}),
        (
            "python: can't open file '/a/b.py': [Errno 2] No such file or directory",
            {"no such file or directory /a/b.py"},
        ),
        # One entry per distinct line; the lines in any order.
        ("Error: a\nerror: A\nsomething else\nfatal: b", {"a", "b"}),
        ("  \n\nwarning: unknown flag 7\n", {"unknown flag <n>"}),
    ],
)
def test_the_error_lines_of_a_failure_are_its_signature(content: str, expected: set[str]) -> None:
    assert error_signature(content) == expected


ERROR_WORDS = (
    "error", "exception", "fail", "fatal", "denied", "not found", "no such", "cannot", "can't",
    "could not", "unable", "refused", "timed out", "timeout", "invalid", "missing", "unknown",
    "not allowed", "forbidden", "panic", "abort",
)  # fmt: skip


def test_each_error_word_names_an_error() -> None:
    for word in ERROR_WORDS:
        assert error_signature(f"it said {word.upper()} 42 times") != frozenset(), word
    assert error_signature("it said nothing 42 times") == frozenset()


def test_a_signature_line_is_cut_to_its_first_characters() -> None:
    (line,) = error_signature("x" * 400 + " error")
    assert line == "x" * SIGNATURE_CHARS
    assert SIGNATURE_CHARS == 300


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Cargo: rustc: Error 12 in X", "error <n> in x"),
        ("a: b: c: error 3", "c: error <n>"),
        ("tool:x", "tool:x"),
        ("  ‘Quoted’ `back` 'single' \"double\"  ", "quoted back single double"),
        ("e   boom", "boom"),
        (">> boom", "boom"),
        ("[error] boom", "boom"),
        ("error:boom", "boom"),
        ("see ./a and (./b)", "see a and (b)"),
        ("git: fatal: Permission denied: ./a.b, /c:", "permission denied /c a.b"),
        ("x: FILE EXISTS y z.", "file exists z."),
        ("Address already in use .x", "address already in use"),
    ],
)
def test_an_error_line_is_made_canonical(line: str, expected: str) -> None:
    assert canonical_error(line) == expected


def test_the_os_error_phrases_come_from_equivalents() -> None:
    phrases = error_phrases()
    assert "no such file or directory" in phrases
    assert "address already in use" in phrases
    assert all(p == p.lower() for p in phrases)
