"""What a tool call would touch: its targets, and what about it must be denied or asked.

One function per kind of tool input. Each returns an Inspection: the targets that allow-
patterns are matched against (one per shell command segment, the resolved path of a file
tool, the canonical JSON of anything else), plus reasons that override every pattern and
mode: `deny` for what no tool may do, `ask` for what an operator must see first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from runtime.policy.commands import DIRECTORY_CHANGES, command_hazards, program_of
from runtime.policy.context import PolicyContext
from runtime.policy.paths import PathCheck, Protection, check_path, glob_base, glob_risk
from runtime.policy.shell import SimpleCommand, Unparseable, Word, parse_command

Access = Literal["read", "write", "search"]

# Native file tools: which input field holds the path, and what the tool does there.
FILE_TOOLS: dict[str, tuple[str, Access]] = {
    "Read": ("file_path", "read"),
    "Write": ("file_path", "write"),
    "Edit": ("file_path", "write"),
    "MultiEdit": ("file_path", "write"),
    "NotebookEdit": ("notebook_path", "write"),
    "Glob": ("path", "search"),
    "Grep": ("path", "search"),
}


@dataclass(frozen=True)
class Inspection:
    targets: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    ask: tuple[str, ...] = ()
    shown: str = ""  # what the operator is asked about


@dataclass
class _Findings:
    deny: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def inspect_bash(tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    command = tool_input.get("command")
    if not isinstance(command, str):
        return Inspection(ask=("the call has no command string",), shown=canonical_json(tool_input))
    found = _Findings()
    if tool_input.get("run_in_background"):
        found.ask.append("it would run in the background, beyond this turn's checks")
    parsed = parse_command(command)
    if isinstance(parsed, Unparseable):
        return Inspection(ask=(f"the command cannot be checked: {parsed.reason}",), shown=command)
    cwds = [ctx.cwd]
    for cmd in parsed.commands:
        found.ask.extend(command_hazards(cmd))
        _check_redirects(cmd, cwds, ctx, found)
        _check_arguments(cmd, cwds, ctx, found)
        _follow_directory_change(cmd, cwds, ctx, found)
    targets = tuple(cmd.canonical for cmd in parsed.commands)
    return Inspection(targets, tuple(found.deny), tuple(dict.fromkeys(found.ask)), command)


def _check_redirects(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: _Findings
) -> None:
    for redirect in cmd.redirects:
        target = redirect.target
        if target is None:
            continue
        if target.glob:
            found.ask.append(f"the redirection target {target.value!r} is a glob")
            continue
        for cwd in cwds:
            check = check_path(target.value, ctx, cwd=cwd)
            if redirect.writes:
                _judge_write(check, found, what="redirects output into")
                outside = check.resolved is not None and not check.inside_roots
                if ctx.home_only and outside and not check.device:
                    found.ask.append(
                        f"redirects output outside the allowed directories: {check.resolved}"
                    )
            elif check.protection is Protection.SECRET:
                found.ask.append(f"reads {target.value} ({check.why})")


def _judge_write(check: PathCheck, found: _Findings, *, what: str) -> None:
    if check.device:
        return  # /dev/null, /dev/stdout, /dev/stderr
    if check.resolved is None:
        found.ask.append(f"{what} {check.raw!r}, which cannot be resolved ({check.why})")
    elif check.protection is Protection.POLICY:
        found.deny.append(f"{what} {check.resolved}: {check.why}; no tool may change it")
    elif check.protection is not None:
        found.ask.append(f"{what} protected {check.resolved} ({check.why})")
    elif check.pseudo:
        found.ask.append(f"{what} {check.raw}, which goes through /proc, /sys or /dev")


def _check_arguments(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: _Findings
) -> None:
    """Any argument naming a guarded path makes the command ask.

    Which arguments a program writes to cannot be known from outside (`cp x ~/.bashrc`,
    `tee`, `sed -i`), so a guarded path anywhere in the arguments is enough.
    """
    for arg in cmd.words[1:]:
        value = _path_part(arg)
        if value is None:
            continue
        if arg.glob:
            risk = next((r for r in (glob_risk(value, ctx, cwd=c) for c in cwds) if r), None)
            if risk:
                found.ask.append(risk)
            continue
        for cwd in cwds:
            check = check_path(value, ctx, cwd=cwd)
            if check.resolved is None:
                found.ask.append(f"the argument {value!r} cannot be resolved ({check.why})")
            elif check.protection is not None:
                found.ask.append(f"mentions protected {check.resolved} ({check.why})")
            elif check.pseudo and not check.device:
                found.ask.append(f"mentions {value}, which goes through /proc, /sys or /dev")


def _path_part(arg: Word) -> str | None:
    value = arg.value
    if value.startswith("-"):
        return value.split("=", 1)[1] if "=" in value else None
    return value or None


def _follow_directory_change(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: _Findings
) -> None:
    """Relative paths after `cd dir` are checked against both directories."""
    program = program_of(cmd)
    if program not in DIRECTORY_CHANGES:
        return
    args = [w for w in cmd.words[1:] if not w.value.startswith("-")]
    if program != "cd" or len(args) > 1 or (args and (args[0].glob or args[0].value == "-")):
        found.ask.append(f"`{program}` changes directory in a way the policy cannot follow")
        return
    check = check_path(args[0].value if args else "~", ctx, cwd=cwds[-1])
    if check.resolved is not None:
        cwds.append(check.resolved)


def inspect_file_tool(tool: str, tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    key, access = FILE_TOOLS[tool]
    raw = tool_input.get(key)
    if raw is None and access == "search":
        raw = str(ctx.cwd)
    if not isinstance(raw, str) or not raw:
        return Inspection(ask=(f"the call has no {key}",), shown=canonical_json(tool_input))
    found = _Findings()
    check = check_path(raw, ctx)
    pattern = tool_input.get("pattern")
    if tool == "Glob" and isinstance(pattern, str) and check.resolved is not None:
        parts = pattern.split("/")
        if pattern.startswith(("/", "~")) or ".." in parts:
            # Such a pattern searches wherever it points, whatever `path` says.
            risk = glob_risk(pattern, ctx, cwd=check.resolved)
            if risk:
                found.ask.append(risk)
            check = check_path(glob_base(pattern)[0], ctx, cwd=check.resolved)
    if check.resolved is None:
        return Inspection(ask=(f"{raw!r} cannot be resolved ({check.why})",), shown=raw)
    if ctx.home_only and not check.inside_roots:
        found.deny.append(f"{check.resolved} is outside the allowed directories (home only)")
    if access == "write":
        _judge_write(check, found, what="writes")
        if check.device:
            found.ask.append(f"writes {check.resolved}, a device file")
    elif check.protection is Protection.SECRET:
        found.ask.append(f"reads {check.resolved} ({check.why})")
    elif check.pseudo:
        found.ask.append(f"reads {raw}, which goes through /proc, /sys or /dev")
    return Inspection((str(check.resolved),), tuple(found.deny), tuple(found.ask), raw)


def inspect_other(tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    """MCP and unknown tools: the whole input is the target; policy files are off limits."""
    deny = tuple(
        f"names {check.resolved}: {check.why}; no tool may change it"
        for text in _strings(tool_input)
        if len(text) < 4_096 and "\n" not in text and ("/" in text or text.startswith("~"))
        for check in (check_path(text, ctx),)
        if check.protection is Protection.POLICY
    )
    target = canonical_json(tool_input)
    return Inspection((target,), deny, (), target)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)
