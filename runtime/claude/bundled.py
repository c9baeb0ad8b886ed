"""Where the Claude Code CLI bundled in the Claude Agent SDK's wheel lives, and a launcher
that runs it out of the host's process group.

The SDK ships the CLI as `claude_agent_sdk/_bundled/claude` (`claude.exe` on Windows) and
runs it when no `cli_path` is given (its transport's `_find_bundled_cli`). The package is
located without being imported, so asking costs nothing.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shlex
import shutil
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


def own_session_cli(folder: Path, cli: Path | None = None) -> Path | None:
    """A launcher, kept in `folder`, that runs `cli` (default: the bundled CLI) in a session
    of its own; None where that cannot be (no `setsid`, no CLI, `folder` not writable or on
    a file system that runs nothing), and the CLI then runs as the SDK starts it.

    Why: the SDK starts the CLI in the host's process group, so a terminal's Ctrl-C, meant
    for a host in the foreground, reaches every CLI too, and the CLI exits on it at once:
    turns in flight fail instead of getting the host's grace, and spares die. `setsid`
    execs the CLI in the same process (the SDK's child is never a group leader), so the
    SDK's stop still reaches it. A sandboxed CLI needs none: its launcher ignores SIGINT and
    bubblewrap starts it in a new session (runtime/sandbox/launch.py).
    """
    setsid = shutil.which("setsid")
    cli = cli or bundled_cli()
    if setsid is None or cli is None or not cli.is_file():
        return None
    text = f'#!/bin/sh\nexec {shlex.quote(setsid)} {shlex.quote(str(cli))} "$@"\n'
    launcher = folder / "claude"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if os.statvfs(folder).f_flag & os.ST_NOEXEC:
            return None  # a launcher there could not be run: every turn would fail
        if launcher.is_file() and launcher.read_text(encoding="utf-8") == text:
            return launcher
        fresh = folder / f".claude.{os.getpid()}"
        fresh.write_text(text, encoding="utf-8")
        fresh.chmod(0o700)
        fresh.replace(launcher)  # a host starting beside a turn never sees half a launcher
    except OSError:
        return None
    return launcher
