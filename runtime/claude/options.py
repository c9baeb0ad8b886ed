"""The CLI configuration of one turn: `ClaudeAgentOptions` and the subprocess environment.

Kept identical from turn to turn for a given panel, because every flag here shapes the bytes
of the request and so the prompt cache (see shared/reference/claude-cli-requests.md):

- the role doc is the system prompt, verbatim (`system_prompt=str`);
- an explicit tools list (never the default set of 12, never varying per turn);
- `setting_sources=[]` plus the two env switches that keep CLAUDE.md and the auto-memory index
  out of the first user message ("min mode"; bare mode would forbid OAuth logins), and an
  empty git attribution in the command-line settings, which keeps out the attribution
  reminder (it names the model) that the CLI otherwise puts there whenever Bash is a tool;
- no session files (`--no-session-persistence`): every turn is a fresh, stateless run;
- permission mode "default", no `allowed_tools`: every call reaches our approval gate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from runtime.claude.binding import Binding
from runtime.claude.tools import build_mcp_servers
from runtime.turn.driver import TurnRequest

if TYPE_CHECKING:
    from claude_agent_sdk import ClaudeAgentOptions

# Switches the CLI reads from its environment; see the module docstring.
MIN_MODE_ENV: dict[str, str] = {
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    # A Bash command that outlives its timeout would otherwise move to the background and keep
    # running past the turn; with this it is killed at `bash_timeout_seconds`.
    "CLAUDE_CODE_DISABLE_BACKGROUND_TASKS": "1",
}
# The only settings a turn loads (`setting_sources=[]` drops the user's and the project's).
CLI_SETTINGS = json.dumps({"attribution": {"commit": "", "pr": ""}}, sort_keys=True)
# An approval may wait on an operator for a long time. The CLI gives up on a hook after its
# timeout (60 s by default) and, with on_failure="block", refuses the call; a day is "never".
APPROVAL_HOOK_TIMEOUT_S = 24 * 3600.0


def build_env(request: TurnRequest, driver_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The CLI's environment on top of ours: min-mode switches, the Bash timeout, then overrides.

    The CLI takes `BASH_DEFAULT_TIMEOUT_MS` as the timeout of a command that names none and
    `BASH_MAX_TIMEOUT_MS` as the ceiling a command may ask for (never below the default);
    setting both makes the panel's timeout a hard cap.
    """
    timeout_ms = str(max(1, request.bash_timeout_seconds) * 1000)
    env = {**MIN_MODE_ENV, "BASH_DEFAULT_TIMEOUT_MS": timeout_ms, "BASH_MAX_TIMEOUT_MS": timeout_ms}
    env.update(driver_env or {})
    env.update(request.env)
    return env


def build_options(
    request: TurnRequest,
    *,
    binding: Binding,
    cli_path: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ClaudeAgentOptions:
    """The SDK options of a CLI process shaped by `request` (its blocks are not used): every
    callback goes through `binding`, to the turn the process serves. Pure apart from
    building the in-process tool server."""
    from claude_agent_sdk import ClaudeAgentOptions, HookMatcher

    return ClaudeAgentOptions(
        system_prompt=request.system,
        tools=list(request.native_tools),
        setting_sources=[],
        settings=CLI_SETTINGS,
        permission_mode="default",
        model=request.model or None,
        max_budget_usd=request.max_budget_usd,
        max_turns=request.max_turns,
        cwd=str(request.cwd),
        cli_path=cli_path,
        env=build_env(request, env),
        # Real text deltas arrive as stream events; without this only whole messages come.
        include_partial_messages=True,
        # The prompt is assembled from stored turns, peer messages and tool output: the CLI must
        # not expand an "@path" or "/command" in it.
        verbatim_prompts=True,
        # Only the servers we pass: a .mcp.json in the cwd must not change the tool list.
        strict_mcp_config=True,
        mcp_servers=build_mcp_servers(request.sdk_tools, request.mcp_servers, binding.call),
        extra_args={"no-session-persistence": None},
        # matcher None = every tool, including MCP tools and ones the CLI auto-approves.
        hooks={
            "PreToolUse": [
                HookMatcher(
                    matcher=None,
                    hooks=[binding.pre_tool_use],
                    timeout=APPROVAL_HOOK_TIMEOUT_S,
                    on_failure="block",
                )
            ]
        },
        can_use_tool=binding.can_use_tool,
        stderr=binding.on_stderr,
    )
