"""The `mnemara` command line: builds the typer app from the command groups and maps errors.

Command modules import only typer at load time; the runtime is imported inside each command,
so `mnemara --help` stays fast. Help is plain text (no boxes), `-h` works everywhere, and
every command's failures are reported by `reports_errors` (panels/cli/errors.py); `run_cli`
is the last net, so no command ever ends with a traceback.
"""

from __future__ import annotations

from typing import Annotated, NoReturn

import typer

from panels.cli import (
    claude,
    instances,
    mcp,
    memory_archive,
    record,
    rehearse,
    replay,
    rewind,
    role,
    run,
    transfer,
)
from panels.cli.bus import bus_app
from panels.cli.errors import EXITS, report
from panels.cli.host import host_commands
from panels.cli.lazy import Group, lazy_command
from panels.cli.memory import memory_app
from panels.cli.options import HELP_OPTIONS, Command

app = typer.Typer(
    name="mnemara",
    cls=Group,
    help="Run Claude agent sessions whose role doc and context survive long work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings=HELP_OPTIONS,
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
    """State lives under $MNEMARA_HOME (default ~/.mnemara). `mnemara COMMAND -h` says more."""


app.command(cls=Command)(instances.init)
app.command("list", cls=Command)(instances.list_)
app.command(cls=Command)(instances.show)
app.command(cls=Command)(instances.clear)
app.command(cls=Command)(instances.delete)
app.command(cls=Command)(instances.note)
app.command(cls=Command)(role.role)
app.command(cls=Command)(transfer.export)
app.command("import", cls=Command)(transfer.import_)
app.command(cls=Command)(transfer.migrate)
app.command(cls=Command)(replay.replay)
app.command(cls=Command)(run.run)
app.command(cls=Command)(rehearse.rehearse)
app.command(cls=Command)(record.record)
for _name, _command in host_commands:
    app.command(_name, cls=Command)(_command)
app.command(cls=Command)(rewind.rewind)
app.command(cls=Command)(mcp.mcp)
app.command(cls=Command, context_settings=claude.PASSTHROUGH)(claude.claude)
app.add_typer(bus_app, name="bus")
memory_app.command(cls=Command)(memory_archive.archive)
memory_app.command(cls=Command)(memory_archive.restore)
app.add_typer(memory_app, name="memory")


def run_cli(args: list[str] | None = None) -> NoReturn:
    """Console-script entry point. Anything a command let through is reported here.

    The tree is built lazily (panels/cli/lazy.py): only the command this run names is
    turned into a click command. `app` itself stays a plain typer app for tests."""
    import sys

    from panels.cli.quick import note_arguments

    quick = note_arguments(sys.argv[1:] if args is None else args)
    try:
        if quick is not None:  # `note` without click's parsing (panels/cli/quick.py)
            try:
                instances.note(*quick)
            except typer.Exit as done:
                raise SystemExit(done.exit_code) from None
            raise SystemExit(0)
        lazy_command(app)(args=args, prog_name="mnemara")
    except EXITS:
        raise
    except BaseException as exc:
        raise SystemExit(report(exc)) from None
    raise SystemExit(0)  # not reached: typer's standalone mode always exits


if __name__ == "__main__":  # `python -m panels.cli.main`: how a detached host is started
    run_cli()
