"""Sandbox first: what a confined panel may do without asking, because the sandbox contains it.

When a panel's tools run inside its sandbox (runtime/sandbox/), the kernel, not the policy,
decides what a command can read, write and reach: everything a command does stays inside
the panel's areas and dies with the turn. Asking the operator about such calls buys nothing,
and an operator asked about everything stops reading the questions. So a confined panel's
calls are judged by what the sandbox cannot contain:

| call                                              | confined            | why                  |
|---------------------------------------------------|---------------------|----------------------|
| Bash (and Monitor), any command                   | allowed             | contained            |
| ... that acts beyond this machine (`git push`,    | asked, when the     | the network reaches  |
|     `gh pr create`, `npm publish`, `ssh`,         | team's network      | the service: the     |
|     `curl -d`; remote.py's table)                 | lists hosts         | sandbox cannot undo  |
| ... that writes a file no tool may change         | denied              | as unconfined        |
| ... that writes outside the writable areas        | denied              | read-only there      |
| Read, Glob, Grep, any path                        | allowed             | the sandbox shows    |
|                                                   |                     | only what it may read|
| Write, Edit, MultiEdit, NotebookEdit inside the   | allowed             | contained            |
|     working directory, `[team] writable`, or the  |                     |                      |
|     sandbox's own scratch (`/tmp`, `/var/tmp`,    |                     |                      |
|     the home directory outside the panel's areas) |                     |                      |
| ... to a startup file, git hook or config, role   | denied              | runs code later, or  |
|     doc, team file, store or policy file          |                     | grants power         |
| ... anywhere else                                 | denied              | outside the areas    |
| Claude Code's bookkeeping (TodoWrite, Task*,      | allowed (confined   | changes only the     |
|     ExitPlanMode, ...), subagents (Task, Agent)   | or not, subagents   | CLI's own state; a   |
|                                                   | confined only)      | subagent's calls pass|
|                                                   |                     | the same guard       |
| WebSearch                                         | allowed             | the model service's  |
| WebFetch to a host on the team's network list     | allowed             |                      |
| ... to any other host                             | asked               | beyond the list      |
| a configured MCP server's tool                    | allowed; with hosts | the server runs in   |
|                                                   | listed, asked when  | the sandbox; with a  |
|                                                   | its name changes    | network it can act   |
|                                                   | something           | at its service       |
| a tool the team file's [[panels.policy]] names    | as the team file    | the operator's choice|
|                                                   | says                |                      |

Unconfined (sandbox off, or bubblewrap missing under `auto`) none of this applies: the
policy's strict rules decide (policy.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from runtime.policy.bash import inspect_bash
from runtime.policy.context import Containment, PolicyContext
from runtime.policy.inspection import (
    FILE_TOOLS,
    Findings,
    Inspection,
    canonical_json,
    judge_write,
)
from runtime.policy.limits import MAX_PATH_LENGTH
from runtime.policy.ondisk import hard_links
from runtime.policy.paths import Protection, check_path
from runtime.policy.patterns import MAX_TARGET_LENGTH
from runtime.policy.remote import mcp_change
from runtime.policy.verdict import OWN_SERVER, Verdict, mcp_server_of

# Claude Code's own bookkeeping: they change only the CLI's state (its task list, its plan,
# a question to the user), or read a background job's output or stop it.
BOOKKEEPING_TOOLS = frozenset(
    {"TodoWrite", "TodoRead", "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TaskOutput",
     "TaskStop", "KillShell", "KillBash", "BashOutput", "ExitPlanMode", "EnterPlanMode",
     "AskUserQuestion", "ToolSearch", "ListMcpResourcesTool", "ReadMcpResourceTool"}
)  # fmt: skip
# Tools that start a subagent: its own calls come through the same hooks, so the same guard.
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
# Tools that run a shell command (their input's `command`), judged as Bash is.
COMMAND_TOOLS = frozenset({"Bash", "Monitor"})
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
READ_TOOLS = frozenset({"Read", "Glob", "Grep", "LS"})
MODEL_SERVICE_TOOLS = frozenset({"WebSearch"})  # done by the model service, not on this machine


def url_host(tool_input: Mapping[str, Any]) -> str | None:
    """The host a WebFetch call names, or None when its URL names none."""
    url = tool_input.get("url")
    if not isinstance(url, str):
        return None
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def decide_contained(
    tool: str,
    tool_input: Mapping[str, Any],
    ctx: PolicyContext,
    box: Containment,
    mcp_servers: frozenset[str],
) -> Verdict | None:
    """A confined panel's call, judged by what its sandbox contains (containment.py's table);
    None leaves the call to the strict rules (a tool the table does not know)."""
    contained = "contained by the panel's sandbox"
    if tool in COMMAND_TOOLS:
        found = inspect_bash(tool_input, ctx)
        shown = found.shown
        if found.deny:
            return Verdict("deny", tool, "; ".join(found.deny), shown)
        outside = _writes_outside(found, box)
        if outside:
            return Verdict("deny", tool, outside, shown)
        if found.remote and box.hosts:
            reason = "; ".join(found.remote) + ", which the sandbox cannot undo"
            return Verdict("ask", tool, reason, shown, remember=_rememberable(found.targets))
        return Verdict("allow", tool, contained, shown)
    if tool in WRITE_TOOLS:
        key = FILE_TOOLS[tool][0]
        raw = tool_input.get(key)
        if not isinstance(raw, str) or not raw or len(raw) > MAX_PATH_LENGTH:
            return Verdict(
                "deny", tool, f"the call has no usable {key}", canonical_json(tool_input)
            )
        findings = Findings()
        judge_write(check_path(raw, ctx), findings, what="writes")
        written = Inspection(written=tuple(findings.written))
        # Whatever the strict rules would ask about a write (a protected or unresolvable path,
        # /proc, a file with several hard links) is more than a sandbox write may do.
        why = "; ".join(findings.deny + findings.ask) or _writes_outside(written, box)
        if why or not findings.written:
            return Verdict("deny", tool, why or f"{raw!r} is a device file", raw)
        return Verdict("allow", tool, contained, raw)
    if tool in READ_TOOLS or tool in BOOKKEEPING_TOOLS or tool in SUBAGENT_TOOLS:
        return Verdict("allow", tool, contained)
    if tool in MODEL_SERVICE_TOOLS:
        return Verdict("allow", tool, "done by the model service, not on this machine")
    if tool == "WebFetch":
        host = url_host(tool_input)
        if host is not None and box.reaches(host):
            return Verdict("allow", tool, f"{host} is on the team's network list", host)
        shown = host or str(tool_input.get("url", ""))
        reason = (
            f"{shown} is not on the team's network list ([team] network): the sandbox's proxy "
            "refuses it"
        )
        return Verdict("ask", tool, reason, shown)
    server = mcp_server_of(tool)
    if server is not None and server != OWN_SERVER and server in mcp_servers:
        change = mcp_change(tool) if box.hosts else None
        if change is None:
            return Verdict("allow", tool, contained)
        reason = f"{change}, reachable through the team's network list"
        return Verdict("ask", tool, reason, tool, remember=(tool,))
    return None


def _writes_outside(found: Inspection, box: Containment) -> str:
    """Why a write of the call is denied for a confined panel ("" when none is): it changes a
    file that grants power or runs code later, or lands outside the writable areas."""
    for check in found.written:
        where = check.resolved
        if where is None:
            continue  # the kernel decides; the strict rules had asked
        if check.protection is not None and check.protection is not Protection.SECRET:
            return f"writes {where}: {check.why}; no tool of a confined panel may change it"
        links = hard_links(where) if check.looked_up else 0
        if links > 1:
            return f"writes {where}, a file with {links} hard links, which changes it elsewhere too"
        if not box.may_write(where):
            return (
                f"writes {where}, outside the panel's writable areas (its working directory, "
                "[team] writable and the sandbox's scratch); the sandbox has it read-only or "
                "does not show it"
            )
    return ""


def _rememberable(targets: tuple[str, ...]) -> tuple[str, ...]:
    return targets if all(len(t) <= MAX_TARGET_LENGTH for t in targets) else ()
