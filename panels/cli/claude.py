"""`mnemara claude ARGS...`: the Claude Code CLI bundled in the SDK, on the user's terminal.

There is usually no `claude` on PATH: the CLI that runs the turns is the one inside the
claude-agent-sdk wheel. This command runs that one with the given arguments, so a user can
log in with it (`mnemara claude auth login`) or ask it anything else. It replaces this
process (exec), so the terminal, the signals and the exit code are the CLI's own.
"""

from __future__ import annotations

import os

import typer

from panels.cli.errors import fail, reports_errors

# Everything after `claude` goes to the CLI as it is, `-h` and `--help` included.
PASSTHROUGH = {
    "allow_extra_args": True,
    "ignore_unknown_options": True,
    "allow_interspersed_args": False,
    "help_option_names": [],
}

REINSTALL = "reinstall it with `.venv/bin/pip install --force-reinstall claude-agent-sdk`"


@reports_errors
def claude(ctx: typer.Context) -> None:
    """Run the Claude Code CLI bundled in the SDK: `mnemara claude auth login` logs in.

    Every argument goes to that CLI (`mnemara claude --help` is its help); its exit code is
    this command's.
    """
    from runtime.claude.bundled import bundled_cli

    cli = bundled_cli()
    if cli is None:
        raise fail(f"the Claude Agent SDK (claude-agent-sdk) is not installed; {REINSTALL}", 1)
    if not cli.is_file():
        raise fail(f"the Claude Code CLI bundled in the SDK is missing ({cli}); {REINSTALL}", 1)
    if not os.access(cli, os.X_OK):
        raise fail(f"the bundled CLI {cli} is not executable; {REINSTALL}, or `chmod +x` it", 1)
    os.execv(cli, [str(cli), *ctx.args])
