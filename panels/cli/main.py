"""The `mnemara` command line: builds the typer app from the command groups and maps errors.

Command modules import only typer at load time; the runtime is imported inside each command,
so `mnemara --help` stays fast.
"""

from __future__ import annotations

from typing import Annotated

import typer

from panels.cli import instances, rehearse, role, run, transfer
from panels.cli.bus import bus_app
from panels.cli.host import host_commands

app = typer.Typer(
    name="mnemara",
    help="Run Claude agent sessions whose role doc and context survive long work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import version

        typer.echo(f"mnemara {version('mnemara')}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """State lives under $MNEMARA_HOME (default ~/.mnemara)."""


app.command()(instances.init)
app.command("list")(instances.list_)
app.command()(instances.show)
app.command()(instances.clear)
app.command()(instances.delete)
app.command()(instances.note)
app.command()(role.role)
app.command()(transfer.export)
app.command("import")(transfer.import_)
app.command()(transfer.migrate)
app.command()(run.run)
app.command()(rehearse.rehearse)
app.add_typer(bus_app, name="bus")
for _name, _command in host_commands:
    app.command(_name)(_command)


def run_cli() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":  # `python -m panels.cli.main`: how a detached host is started
    run_cli()
