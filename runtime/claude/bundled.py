"""Where the Claude Code CLI bundled in the Claude Agent SDK's wheel lives.

The SDK ships the CLI as `claude_agent_sdk/_bundled/claude` (`claude.exe` on Windows) and
runs it when no `cli_path` is given (its transport's `_find_bundled_cli`). The package is
located without being imported, so asking costs nothing.
"""

from __future__ import annotations

import importlib.util
import platform
from pathlib import Path


def bundled_cli() -> Path | None:
    """The path where the bundled CLI should be; None when the SDK is not installed.

    The caller checks that the file is there: a wheel installed without it is a broken one.
    """
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or spec.origin is None:
        return None
    name = "claude.exe" if platform.system() == "Windows" else "claude"
    return Path(spec.origin).parent / "_bundled" / name
