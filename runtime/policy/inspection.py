"""What a tool call would touch: its targets, and what about it must be denied or asked.

One function per kind of tool input (Bash's is in bash.py). Each returns an Inspection: the
targets that allow-patterns are matched against (one per shell command segment, the resolved
path of a file tool, the canonical JSON of anything else), plus reasons that override every
pattern and mode: `deny` for what no tool may do, `ask` for what an operator must see first.
Inputs too big to check (limits.py) are asked about before anything is parsed or resolved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.policy.context import PolicyContext, is_under
from runtime.policy.limits import MAX_INPUT_DEPTH, MAX_NAMED_PATHS, MAX_PATH_CHECKS, MAX_PATH_LENGTH
from runtime.policy.ondisk import bus_mark, hard_links
from runtime.policy.paths import PathCheck, Protection, check_path, glob_base, glob_risk

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
    # For a confined panel (containment.py): the paths the call writes, as judged, and what
    # it does beyond this machine (remote.py).
    written: tuple[PathCheck, ...] = ()
    remote: tuple[str, ...] = ()


@dataclass
class Findings:
    """Reasons gathered while inspecting one call, and what is left of its path-check budget."""

    deny: list[str] = field(default_factory=list)
    ask: list[str] = field(default_factory=list)
    checks_left: int = MAX_PATH_CHECKS
    written: list[PathCheck] = field(default_factory=list)

    def spend(self) -> bool:
        """Take one path check from the budget; False, and an ask reason, once it is spent."""
        if self.checks_left > 0:
            self.checks_left -= 1
            return True
        if self.checks_left == 0:
            self.checks_left = -1
            self.ask.append(
                f"the command names too many paths to check (more than {MAX_PATH_CHECKS})"
            )
        return False


def judge_write(check: PathCheck, found: Findings, *, what: str) -> None:
    """Deny a write to what no tool may change; ask about one to a guarded or odd path.

    A path resolved on disk is also looked at as a file (ondisk.py): a bus peerbus has
    opened is denied wherever it is, and a file with more than one name asks.
    """
    if check.device:
        return  # /dev/null, /dev/stdout, /dev/stderr
    found.written.append(check)
    if check.resolved is None:
        found.ask.append(f"{what} {check.raw!r}, which cannot be resolved ({check.why})")
        return
    if check.never_written:
        found.deny.append(f"{what} {check.resolved}: {check.why}; no tool may change it")
        return
    mark = bus_mark(check.resolved) if check.looked_up else None
    if mark is not None:
        found.deny.append(
            f"{what} {check.resolved}: {mark.name} beside it marks a bus database, and a "
            "write could forge messages; no tool may change it"
        )
        return
    if check.protection is not None:
        found.ask.append(f"{what} protected {check.resolved} ({check.why})")
    elif check.pseudo:
        found.ask.append(f"{what} {check.raw}, which goes through /proc, /sys or /dev")
    links = hard_links(check.resolved) if check.looked_up else 0
    if links > 1:
        found.ask.append(
            f"{what} {check.resolved}, a file with {links} hard links; the write changes it "
            "under every name, which the policy cannot see"
        )


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def inspect_file_tool(tool: str, tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    key, access = FILE_TOOLS[tool]
    raw = tool_input.get(key)
    if raw is None and access == "search":
        raw = str(ctx.cwd)
    if not isinstance(raw, str) or not raw:
        return Inspection(ask=(f"the call has no {key}",), shown=canonical_json(tool_input))
    pattern = tool_input.get("pattern")
    # Only the path (and a Glob's pattern) is inspected: an Edit's strings are never parsed.
    for name, text in ((key, raw), ("pattern", pattern if tool == "Glob" else None)):
        if isinstance(text, str) and len(text) > MAX_PATH_LENGTH:
            return Inspection(
                ask=(
                    f"the {name} is too long to check ({len(text)} characters; "
                    f"the limit is {MAX_PATH_LENGTH})",
                ),
                shown=text,
            )
    found = Findings()
    check = check_path(raw, ctx)
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
    # The CLI reads its own background tasks' output back (`<tmp>/claude-<uid>/.../tasks`).
    scratch = ctx.cli_scratch
    cli_own = access != "write" and scratch is not None and is_under(check.resolved, scratch)
    if ctx.home_only and not check.inside_roots and not cli_own:
        found.deny.append(f"{check.resolved} is outside the allowed directories (home only)")
    if access == "write":
        judge_write(check, found, what="writes")
        if check.device:
            found.ask.append(f"writes {check.resolved}, a device file")
    elif check.secret:
        found.ask.append(f"reads {check.resolved} (credentials)")
    elif check.pseudo:
        found.ask.append(f"reads {raw}, which goes through /proc, /sys or /dev")
    return Inspection((str(check.resolved),), tuple(found.deny), tuple(found.ask), raw)


def inspect_other(tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    """MCP and unknown tools: the whole input is the target; the host's files are off limits.

    A string that names a policy file (or the team file, or a role doc) is denied: no tool may
    change one. One that names a store, or a command on PATH, asks, since the tool may write
    it and the policy cannot tell a read from a write.
    """
    strings = _strings(tool_input)
    if strings is None:
        reason = f"the input is nested too deeply to check (more than {MAX_INPUT_DEPTH} levels)"
        return Inspection(ask=(reason,), shown="(input not shown: nested too deeply)")
    target = canonical_json(tool_input)
    paths = [
        text
        for text in strings
        if len(text) <= MAX_PATH_LENGTH and "\n" not in text and ("/" in text or text[:1] == "~")
    ]
    if len(paths) > MAX_NAMED_PATHS:
        reason = f"the input names more than {MAX_NAMED_PATHS} paths, too many to check"
        return Inspection(ask=(reason,), shown=target)
    found = Findings()
    for text in paths:
        check = check_path(text, ctx)
        if check.protection is Protection.POLICY:
            found.deny.append(f"names {check.resolved}: {check.why}; no tool may change it")
        elif check.protection in (Protection.STORE, Protection.EXEC):
            found.ask.append(f"names {check.resolved} ({check.why})")
    return Inspection((target,), tuple(found.deny), tuple(dict.fromkeys(found.ask)), target)


def _strings(value: Any) -> list[str] | None:
    """Every string in a JSON-like value, or None when it nests deeper than the cap."""
    out: list[str] = []
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_INPUT_DEPTH:
            return None
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list | tuple):
            stack.extend((v, depth + 1) for v in item)
    return out
