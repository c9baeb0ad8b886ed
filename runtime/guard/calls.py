"""What the sentinel sees in a tool call: its key, its effect, the digest of its result. Pure.

`call_key(name, input)` is the tool name and its canonical arguments: two calls with the same
key are the same call. Keys are sorted and the JSON is compact; whitespace inside values is
kept, so an Edit retried with corrected indentation is a different call. So that calls that
differ only in how long they wait or which time they name compare equal:

- a Bash command is parsed and respelt (commands.py): words joined by one
  space, quoting made canonical, simple commands joined by ` ; `; its `description` input
  is left out. `sleep N`, `timeout N`, `watch -n N` and the values of wait-like options
  (`--timeout`, `--wait`, `--interval`, `--delay`, `--since`, `--until`, `--poll...`,
  `--max-time`) become `<n>`; ISO-8601 date-times anywhere, and `since=`/`until=`-style
  query values, become `<time>`. Each run of consecutive option words is sorted
  (`pytest -x -q` is `pytest -q -x`): the program, its subcommand and every positional word
  stay where they are, and nothing moves across `--` (nor in `find`, whose options are an
  expression). A command outside the lexer's subset is kept as written (its here-document
  bodies are data), with only the wait and time substitutions;
- for other tools, except the file writers (Write, Edit, MultiEdit, NotebookEdit, compared
  exactly), the values of wait-like keys (`timeout`, `wait`, `seconds`, `delay`, `interval`,
  `sleep`, `since`, `until`, `poll...`, `backoff`) become `<n>`, and date-times in strings
  `<time>`.

`effect_of` says what a call may change: "notes" (the panel's own bookkeeping: memory, slots,
todo list, window care), "files" (a file writer, or a command whose only changes are writes
redirected into the files it names: measured by content), "read", "test" (a
test run or checker: its outcome is recorded) or "change" (anything else: a Bash command that
may change something, an external tool).

`normalise_output` strips from a result what changes from run to run: ANSI codes, date-times
and clock times, durations (`0.42s`, `12ms`, `1m3s`, `3 minutes ago`), hex addresses, UUIDs,
object ids (hex words of 7 to 40 digits that hold a digit and a letter: commit, container
and image ids), `id=`-style values, attempt counters (`attempt 3`, `retry #2`), temporary
paths (`/tmp/...`, `/var/folders/...`), process ids, and `./` in front of a path; it keeps
64 KiB (head and tail); `as_read` takes a Read's line numbers off first.
`outcome_digest` hashes pass/fail with the normalised result; `observation` hashes the
normalised content alone (None when it says nothing: blank, or a tool's word for nothing
found), so two calls that return the same thing share it whatever they were; the rule that
compares different calls by it looks only at results of `OBSERVATION_CHARS` or more.

`error_signature` is what a failure says, whatever produced it: the set of the lines of its
normalised output that name an error (`error`, `failed`, `not found`, `denied`, ...), each
made canonical (`canonical_error`: lower case, no quotes or `./`, the tool's name and a test
runner's marker taken off, numbers masked, an operating-system error reduced to its phrase
and the paths it names), shell prefixes (`bash: line 1:`), the `Exit code N` line and test
summaries (`1 failed`) left out. Two failures are the same error when they share a line. A
failure that names no error has an empty signature (a silent `exit 1`, a grep that matched
nothing): it is never taken for another command's failure.

`wait_seconds` says whether a call waits and for how long it asks to: `sleep N`, a blocking
read of a background task (`TaskOutput`/`BashOutput` with `block`), or wait-like inputs of
other tools. The rules use the time the call really took (the sentinel's clock).
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal

from runtime.guard.commands import segments
from runtime.guard.programs import classify

Effect = Literal["notes", "files", "read", "test", "change"]

FILE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset(
    {
        "Read", "Grep", "Glob", "LS", "NotebookRead", "WebFetch", "WebSearch", "TodoRead",
        "BashOutput", "TaskOutput", "ListMcpResourcesTool", "ReadMcpResourceTool",
        # The panel's own memory, read back.
        "mcp__mnemara__wiki_read", "mcp__mnemara__wiki_list", "mcp__mnemara__memory_search",
        "mcp__mnemara__graph_neighbors", "mcp__mnemara__graph_match", "mcp__mnemara__graph_path",
        "mcp__mnemara__graph_query",
    }
)  # fmt: skip
# An MCP tool (`mcp__server__name`) whose name starts so is taken to read.
_READ_PREFIXES = (
    "read", "list", "get", "search", "inspect", "query", "show", "view", "fetch", "find",
    "check", "describe", "status", "poll", "wait", "watch", "count", "lookup", "peek",
)  # fmt: skip
OUTPUT_LIMIT = 64 * 1024

_WAIT_KEY = re.compile(r"timeout|wait|sleep|interval|delay|seconds|since|until|poll|backoff", re.I)
_WAIT_OPTION = re.compile(
    r"^--?[\w-]*(timeout|wait|sleep|interval|delay|since|until|poll|max-time|backoff)[\w-]*$",
    re.I,
)
_WAIT_VALUE = re.compile(r"^\d+(\.\d+)?(ns|us|ms|s|m|h|d)?$|^\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}(:|%3A)\d{2}((:|%3A)\d{2}(\.\d+)?)?(Z|[+-]\d{2}(:|%3A)?\d{2})?",
    re.I,
)
_QUERY_TIME = re.compile(r"\b(since|until|after|before|timestamp|ts)=(\d[^&\s'\"]*)", re.I)
_SLEEP_RAW = re.compile(r"\b(sleep|timeout)(\s+)\d+(\.\d+)?[smhd]?\b")
_WAIT_OPTION_RAW = re.compile(
    r"(--?[\w-]*(?:timeout|wait|sleep|interval|delay|since|until|poll|max-time)[\w-]*)"
    r"(=\S+|\s+\d+(?:\.\d+)?[smhd]?\b)",
    re.I,
)
_NO_REORDER = frozenset({"find", "ffmpeg", "java", "iptables", "convert", "magick", "sox"})


def canonical_arguments(value: Any) -> str:
    """Sorted keys, compact JSON; whitespace inside values is significant."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def call_key(name: str, arguments: Mapping[str, Any]) -> str:
    """The canonical arguments of a call to `name` (see the module docstring)."""
    if name in FILE_TOOLS:
        return canonical_arguments(dict(arguments))
    if name == "Bash":
        rest = {k: v for k, v in arguments.items() if k not in ("command", "description")}
        normalised = _normalise_value(rest)
        command = arguments.get("command")
        if isinstance(command, str):
            normalised["command"] = normalise_command(command)
        return canonical_arguments(normalised)
    return canonical_arguments(_normalise_value(dict(arguments)))


def _normalise_value(value: Any) -> Any:
    if isinstance(value, str):
        return _times(value)
    if isinstance(value, Mapping):
        return {
            str(k): "<n>" if _WAIT_KEY.search(str(k)) and _scalar(v) else _normalise_value(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_normalise_value(v) for v in value]
    return value


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _times(text: str) -> str:
    text = _DATETIME.sub("<time>", text)
    return _QUERY_TIME.sub(lambda m: f"{m.group(1)}=<time>", text)


def normalise_command(command: str) -> str:
    """A Bash command respelt for comparison (see the module docstring)."""
    parts = segments(command)
    if not parts or not all(p.parsed for p in parts):
        text = _SLEEP_RAW.sub(lambda m: f"{m.group(1)}{m.group(2)}<n>", command.strip())
        text = _WAIT_OPTION_RAW.sub(lambda m: m.group(1) + _placeholder(m.group(2)), text)
        return _times(text)
    spelled = []
    for part in parts:
        words = _normalise_words(list(part.words), list(part.spelled), list(part.quoted))
        spelled.append(" ".join((*part.prefix, *words, *part.redirects)))
    return " ; ".join(spelled)


def _placeholder(value: str) -> str:
    return "=<n>" if value.startswith("=") else value[: len(value) - len(value.lstrip())] + "<n>"


def _normalise_words(values: list[str], spelled: list[str], quoted: list[bool]) -> list[str]:
    program = values[0].rsplit("/", 1)[-1] if values else ""
    waits = _wait_positions(program, values)
    out = list(spelled)
    for i, value in enumerate(values):
        name = value.split("=", 1)[0]
        if i in waits or (i and _WAIT_OPTION.match(values[i - 1]) and _WAIT_VALUE.match(value)):
            out[i] = "<n>"
        elif not quoted[i] and "=" in value and _WAIT_OPTION.match(name):
            out[i] = name + "=<n>"
        else:
            out[i] = _times(out[i])
    if program in _NO_REORDER:
        return out
    options = [not q and _is_option(v) for v, q in zip(values, quoted, strict=True)]
    return _sort_option_runs(out, options)


def _wait_positions(program: str, values: list[str]) -> set[int]:
    """The words that say how long to wait: `sleep N`, `timeout [opts] N`, `watch -n N`."""
    if program == "sleep":
        return {i for i, v in enumerate(values) if i and _WAIT_VALUE.match(v)}
    if program == "timeout":
        first = next((i for i, v in enumerate(values) if i and _WAIT_VALUE.match(v)), None)
        return set() if first is None else {first}
    if program == "watch":
        return {i for i, v in enumerate(values) if i and values[i - 1] in ("-n", "--interval")}
    return set()


def _is_option(word: str) -> bool:
    return word.startswith("-") and word not in ("-", "--")


def _sort_option_runs(words: list[str], options: list[bool]) -> list[str]:
    """Sort each run of consecutive option words in place; stop at `--`."""
    out: list[str] = []
    run: list[str] = []
    for i, word in enumerate(words):
        if word == "--":
            out += sorted(run)
            return [*out, *words[i:]]
        if options[i]:
            run.append(word)
            continue
        out += sorted(run)
        run = []
        out.append(word)
    return out + sorted(run)


def effect_of(name: str, arguments: Mapping[str, Any], notes: Collection[str]) -> Effect:
    """What a call may change (see the module docstring); `notes` are the bookkeeping tools."""
    if name in notes:
        return "notes"
    if name in FILE_TOOLS:
        return "files"
    if name == "Bash":
        command = arguments.get("command")
        if not isinstance(command, str):
            return "change"
        kind = classify(command)
        if kind.writes_only:
            return "files"
        if kind.changes:
            return "change"
        return "test" if kind.tests else "read"
    if name in READ_TOOLS:
        return "read"
    if name.startswith("mcp__"):
        tool = name.rsplit("__", 1)[-1].lower()
        if tool.startswith(_READ_PREFIXES):
            return "read"
    return "change"


def runs_tests(name: str, arguments: Mapping[str, Any]) -> bool:
    """Is this a Bash command that runs tests or a checker (its outcome is recorded)?"""
    command = arguments.get("command")
    return name == "Bash" and isinstance(command, str) and classify(command).tests


# -- results ----------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CLOCK = re.compile(r"\b\d{1,2}:\d{2}:\d{2}(\.\d+)?\b")
_DURATION = re.compile(
    r"\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds?|m|mins?|minutes?|h|hrs?|hours?|days?)\b"
    r"|\b\d+m\d+(\.\d+)?s\b",
    re.I,
)
_HEX = re.compile(r"\b0x[0-9a-fA-F]{4,}\b")
_UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
_TMP = re.compile(r"(/private)?/(tmp|var/tmp|var/folders)/[^\s'\"():,;]*")
_PID = re.compile(r"\b(pid|PID|process)([ =:#]+)\d+")
_OBJECT_ID = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")
_ID_VALUE = re.compile(r"\b(id|ID|Id)([=:]\s?)([\w.-]+)")
_ATTEMPT = re.compile(r"\b(attempt|try|retry|round|iteration|poll)(\s*#?\s*)\d+", re.I)
OBSERVATION_CHARS = 40  # shorter results ("ok", "done", "3") are too common to compare
# What a tool says when it found nothing: two searches that both found nothing observed
# nothing in common.
NOTHING_FOUND = frozenset(
    {"(Bash completed with no output)", "No matches found", "No files found", "(no content)"}
)
SIGNATURE_CHARS = 300
_LINE_NUMBER = re.compile(r"^ *\d+(\t|\u2192)", re.M)
_QUOTES = re.compile(r"[\"'`\u2018\u2019]")
_DOT_SLASH = re.compile(r"(^|[\s:(=])\./(?=\w)", re.M)  # `./` in front of a path
_MARKER = re.compile(r"^(e\s+|>+\s*|error:\s*|\[error\]\s*)")
_PROGRAM = re.compile(r"^[\w.-]+:\s+(?=\S)")
_SUMMARY = re.compile(r"^(=+\s*)?<n> (failed|errors?|error)\b")
_ERROR_WORDS = re.compile(
    r"error|exception|fail|fatal|denied|not found|no such|cannot|can't|could not|unable|"
    r"refused|timed out|timeout|invalid|missing|unknown|not allowed|forbidden|panic|abort",
    re.I,
)
_SHELL_PREFIX = re.compile(r"^((/usr)?/bin/)?(ba|z|da)?sh:( line)? ?\d*:\s*")
_NUMBER = re.compile(r"\d+")
_SLEEPS = re.compile(r"\bsleep\s+(\d+(?:\.\d+)?)([smhd])?\b")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_CAP_KEY = re.compile(r"timeout", re.I)  # a cap on a call's time, not a wait it asks for


def normalise_output(text: str) -> str:
    """A tool's result without what changes from run to run (see the module docstring)."""
    if len(text) > OUTPUT_LIMIT:
        half = OUTPUT_LIMIT // 2
        text = text[:half] + "\n<...>\n" + text[-half:]
    text = _ANSI.sub("", text)
    text = _DATETIME.sub("<time>", text)
    text = _CLOCK.sub("<time>", text)
    text = _UUID.sub("<uuid>", text)
    text = _TMP.sub("<tmp>", text)
    text = _HEX.sub("0x<addr>", text)
    text = _PID.sub(lambda m: f"{m.group(1)}{m.group(2)}<n>", text)
    text = _OBJECT_ID.sub("<id>", text)
    text = _ID_VALUE.sub(lambda m: f"{m.group(1)}{m.group(2)}<id>", text)
    text = _ATTEMPT.sub(lambda m: f"{m.group(1)}{m.group(2)}<n>", text)
    text = _DURATION.sub("<dur>", text)
    text = _DOT_SLASH.sub(r"\1", text)
    return "\n".join(line.rstrip() for line in text.splitlines())


def as_read(name: str, content: str) -> str:
    """A Read's result without the line numbers it puts in front of each line (`     1\t`,
    `1→`), so it compares with the same file printed by `cat`."""
    return _LINE_NUMBER.sub("", content) if name == "Read" else content


def outcome_digest(is_error: bool, content: str) -> str:
    """Pass or fail, with the normalised result, as one short hash."""
    data = ("fail\0" if is_error else "pass\0") + normalise_output(content)
    return _hash(data)


def observation(content: str) -> tuple[str | None, int]:
    """The normalised content as a hash and its length, or (None, 0) when it says nothing
    (module docstring)."""
    text = normalise_output(content).strip()
    if not text or text in NOTHING_FOUND:
        return None, 0
    return _hash("seen\0" + text), len(text)


def error_signature(content: str) -> frozenset[str]:
    """What a failure says, whatever produced it (module docstring): its error lines, each
    made canonical; empty when it names no error."""
    lines: set[str] = set()
    for raw in normalise_output(content).splitlines():
        line = _SHELL_PREFIX.sub("", raw.strip())
        if not _ERROR_WORDS.search(line):
            continue  # blank, `Exit code 1`, output: names no error
        line = canonical_error(line)
        if line and not _SUMMARY.match(line):
            lines.add(line[:SIGNATURE_CHARS])
    return frozenset(lines)


def canonical_error(line: str) -> str:
    """One error line without what its tool adds: case, quotes, `./`, the tool's name in
    front, a test runner's marker; an error of the operating system (equivalents.toml
    [errors]) becomes its phrase and the paths the line names."""
    line = _QUOTES.sub("", line.lower())
    line = _DOT_SLASH.sub(r"\1", line)
    line = _MARKER.sub("", line)
    for _ in range(2):
        line = _PROGRAM.sub("", line, count=1)
    for phrase in error_phrases():
        if phrase in line:
            paths = sorted({w.rstrip(":,;") for w in line.split() if "/" in w or "." in w[1:]})
            return " ".join((phrase, *paths))
    return _NUMBER.sub("<n>", line).strip()


EQUIVALENTS = Path(__file__).with_name("equivalents.toml")


@cache
def equivalents_data() -> dict[str, Any]:
    """equivalents.toml, read once (identity.py's spellings and the error phrases here)."""
    return tomllib.loads(EQUIVALENTS.read_text(encoding="utf-8"))


def error_phrases() -> tuple[str, ...]:
    return tuple(equivalents_data()["errors"]["phrases"])


def hashed(*parts: str) -> str:
    """A short hash of `parts`."""
    return _hash("\0".join(parts))


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def wait_seconds(name: str, arguments: Mapping[str, Any]) -> float | None:
    """How long a call asks to wait (module docstring), or None when it does not wait."""
    if name in ("TaskOutput", "BashOutput"):
        if not arguments.get("block"):
            return None
        return _number(arguments.get("timeout"), scale=0.001) or 30.0
    if name == "Bash":
        command = arguments.get("command")
        if not isinstance(command, str):
            return None
        found = [float(m.group(1)) * _UNIT[m.group(2) or "s"] for m in _SLEEPS.finditer(command)]
        return sum(found) if found else None
    waits = [
        n for k, v in arguments.items()
        if _WAIT_KEY.search(str(k)) and not _CAP_KEY.search(str(k))
        and (n := _number(v, scale=1.0)) is not None
    ]  # fmt: skip
    return max(waits) if waits else None


def _number(value: Any, *, scale: float) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) * scale
