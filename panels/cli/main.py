"""The `mnemara` command line: builds the typer app from the command groups and maps errors.

Heavy modules are imported inside the commands, so `mnemara --help` stays fast.
"""

from __future__ import annotations

import typer

app = typer.Typer(
    name="mnemara",
    help="Run Claude agent sessions whose role doc and context survive long work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def run() -> None:
    """Console-script entry point."""
    app()
