"""The lane's word on one tool call: deny, or nothing to say. Pure.

The guard asks `lane_verdict` after the sentinel and before the policy, so a lane denial
beats every pattern, mode and "always" rule. The rules, for a role doc's lane
(runtime/instance/lane.py), each a deny with a message that names the rule:

- `max_turn_tool_calls`: the call after the N-th of a turn;
- `tools`: a tool the list does not name (an entry matches the full name or as an fnmatch
  glob; for mnemara's own tools `mcp__mnemara__X`, the short name `X` matches too);
- `recipients`: a send to a panel not listed (`recipients_of`, the owner's, says who a call
  sends to; a broadcast is `*` and needs `*` in the list);
- `writable`: a Write, Edit, MultiEdit or NotebookEdit target outside it, and a Bash command
  that writes outside it: redirections, and the targets of the writing programs the policy
  knows (runtime/policy/writes.py: `tee`, `cp`, `mv`, `rm`, `touch`, `mkdir`, `sed -i`,
  `dd of=`...), against every directory the command `cd`s into (a relative write after a
  directory change that cannot be followed, such as `pushd` or `cd -`, and a target that
  cannot be resolved, such as `~user/x`, are refused: where they land cannot be known);
- `readable` (default: the user's home and the working directory): a Read, Glob, Grep or
  NotebookRead path outside it.

- `commands`: a Bash command with a segment that no pattern fully matches, or one the shell
  parser refuses (substitutions, here-documents), whose segments cannot be known.

A lane only narrows what the permission policy allows; it never widens it. A command every
segment of which matches `commands` is left to the policy like any other (it asks, or the
sandbox contains it): so `commands: ['.*']` in a role doc grants nothing the policy does not,
and a role doc someone else wrote cannot let a panel run what the operator did not allow.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from runtime.guard.lanepaths import covered, resolve_target
from runtime.instance.lane import Lane
from runtime.policy.commands import DIRECTORY_CHANGES, program_of
from runtime.policy.limits import command_too_big
from runtime.policy.paths import glob_base
from runtime.policy.shell import SimpleCommand, Unparseable, parse_command
from runtime.policy.writes import path_arguments
from runtime.turn.driver import ToolCallRequest

WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
READ_TOOLS = {"Read": "file_path", "Glob": "path", "Grep": "path", "NotebookRead": "notebook_path"}
OWN_PREFIX = "mcp__mnemara__"
BROADCAST = "*"
# A lane that leaves `readable` out: the user's home and the working directory (home-only).
DEFAULT_READABLE = ("~/**", "**")
DEFAULT_SHOWN = ("(home and working directory)",)

RecipientsOf = Callable[[ToolCallRequest], "tuple[str, ...] | None"]


@dataclass(frozen=True)
class LaneVerdict:
    """`deny`: the call is refused with `message` (the lane never allows: it only narrows)."""

    action: Literal["deny"]
    message: str = ""


def lane_verdict(
    lane: Lane,
    call: ToolCallRequest,
    cwd: Path,
    *,
    home: Path | None = None,
    turn_calls: int = 0,
    recipients_of: RecipientsOf | None = None,
) -> LaneVerdict | None:
    """The lane's verdict on `call`, the `turn_calls`-th call of its turn; None: the lane
    has nothing to say and the policy decides."""
    home = home or Path.home()
    limit = lane.max_turn_tool_calls
    if limit is not None and turn_calls > limit:
        return _deny(
            f"this panel's lane allows at most {limit} tool calls in one turn "
            f"(max_turn_tool_calls in {lane.source}); end the turn now"
        )
    if lane.tools is not None and not tool_listed(call.name, lane.tools):
        return _deny(
            f"{call.name} is not one of this panel's tools (tools: "
            f"{_shown(lane.tools)}, in {lane.source}); use one of those"
        )
    if recipients_of is not None and lane.recipients is not None:
        refused = _recipients(lane, recipients_of(call))
        if refused is not None:
            return refused
    if call.name in WRITE_TOOLS and lane.writable is not None:
        return _file_write(lane, lane.writable, call.input.get(WRITE_TOOLS[call.name]), cwd, home)
    if call.name in READ_TOOLS:
        return _file_read(lane, call, cwd, home)
    if call.name == "Bash":
        return _bash(lane, call.input, cwd, home)
    return None


def lane_read_refusal(lane: Lane, path: str, cwd: Path, *, home: Path | None = None) -> str | None:
    """Why the lane's `readable` forbids reading `path`, or None: for mnemara's own tools
    that read a file the model names (their call is judged by name only)."""
    call = ToolCallRequest("lane-read-check", "Read", {"file_path": path})
    verdict = _file_read(lane, call, cwd, home or Path.home())
    return None if verdict is None else verdict.message


def tool_listed(name: str, entries: tuple[str, ...]) -> bool:
    short = name.removeprefix(OWN_PREFIX)  # the name itself when it is not one of ours
    return any(fnmatch.fnmatchcase(name, e) or fnmatch.fnmatchcase(short, e) for e in entries)


def _recipients(lane: Lane, named: tuple[str, ...] | None) -> LaneVerdict | None:
    allowed = lane.recipients or ()
    if named is None or BROADCAST in allowed:
        return None
    outside = [r for r in named if r not in allowed]
    if not outside:
        return None
    who = "everyone (a broadcast)" if outside[0] == BROADCAST else repr(outside[0])
    may = _shown(allowed) if allowed else "no one"
    return _deny(
        f"not sent to {who}: this panel may message only: {may} (recipients in {lane.source})"
    )


def _file_write(
    lane: Lane, writable: tuple[str, ...], raw: object, cwd: Path, home: Path
) -> LaneVerdict | None:
    target = resolve_target(raw, cwd, home) if isinstance(raw, str) else None
    if target is None:
        return _deny(
            f"the path {raw!r} cannot be checked against this panel's lane "
            f"(writable in {lane.source}); give a plain path"
        )
    if covered(target, writable, cwd, home):
        return None
    return _deny(_outside(target, "writable", writable, lane))


def _file_read(lane: Lane, call: ToolCallRequest, cwd: Path, home: Path) -> LaneVerdict | None:
    readable = lane.readable if lane.readable is not None else DEFAULT_READABLE
    raw = call.input.get(READ_TOOLS[call.name])
    if call.name in ("Glob", "Grep") and raw is None:
        raw = "."  # they search the working directory when no path is given
    paths = [raw]
    pattern = call.input.get("pattern")
    if call.name == "Glob" and isinstance(pattern, str) and isinstance(raw, str):
        base, _ = glob_base(pattern)  # `../../**` or `/etc/*` reach beyond `path`
        paths.append(base if base.startswith("/") else f"{raw.rstrip('/')}/{base}")
    for each in paths:
        target = resolve_target(each, cwd, home) if isinstance(each, str) else None
        if target is None:
            return _deny(
                f"the path {each!r} cannot be checked against this panel's lane "
                f"(readable in {lane.source}); give a plain path"
            )
        if not covered(target, readable, cwd, home):
            return _deny(_outside(target, "readable", lane.readable or DEFAULT_SHOWN, lane))
    return None


def _bash(lane: Lane, tool_input: Mapping[str, Any], cwd: Path, home: Path) -> LaneVerdict | None:
    command = tool_input.get("command")
    if not isinstance(command, str) or command_too_big(command) is not None:
        if lane.commands is not None:
            return _deny(f"the command cannot be checked against this panel's {_commands(lane)}")
        return None  # the policy asks about it
    parsed = parse_command(command)
    if isinstance(parsed, Unparseable):
        if lane.commands is not None:
            return _deny(
                f"the command cannot be checked against this panel's {_commands(lane)} "
                f"({parsed.reason}); write it as plain commands"
            )
        return None  # its writes cannot be known: the policy asks
    cwds = [cwd]
    lost: str | None = None  # a directory change that cannot be followed: `pushd`, `cd -`
    for cmd in parsed.commands:
        if lane.commands is not None and not any(
            p.matches(cmd.canonical) for p in lane.command_patterns
        ):
            return _deny(
                f"`{cmd.canonical[:200]}` is not one of this panel's {_commands(lane)}; "
                "this is a fixed rule: run only those, or ask the operator"
            )
        for raw, glob in bash_writes(cmd):
            if lane.writable is None or glob:
                continue  # where a glob lands is the shell's to decide: the policy asks
            if lost is not None and not raw.startswith(("/", "~")):
                # Where it lands depends on a directory no one can know before it runs.
                return _deny(
                    f"the write to {raw!r} after `{lost[:200]}` cannot be checked against "
                    f"this panel's lane (writable in {lane.source}); give an absolute path "
                    "or `cd` to a plain directory"
                )
            for each in cwds:
                target = resolve_target(raw, each, home)
                if target is None:
                    return _deny(
                        f"the path {raw!r} cannot be checked against this panel's lane "
                        f"(writable in {lane.source}); give a plain path"
                    )
                if not covered(target, lane.writable, cwd, home):
                    return _deny(_outside(target, "writable", lane.writable, lane))
        if lost is None and not _follow_cd(cmd, cwds, home):
            lost = cmd.canonical
    return None


def _commands(lane: Lane) -> str:
    shown = _shown(lane.commands or ()) if lane.commands else "none"
    return f"lane commands ({shown}, in {lane.source})"


def bash_writes(cmd: SimpleCommand) -> list[tuple[str, bool]]:
    """The paths one simple command writes, as written, each with whether it is an unquoted
    glob: its write redirections and the targets of the writing programs the policy knows."""
    found = [
        (r.target.value, r.target.glob) for r in cmd.redirects if r.writes and r.target is not None
    ]
    program = program_of(cmd)
    scripts = _script_words(cmd, program)
    for arg in path_arguments(cmd, program):
        if arg.value in scripts:
            scripts.remove(arg.value)  # the program text of `sed -i` or `perl -i`, no file
        elif arg.writes and arg.value:
            found.append((arg.value, arg.glob))
    return found


def _script_words(cmd: SimpleCommand, program: str) -> list[str]:
    """The words of `sed` or `perl` that are its program, not files: writes.py counts every
    operand of an in-place edit as written (a floor for the policy), which would make the
    lane refuse `sed -i s/a/b/ src/x` for writing `s/a/b/`."""
    words = [w.value for w in cmd.words[1:]]
    if program == "sed":
        takes, given = ("-e", "--expression", "-f", "--file", "-l", "--line-length"), False
        skip = False
        for word in words:
            if skip:
                skip = False
            elif word in takes:
                skip, given = True, given or (word != "-l" and word != "--line-length")
            elif word.startswith(("--expression=", "--file=")) or (
                word[:1] == "-" and word[1:2] in ("e", "f")  # `-e`, `-es/a/b/`, `-fx.sed`
            ):
                given = True
            elif not word.startswith("-"):
                return [] if given else [word]
        return []
    if program == "perl":
        found, take = [], False
        for word in words:
            if take:
                found.append(word)
                take = False
            elif word.startswith("-") and not word.startswith("--") and word[-1:] in "eE":
                take = True
        return found
    return []


def _follow_cd(cmd: SimpleCommand, cwds: list[Path], home: Path) -> bool:
    """After `cd DIR`, relative paths are judged from every directory so far; False when
    the change cannot be followed (`pushd`, `popd`, `cd -`, a glob, two operands, a directory
    that cannot be resolved): `_bash` then refuses the relative writes after it."""
    program = program_of(cmd)
    if program not in DIRECTORY_CHANGES:
        return True
    args = [w for w in cmd.words[1:] if w.value == "-" or not w.value.startswith("-")]
    if program != "cd" or len(args) > 1 or (args and (args[0].glob or args[0].value == "-")):
        return False
    target = resolve_target(args[0].value if args else "~", cwds[-1], home)
    if target is None:
        return False
    cwds.append(target)
    return True


def _outside(target: Path, key: str, globs: tuple[str, ...], lane: Lane) -> str:
    return (
        f"{target} is outside this panel's lane ({key}: {_shown(globs)}, in {lane.source}); "
        "this is a fixed rule, do not retry: work inside the lane or ask the operator"
    )


def _shown(values: tuple[str, ...], limit: int = 12) -> str:
    shown = ", ".join(values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def _deny(message: str) -> LaneVerdict:
    return LaneVerdict("deny", message)
