"""The live model driver: turns run through the Claude Agent SDK and its bundled Claude Code CLI.

The only package that imports `claude_agent_sdk`, and only inside functions, so importing this
package stays cheap (`mnemara --help` never loads the SDK).
"""

from __future__ import annotations

from runtime.claude.driver import ClaudeDriver
from runtime.claude.options import build_env, build_options
from runtime.turn.driver import SDK_SERVER_NAME, model_tool_name

__all__ = ["SDK_SERVER_NAME", "ClaudeDriver", "build_env", "build_options", "model_tool_name"]
