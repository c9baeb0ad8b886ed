"""The CLI's shared vocabulary: how teams, panels, instances and counts are spelled, and help.

Every command names a team with `--team/-t`, a panel with `--panel/-p` and an instance with
`--instance/-i`, and shows a placeholder that says what to type (NAME, FILE, N, TEXT); a plain
flag shows none. `Command` is the class of every command: typer adds a `<type>` after each
argument in help, which tells a user nothing the placeholder does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}

TEAM_HELP = "The team: its name, its team file, or the instance that `mnemara run` hosts."

TeamOpt = Annotated[str, typer.Option("--team", "-t", metavar="NAME", help=TEAM_HELP)]
PanelOpt = Annotated[str, typer.Option("--panel", "-p", metavar="NAME", help="The panel.")]
InstanceOpt = Annotated[
    str,
    typer.Option(
        "--instance", "-i", metavar="NAME", help="The instance (its directory in MNEMARA_HOME)."
    ),
]


def not_negative(value: Any) -> Any:
    """Option callback: refuse a negative count (click then exits 2 with the message)."""
    if isinstance(value, int | float) and value < 0:
        raise typer.BadParameter(f"{value} is negative; give 0 or more")
    return value


def check_output(path: Path) -> None:
    """Refuse, before anything is read, a file to write that cannot be one (exit 2)."""
    from panels.cli.errors import EXIT_USAGE, fail

    if path.is_dir():
        raise fail(
            f"{path} is a directory; give a file name, e.g. {path / 'window.jsonl'}", EXIT_USAGE
        )
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise fail(f"folder {folder} {what}; create it first or write somewhere else", EXIT_USAGE)


def help_off_by_default(option: Any) -> Any:
    """Give a help flag the value False when it is not given, where typer leaves None.

    typer validates a parameter's value through a pydantic adapter unless it is a bool
    already, so the unset help flag of `mnemara` in `mnemara bus --help` imported pydantic
    (some 100 modules, more than the rest of start-up). An unset flag means False anyway."""
    if option is not None and option.default is None:
        option.default = False
    return option


class Command(TyperCommand):
    """A typer command whose help and usage line show an argument by its placeholder alone:
    `FILE`, `TEXT...`, `[on|off]` (typer writes `{FILE}` and appends a `<type>`)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_placeholder(param, usage=True))
        return pieces

    # Any: typer vendors click (typer._click) and keeps those classes private.
    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_placeholder(param, usage=False), record[1]))
            else:
                opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


def _placeholder(param: Any, *, usage: bool) -> str:
    name = str(param.metavar or (param.name or "").upper())
    if param.nargs != 1:
        name += "..."
    return name if param.required or not usage else f"[{name}]"


SANDBOX_HELP = (
    "auto: confine the panel's tools with bubblewrap when it works here (the default); "
    "required: refuse to start without it; off: run tools unconfined (every call the strict "
    "rules ask about is asked)."
)
SandboxOpt = Annotated[str, typer.Option("--sandbox", metavar="MODE", help=SANDBOX_HELP)]


def sandbox_mode(text: str) -> Any:
    """The `--sandbox` value as a mode; a usage error (exit 2) for anything else."""
    from panels.cli.errors import EXIT_USAGE, fail
    from runtime.sandbox.settings import MODES

    mode = next((m for m in MODES if m == text), None)
    if mode is None:
        raise fail(f"--sandbox must be one of {', '.join(MODES)} (got {text!r})", EXIT_USAGE)
    return mode
