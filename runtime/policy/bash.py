"""What a Bash command would touch: its segments, and what about them to deny or ask.

Caps first (limits.py), then the strict parse (shell.py); then each segment in turn: its
hazards (commands.py), its redirections, and every word that may be a path (writes.py),
resolved against each directory the command has `cd`-ed into so far. A write to what no tool
may change is denied; a write to, or a mention of, a guarded path asks. Every path resolved
spends one check of the decision's budget (limits.MAX_PATH_CHECKS); once it is spent the
command asks, and the paths it writes are still judged by name, so that a long run of
harmless words cannot turn a denied write into a question.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runtime.policy.commands import DIRECTORY_CHANGES, command_hazards, program_of
from runtime.policy.context import PolicyContext
from runtime.policy.inspection import Findings, Inspection, canonical_json, judge_write
from runtime.policy.limits import MAX_DIRECTORY_CHANGES, command_too_big
from runtime.policy.ondisk import is_socket
from runtime.policy.paths import check_path, glob_risk
from runtime.policy.remote import remote_effects
from runtime.policy.shell import SimpleCommand, Unparseable, parse_command
from runtime.policy.writes import path_arguments


def inspect_bash(tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    command = tool_input.get("command")
    if not isinstance(command, str):
        return Inspection(ask=("the call has no command string",), shown=canonical_json(tool_input))
    too_big = command_too_big(command)
    if too_big is not None:
        return Inspection(ask=(too_big,), shown=command)
    found = Findings()
    if tool_input.get("run_in_background"):
        found.ask.append("it would run in the background, beyond this turn's checks")
    parsed = parse_command(command)
    if isinstance(parsed, Unparseable):
        return Inspection(ask=(f"the command cannot be checked: {parsed.reason}",), shown=command)
    cwds = [ctx.cwd]
    remote: list[str] = []
    for cmd in parsed.commands:
        found.ask.extend(command_hazards(cmd))
        remote.extend(remote_effects(program_of(cmd), tuple(w.value for w in cmd.words[1:])))
        _check_redirects(cmd, cwds, ctx, found)
        _check_arguments(cmd, cwds, ctx, found)
        _follow_directory_change(cmd, cwds, ctx, found)
    targets = tuple(cmd.canonical for cmd in parsed.commands)
    return Inspection(
        targets,
        tuple(found.deny),
        tuple(dict.fromkeys(found.ask)),
        command,
        written=tuple(found.written),
        remote=tuple(dict.fromkeys(remote)),
    )


def _check_redirects(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: Findings
) -> None:
    for redirect in cmd.redirects:
        target = redirect.target
        if target is None:
            continue
        if target.glob:
            found.ask.append(f"the redirection target {target.value!r} is a glob")
            continue
        for cwd in cwds:
            resolve = found.spend()
            if not resolve and not redirect.writes:
                break
            check = check_path(target.value, ctx, cwd=cwd, resolve=resolve)
            if redirect.writes:
                judge_write(check, found, what="redirects output into")
                outside = check.resolved is not None and not check.inside_roots
                if ctx.home_only and outside and not check.device:
                    found.ask.append(
                        f"redirects output outside the allowed directories: {check.resolved}"
                    )
            elif check.secret:
                found.ask.append(f"reads {target.value} (credentials)")


def _check_arguments(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: Findings
) -> None:
    """Every word that may be a path is checked; what the program writes, as a write.

    Which arguments a program writes is known only for the programs in writes.py, so a
    guarded path anywhere in the arguments asks all the same (`cat x ~/.bashrc`).
    """
    program = program_of(cmd)
    for arg in path_arguments(cmd, program):
        if not arg.value:
            continue
        if arg.glob:
            if not found.spend():
                continue
            risk = next((r for r in (glob_risk(arg.value, ctx, cwd=c) for c in cwds) if r), None)
            if risk:
                found.ask.append(risk)
            continue
        for cwd in cwds:
            resolve = found.spend()
            if not resolve and not arg.writes:
                break
            check = check_path(arg.value, ctx, cwd=cwd, resolve=resolve)
            if arg.removes and check.holds_stores:
                found.deny.append(
                    f"`{program}` would remove or move {check.resolved}, which holds mnemara's "
                    "databases and stores; no tool may do that"
                )
            elif arg.writes:
                judge_write(check, found, what=f"`{program}` writes")
            elif check.resolved is None:
                found.ask.append(f"the argument {arg.value!r} cannot be resolved ({check.why})")
            elif check.looked_up and is_socket(check.resolved):
                found.ask.append(f"{check.resolved} is a socket, beyond the file-path policy")
            elif check.protection is not None:
                found.ask.append(f"mentions protected {check.resolved} ({check.why})")
            elif check.pseudo and not check.device:
                found.ask.append(f"mentions {arg.value}, which goes through /proc, /sys or /dev")


def _follow_directory_change(
    cmd: SimpleCommand, cwds: list[Path], ctx: PolicyContext, found: Findings
) -> None:
    """Relative paths after `cd dir` are checked against both directories."""
    program = program_of(cmd)
    if program not in DIRECTORY_CHANGES:
        return
    args = [w for w in cmd.words[1:] if not w.value.startswith("-")]
    if program != "cd" or len(args) > 1 or (args and (args[0].glob or args[0].value == "-")):
        found.ask.append(f"`{program}` changes directory in a way the policy cannot follow")
        return
    if len(cwds) > MAX_DIRECTORY_CHANGES:
        found.ask.append(
            f"the command changes directory more than {MAX_DIRECTORY_CHANGES} times, "
            "too often to check"
        )
        return
    check = check_path(args[0].value if args else "~", ctx, cwd=cwds[-1])
    if check.resolved is not None:
        cwds.append(check.resolved)
