"""A call's key, pinned spelling by spelling: which differently spelt calls the sentinel takes
for the same call (same key) and which it keeps apart. A loop that only changes how long it
waits must share a key; a retry that changes what it does must not."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runtime.guard.calls import call_key, canonical_arguments, normalise_command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # Spelling: words joined by one space, quoting made canonical, `;` between commands.
        ('echo  "a"   b', "echo a b"),
        ("echo 'two words'", "echo 'two words'"),
        ("true && false || ls", "true ; false ; ls"),
        ("  ls  ", "ls"),
        # Runs of options are sorted; positional words and the program stay put.
        ("ls -b -a", "ls -a -b"),
        ("ls -b x -a -c", "ls -b x -a -c"),
        ("ls -c x -b -a", "ls -c x -a -b"),
        ("pytest -x -q tests/", "pytest -q -x tests/"),
        ("git commit -m msg -a", "git commit -m msg -a"),
        ("git log -z -a", "git log -a -z"),
        # `-` and `--` are no options; nothing moves across `--`.
        ("cat -b - -a", "cat -b - -a"),
        ("ls -b -- -z -a", "ls -b -- -z -a"),
        ("ls -c -b -- -z -a", "ls -b -c -- -z -a"),
        ("ls --", "ls --"),
        # A quoted word is no option, so it does not move.
        ("grep -v '-b' -a", "grep -v -b -a"),
        # Programs whose option order is meaning keep it (by name, any directory).
        ("find . -type f -name x", "find . -type f -name x"),
        ("/usr/bin/find . -type f -name x", "/usr/bin/find . -type f -name x"),
        ("ffmpeg -y -i a", "ffmpeg -y -i a"),
        ("java -Xmx1g -cp x", "java -Xmx1g -cp x"),
        ("iptables -t nat -A x", "iptables -t nat -A x"),
        ("convert -resize 1 -b", "convert -resize 1 -b"),
        ("magick -z -a", "magick -z -a"),
        ("sox -z -a", "sox -z -a"),
        # Waits: `sleep N` (every duration), `timeout [opts] N` (the first), `watch -n N`.
        ("sleep 5", "sleep <n>"),
        ("sleep 1 2.5 3m", "sleep <n> <n> <n>"),
        ("sleep x", "sleep x"),
        ("/bin/sleep 2", "/bin/sleep <n>"),
        ("timeout 30 pytest -x -q", "timeout <n> pytest -q -x"),
        ("timeout -s KILL 30 make", "timeout -s KILL <n> make"),
        ("timeout 5 sleep 7", "timeout <n> sleep 7"),
        ("timeout make", "timeout make"),
        ("watch -n 5 ls", "watch -n <n> ls"),
        ("watch --interval 5 ls", "watch --interval <n> ls"),
        ("watch -d 5 ls", "watch -d 5 ls"),
        ("watch -n .5 ls", "watch -n <n> ls"),  # any value of watch's interval
        ("watch --interval .5 ls", "watch --interval <n> ls"),
        ("x --interval .5 ls", "x --interval .5 ls"),
        ("echo -n 3", "echo -n 3"),
        # Wait-like options: their value, after a space or an `=`.
        ("curl --max-time 10 http://x", "curl --max-time <n> http://x"),
        ("curl --max-time=10 http://x", "curl --max-time=<n> http://x"),
        ("x --timeout=5 --wait 3", "x --timeout=<n> --wait <n>"),
        ("x --retry-delay 2s y", "x --retry-delay <n> y"),
        ("x --poll-interval 1.5 y", "x --poll-interval <n> y"),
        ("x -wait 1h y", "x -wait <n> y"),
        ("x --backoff=3 y", "x --backoff=<n> y"),
        ("kubectl logs --since=2024-01-01T10:00:00Z pod", "kubectl logs --since=<n> pod"),
        ("git log --since 2024-01-01 x", "git log --since <n> x"),
        # A wait option's value must look like a wait; a quoted `--timeout=5` is a value.
        ("x --timeout foo", "x --timeout foo"),
        ("x --timeout 5x", "x --timeout 5x"),
        ('echo "--timeout=5"', "echo --timeout=5"),
        ("x --name=5", "x --name=5"),
        ("x --timeout=a=b", "x --timeout=<n>"),  # the option is the text before the first `=`
        # Date-times anywhere, and `since=`-style query values.
        ("echo 2024-01-02T03:04:05Z", "echo <time>"),
        ("curl 'http://a?since=123&x=1'", "curl 'http://a?since=<time>&x=1'"),
        ("curl 'http://a?before=9&ts=1'", "curl 'http://a?before=<time>&ts=<time>'"),
        ("curl 'http://a?id=9'", "curl 'http://a?id=9'"),
        # Assignments in front and redirections stay with their command.
        ("FOO=1 make -j 4 > out.txt", "FOO=1 make -j 4 >out.txt"),
        # A command of no words at all (an assignment, a redirection) is still spelt.
        ("FOO=1", "FOO=1"),
        ("> f", ">f"),
    ],
)
def test_a_parsed_command_is_respelt(command: str, expected: str) -> None:
    assert normalise_command(command) == expected


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        # Outside the lexer's subset: kept as written, only waits and times substituted.
        ("cat $(ls) ; sleep 3", "cat $(ls) ; sleep <n>"),
        ("cat $(ls)  ;  sleep   3", "cat $(ls)  ;  sleep   <n>"),
        ("  echo $(date) timeout 4.5m  ", "echo $(date) timeout <n>"),
        ("echo $(x) sleep 3s", "echo $(x) sleep <n>"),
        ("echo $(x) sleep 3x", "echo $(x) sleep 3x"),
        ("echo $(x) sleepy 3", "echo $(x) sleepy 3"),
        ("echo $(x) --timeout 5 --wait=3s", "echo $(x) --timeout <n> --wait=<n>"),
        ("echo $(x) --TIMEOUT 5", "echo $(x) --TIMEOUT <n>"),
        ("echo $(x) --max-time  7", "echo $(x) --max-time  <n>"),
        ("echo $(x) --poll=abc", "echo $(x) --poll=<n>"),
        ("echo $(x) --timeout abc", "echo $(x) --timeout abc"),
        ("echo $(x) --name 5", "echo $(x) --name 5"),
        ("echo $(x) 2024-01-02 03:04", "echo $(x) <time>"),
        ("echo $(x) 'http://a?until=5'", "echo $(x) 'http://a?until=<time>'"),
    ],
)
def test_an_unparsed_command_keeps_its_spelling(command: str, expected: str) -> None:
    assert normalise_command(command) == expected


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ({"command": "sleep 5"}, {"command": "sleep 60"}),
        ({"command": "pytest -x -q"}, {"command": "pytest  -q -x", "description": "tests"}),
        ({"command": "ls", "timeout": 1000}, {"command": "ls", "timeout": 5000}),
        ({"command": "ls", "description": "a"}, {"command": "ls", "description": "b"}),
    ],
)
def test_bash_calls_that_differ_only_in_waits_and_spelling_share_a_key(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    assert call_key("Bash", first) == call_key("Bash", second)


def test_a_bash_key_is_the_normalised_command_and_its_other_inputs() -> None:
    key = call_key(
        "Bash",
        {"command": "sleep  5", "description": "d", "timeout": 9, "run_in_background": True},
    )
    assert json.loads(key) == {"command": "sleep <n>", "timeout": "<n>", "run_in_background": True}
    assert key == '{"command":"sleep <n>","run_in_background":true,"timeout":"<n>"}'


def test_a_bash_call_without_a_string_command_keeps_the_rest() -> None:
    assert call_key("Bash", {"command": 3, "description": "x"}) == "{}"
    assert call_key("Bash", {"description": "x", "sandbox": "2024-01-02 03:04"}) == (
        '{"sandbox":"<time>"}'
    )


@pytest.mark.parametrize("tool", ["Write", "Edit", "MultiEdit", "NotebookEdit"])
def test_file_writers_are_compared_exactly(tool: str) -> None:
    arguments = {"file_path": "a.py", "timeout": 5, "new_string": "  2024-01-02T03:04:05 x"}
    key = call_key(tool, arguments)
    assert key == ('{"file_path":"a.py","new_string":"  2024-01-02T03:04:05 x","timeout":5}')
    assert call_key(tool, {**arguments, "timeout": 6}) != key


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        # Wait-like keys (any case, anywhere in the name) whose value is a scalar.
        ({"timeout": 5}, {"timeout": "<n>"}),
        ({"Wait_ms": 1.5}, {"Wait_ms": "<n>"}),
        ({"sleep": "3s"}, {"sleep": "<n>"}),
        ({"interval": 2}, {"interval": "<n>"}),
        ({"retry_delay": 2}, {"retry_delay": "<n>"}),
        ({"seconds": 2}, {"seconds": "<n>"}),
        ({"since": "yesterday"}, {"since": "<n>"}),
        ({"until": 4}, {"until": "<n>"}),
        ({"poll_every": 4}, {"poll_every": "<n>"}),
        ({"backoff": 4}, {"backoff": "<n>"}),
        # A flag, a list or a mapping under a wait-like key is not a wait: it is walked.
        ({"wait": True}, {"wait": True}),
        ({"wait": None}, {"wait": None}),
        ({"timeout": [1, "2024-01-02 03:04"]}, {"timeout": [1, "<time>"]}),
        ({"timeouts": {"read": 5, "x": 1}}, {"timeouts": {"read": 5, "x": 1}}),
        ({"opts": {"delay": 5, "n": 1}}, {"opts": {"delay": "<n>", "n": 1}}),
        # Other keys keep their values; date-times in strings are masked at any depth.
        ({"count": 5, "flag": False}, {"count": 5, "flag": False}),
        ({"q": "after 2024-01-02T03:04:05.5+01:00"}, {"q": "after <time>"}),
        ({"q": ("a", "2024-01-02 03:04:05")}, {"q": ["a", "<time>"]}),
        ({"url": "http://x?since=2024&id=3"}, {"url": "http://x?since=<time>&id=3"}),
        ({1: "x"}, {"1": "x"}),
    ],
)
def test_other_tools_mask_waits_and_times(
    arguments: dict[Any, Any], expected: dict[str, Any]
) -> None:
    assert json.loads(call_key("mcp__x__fetch", arguments)) == expected


def test_a_key_is_compact_sorted_json_and_keeps_whitespace_in_values() -> None:
    assert canonical_arguments({"b": 1, "a": " x  y "}) == '{"a":" x  y ","b":1}'
    assert call_key("Read", {"file_path": "p", "limit": 3}) == '{"file_path":"p","limit":3}'
    assert call_key("Grep", {"pattern": "a  b"}) != call_key("Grep", {"pattern": "a b"})


def test_values_json_cannot_spell_are_keyed_by_their_text() -> None:
    class Odd:
        def __str__(self) -> str:
            return "odd"

    assert canonical_arguments({"x": Odd()}) == '{"x":"odd"}'
