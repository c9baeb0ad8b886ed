"""The options and environment ClaudeDriver gives the CLI (pure; no CLI runs here)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from runtime.claude import ClaudeDriver, build_env, build_options
from runtime.claude.binding import Binding
from runtime.claude.tools import build_mcp_servers
from runtime.turn.driver import ErrorEvent, McpServerSpec, ToolOutput, ToolSpec


async def _noop(args: dict[str, Any]) -> ToolOutput:
    return ToolOutput("ok")


def options_for(request: Any, **kwargs: Any) -> ClaudeAgentOptions:
    binding = Binding()
    binding.bind(request)
    return build_options(request, binding=binding, **kwargs)


def test_options_keep_the_prompt_and_tools_fixed_and_permissions_ours(
    make_request: Any, tmp_path: Any
) -> None:
    request = make_request(max_budget_usd=0.5, max_turns=7)
    options = options_for(request, cli_path="/opt/claude")

    assert options.system_prompt == request.system  # the role doc, verbatim, as a str
    assert options.tools == ["Bash", "Read", "Edit", "Write"]  # explicit, never the default set
    assert options.setting_sources == []
    assert options.permission_mode == "default"
    assert options.allowed_tools == []  # an allowed tool would skip our can_use_tool
    assert options.can_use_tool is not None
    hook = options.hooks["PreToolUse"][0] if options.hooks else None
    assert hook is not None and hook.matcher is None and hook.on_failure == "block"
    assert options.include_partial_messages and options.verbatim_prompts
    assert options.strict_mcp_config
    assert options.extra_args == {"no-session-persistence": None}  # min mode, not bare
    assert options.model == "claude-test" and options.max_budget_usd == 0.5
    assert options.max_turns == 7
    assert options.cwd == str(tmp_path) and options.cli_path == "/opt/claude"
    assert options.mcp_servers == {}


def test_env_switches_bash_timeout_and_override_order(make_request: Any) -> None:
    request = make_request(bash_timeout_seconds=90, env={"HOME": "/panel-home", "X": "request"})
    env = build_env(request, {"X": "driver", "DISABLE_TELEMETRY": "0", "Y": "driver"})

    assert env["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert env["CLAUDE_CODE_DISABLE_CLAUDE_MDS"] == "1"
    assert env["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    assert env["DISABLE_AUTOUPDATER"] == "1"
    assert env["CLAUDE_CODE_DISABLE_BACKGROUND_TASKS"] == "1"
    assert env["DISABLE_TELEMETRY"] == "0"  # the driver's env wins over our defaults
    assert env["BASH_DEFAULT_TIMEOUT_MS"] == env["BASH_MAX_TIMEOUT_MS"] == "90000"
    assert env["X"] == "request" and env["Y"] == "driver"  # and the request's over the driver's
    assert env["HOME"] == "/panel-home"
    assert "CLAUDE_CODE_SIMPLE" not in env  # bare mode would refuse OAuth logins


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value the CLI reads for `flag`, in either form it accepts: `--flag value` (SDK
    0.2.189) or `--flag=value` (0.2.190 and later); None when the flag is absent."""
    for at, arg in enumerate(argv):
        if arg == flag and at + 1 < len(argv):
            return argv[at + 1]
        if arg.startswith(flag + "="):
            return arg[len(flag) + 1 :]
    return None


def test_the_cli_command_line_the_sdk_builds(make_request: Any) -> None:
    # This reads the SDK's private transport on purpose: it guards the argv the real CLI gets
    # (the role doc as the whole system prompt, the explicit tool list, no settings sources,
    # our permission prompt, no resume), which no public API shows. Values are read in either
    # form the CLI accepts, so an SDK that changes how it spells them still passes; the e2e
    # tests check what the CLI then sends (tests/e2e/test_turns_e2e.py).
    from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

    # The SDK's own step before it starts the CLI (query() and the client both take it): our
    # can_use_tool callback becomes `--permission-prompt-tool stdio`, so the CLI asks us over
    # the control protocol before every tool call instead of deciding alone.
    from claude_agent_sdk.types import _configure_can_use_tool

    request = make_request()
    options = _configure_can_use_tool(options_for(request, cli_path="claude"))
    argv = SubprocessCLITransport(prompt="", options=options)._build_command()

    assert flag_value(argv, "--system-prompt") == request.system
    assert flag_value(argv, "--tools") == "Bash,Read,Edit,Write"
    assert flag_value(argv, "--setting-sources") == ""  # no user or project settings, no CLAUDE.md
    assert flag_value(argv, "--permission-mode") == "default"
    assert flag_value(argv, "--permission-prompt-tool") == "stdio"
    assert "--no-session-persistence" in argv and "--include-partial-messages" in argv
    assert "--strict-mcp-config" in argv
    for absent in ("--allowedTools", "--bare", "--resume", "--continue", "--session-id"):
        assert flag_value(argv, absent) is None and absent not in argv
    assert not any("bypassPermissions" in arg for arg in argv)


def test_flag_value_reads_both_forms_the_cli_accepts() -> None:
    argv = ["claude", "--a", "x", "--b=y", "--c=", "--e=--f", "--d"]
    assert flag_value(argv, "--a") == "x" and flag_value(argv, "--b") == "y"
    assert flag_value(argv, "--c") == "" and flag_value(argv, "--e") == "--f"
    assert flag_value(argv, "--d") is None and flag_value(argv, "--z") is None


def test_no_native_tools_is_an_empty_list_not_the_default_set(make_request: Any) -> None:
    options = options_for(make_request(native_tools=()))
    assert options.tools == []


def test_mcp_servers_sdk_tools_as_one_server_and_stdio_ones(make_request: Any) -> None:
    tools = (ToolSpec("note", "n", {"type": "object", "properties": {}}, _noop),)
    stdio = (McpServerSpec("files", "mcp-files", ("--root", "/srv"), {"K": "v"}),)
    servers = options_for(make_request(sdk_tools=tools, mcp_servers=stdio)).mcp_servers

    assert isinstance(servers, dict) and list(servers) == ["files", "mnemara"]
    assert servers["files"] == {
        "type": "stdio",
        "command": "mcp-files",
        "args": ["--root", "/srv"],
        "env": {"K": "v"},
    }
    sdk = servers["mnemara"]
    assert sdk["type"] == "sdk" and sdk["name"] == "mnemara"


def test_a_reserved_or_repeated_server_name_is_refused() -> None:
    with pytest.raises(ValueError, match="mnemara"):
        build_mcp_servers((), (McpServerSpec("mnemara", "x"),), Binding().call)
    with pytest.raises(ValueError, match="twice"):
        build_mcp_servers((), (McpServerSpec("a", "x"), McpServerSpec("a", "y")), Binding().call)


@pytest.mark.anyio
async def test_a_turn_that_cannot_be_configured_is_an_error_event(make_request: Any) -> None:
    request = make_request(mcp_servers=(McpServerSpec("mnemara", "x"),))
    events = [e async for e in ClaudeDriver().run_turn(request)]
    assert len(events) == 1 and isinstance(events[0], ErrorEvent)
    assert events[0].kind == "other"


def test_options_do_not_depend_on_anything_but_the_request(make_request: Any) -> None:
    request = make_request()
    first, second = options_for(request), options_for(replace(request))
    for name in ("system_prompt", "tools", "env", "extra_args", "setting_sources", "model"):
        assert getattr(first, name) == getattr(second, name)
