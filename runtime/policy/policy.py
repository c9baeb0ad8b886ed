"""The permission decision: `decide(state, tool, input, ctx) -> Verdict`, allow / ask / deny.

For a confined panel (the context carries its `Containment`), a call the sandbox contains is
allowed and what it cannot contain is asked or denied, unless the operator chose otherwise for
that tool (a `[[panels.policy]]` entry of the team file, or an instance entry that is not the
default): containment.py has the table. Otherwise (unconfined, or the operator's own entry),
order of precedence, first match wins:

1. the tool's mode is `deny`                                   -> deny
2. the call does what no tool may (write a policy file,
   a file tool outside the allowed roots)                      -> deny
3. the call has a hazard (see inspection.py, commands.py)      -> ask, and "always" is not offered
4. the mode is `allow`, or the operator allowed the tool for
   this session                                                -> allow
5. every target fully matches a configured or remembered
   allow-pattern                                               -> allow
6. otherwise                                                   -> ask; "always" stores the
                                                                  unmatched targets, escaped

An ask reason that lists the segments no pattern allowed quotes each one in backticks and
separates them with commas (`a`, `b`), so a list never reads like a pipeline.

Modes come from the config entry for the tool; then `mcp__<server>__*`; then the family
(MultiEdit and NotebookEdit follow Edit, Glob and Grep follow Read); then the built-in
defaults (Bash ask, Read allow, Write ask, Edit ask, our own `mcp__mnemara__*` tools allow,
a configured MCP server's tools allow, Claude Code's bookkeeping tools allow). A tool none of
these name is unknown, and asks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runtime.instance.config import InstanceConfig, ToolMode, default_tool_policies
from runtime.policy.bash import inspect_bash
from runtime.policy.containment import BOOKKEEPING_TOOLS, decide_contained
from runtime.policy.context import PolicyContext
from runtime.policy.inspection import FILE_TOOLS, Inspection, inspect_file_tool, inspect_other
from runtime.policy.patterns import MAX_TARGET_LENGTH, SafePattern, compile_pattern
from runtime.policy.rules import RuleSet
from runtime.policy.verdict import OWN_SERVER, Action, Verdict, mcp_server_of

__all__ = ["Action", "PolicyState", "ToolRule", "Verdict", "decide", "inspect", "mcp_server_of"]

ALIASES = {"WriteMemory": f"mcp__{OWN_SERVER}__write_memory"}
FAMILY = {"MultiEdit": "Edit", "NotebookEdit": "Edit", "Glob": "Read", "Grep": "Read"}
BUILTIN_MODES: dict[str, ToolMode] = {"Bash": "ask", "Read": "allow", "Write": "ask", "Edit": "ask"}


@dataclass(frozen=True)
class ToolRule:
    """A tool's mode and patterns. `chosen`: the operator set it (a team file's
    `[[panels.policy]]` entry, or an instance entry other than the default), so it holds for
    a confined panel too; a default gives way to what the sandbox contains."""

    mode: ToolMode
    patterns: tuple[SafePattern, ...] = ()
    source: str = "default"
    chosen: bool = False


@dataclass(frozen=True)
class PolicyState:
    """Everything a decision depends on besides the call: config, remembered rules, session."""

    configured: Mapping[str, ToolRule] = field(default_factory=dict)
    remembered: RuleSet = field(default_factory=RuleSet)
    mcp_servers: frozenset[str] = frozenset()
    session_tools: frozenset[str] = frozenset()

    @classmethod
    def from_config(
        cls,
        config: InstanceConfig,
        remembered: RuleSet | None = None,
        *,
        path: Path | None = None,
        team_tools: frozenset[str] = frozenset(),
    ) -> PolicyState:
        """Compile the config's `allowed_tools`; a bad pattern is a PolicyError naming it.
        `team_tools` are the tools whose entry came from the team file's `[[panels.policy]]`."""
        configured: dict[str, ToolRule] = {}
        defaults = set(default_tool_policies())
        for i, entry in enumerate(config.allowed_tools):
            patterns = tuple(
                compile_pattern(p, path=path, field=f"allowed_tools[{i}].allowed_patterns[{j}]")
                for j, p in enumerate(entry.allowed_patterns)
            )
            name = ALIASES.get(entry.tool, entry.tool)
            chosen = entry.tool in team_tools or entry not in defaults
            configured[name] = ToolRule(
                entry.mode, patterns, source=f"allowed_tools[{i}]", chosen=chosen
            )
        return cls(
            configured=configured,
            remembered=remembered or RuleSet(),
            mcp_servers=frozenset(s.name for s in config.mcp_servers),
        )

    def with_session_tool(self, tool: str) -> PolicyState:
        return replace(self, session_tools=self.session_tools | {tool})

    def with_remembered(self, remembered: RuleSet) -> PolicyState:
        return replace(self, remembered=remembered)

    def rule_for(self, tool: str) -> ToolRule | None:
        """The rule that governs `tool`, or None when the policy does not know it."""
        if tool in self.configured:
            return self.configured[tool]
        server = mcp_server_of(tool)
        if server is not None and f"mcp__{server}__*" in self.configured:
            return self.configured[f"mcp__{server}__*"]
        family = FAMILY.get(tool)
        if family is not None and family in self.configured:
            return self.configured[family]
        builtin = BUILTIN_MODES.get(tool) or BUILTIN_MODES.get(family or "")
        if builtin is not None:
            return ToolRule(builtin)
        if server == OWN_SERVER:
            return ToolRule("allow", source="mnemara's own tools")
        if tool in BOOKKEEPING_TOOLS:
            return ToolRule("allow", source="Claude Code's own bookkeeping")
        if server is not None and server in self.mcp_servers:
            return ToolRule("allow", source=f"mcp__{server}__* (a configured server)")
        return None


def quote_segment(segment: str) -> str:
    """`segment` in backticks; with double ones and spaces when it holds a backtick itself."""
    return f"`` {segment} ``" if "`" in segment else f"`{segment}`"


def inspect(tool: str, tool_input: Mapping[str, Any], ctx: PolicyContext) -> Inspection:
    if tool == "Bash":
        return inspect_bash(tool_input, ctx)
    if tool in FILE_TOOLS:
        return inspect_file_tool(tool, tool_input, ctx)
    return inspect_other(tool_input, ctx)


def decide(
    state: PolicyState, tool: str, tool_input: Mapping[str, Any], ctx: PolicyContext
) -> Verdict:
    """Decide one call. Reads the filesystem only to resolve paths; writes nothing."""
    rule = state.rule_for(tool)
    if rule is not None and rule.mode == "deny":
        return Verdict("deny", tool, f"{tool} is set to deny ({rule.source})")
    containment = ctx.containment
    if containment is not None and (rule is None or not rule.chosen):
        verdict = decide_contained(tool, tool_input, ctx, containment, state.mcp_servers)
        if verdict is not None:
            return verdict
    found = inspect(tool, tool_input, ctx)
    if found.deny:
        return Verdict("deny", tool, "; ".join(found.deny), found.shown)
    if found.ask:
        return Verdict("ask", tool, "; ".join(found.ask), found.shown)
    if rule is not None and rule.mode == "allow":
        return Verdict("allow", tool, f"{tool} is set to allow ({rule.source})", found.shown)
    if tool in state.session_tools:
        return Verdict("allow", tool, f"{tool} is allowed for this session", found.shown)
    patterns = (rule.patterns if rule else ()) + state.remembered.patterns_for(tool)
    unmatched = tuple(t for t in found.targets if not any(p.matches(t) for p in patterns))
    if found.targets and not unmatched:
        return Verdict("allow", tool, "matches an allow-pattern", found.shown)
    if rule is None:
        reason = f"{tool} is not in the policy; unknown tools are asked about"
    elif len(found.targets) > 1:
        reason = "not allowed by a pattern: " + ", ".join(quote_segment(t) for t in unmatched)
    else:
        reason = f"{tool} asks before running ({rule.source})"
    # A target too long to ever match is not offered for "always": the rule would be dead.
    rememberable = all(len(t) <= MAX_TARGET_LENGTH for t in unmatched)
    return Verdict("ask", tool, reason, found.shown, remember=unmatched if rememberable else ())
