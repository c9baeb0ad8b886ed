"""How the CLI reports failures: one line on stderr, no traceback, an exit code per kind.

The exit codes (README.md has the same table). An error is mapped by its class, the first
row it is an instance of, so a subclass listed above its base gets its own code:

    0    done, or nothing to do, said so (`approve`/`deny` with no question waiting)
    1    the command ran and failed: a verb the host refused, a host that did not start,
         `run` when the host gave up on the panel, a file that cannot be written
    2    usage: a missing or invalid option or argument, a negative count, an unknown panel
         (every command says it alike, naming the team's panels: panels/cli/teams.py),
         a verb or answer the host would refuse (VerbError, WindowVerbError)
    3    configuration: config.json, a team file, a rehearsal script, MNEMARA_HOME
         (ConfigError, TeamFileError, RehearsalError)
    4    instance: invalid name, not found, already exists, in use by a host (InstanceError)
    5    store: turns.sqlite unusable, an import file malformed (StoreError)
    6    model driver: no credentials, the service refused the turn (DriverError)
    7    role doc: unusable, its lane (front matter) unreadable, or its download failed
         (RoleDocError, LaneError, FetchError)
    8    permission policy: permissions.json or a pattern unusable (PolicyError)
    9    bus: the bus file or a message on it (PeerbusError)
    10   host: no host state, a host already running, host.sqlite unusable (HostError,
         HostDbError, any other PanelsError)
    11   `rehearse --cassette`: the replay differs from the recording
    70   a bug: an unexpected exception; its traceback goes to a file named on stderr
    130  interrupted (Ctrl-C)

Exceptions that escape an anyio task group arrive as an ExceptionGroup: it is unwrapped, so
one of our errors inside a group is reported exactly like the bare error.
"""

from __future__ import annotations

import functools
import time
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

P = ParamSpec("P")
R = TypeVar("R")

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_INSTANCE = 4
EXIT_STORE = 5
EXIT_DRIVER = 6
EXIT_ROLE_DOC = 7
EXIT_POLICY = 8
EXIT_BUS = 9
EXIT_HOST = 10
EXIT_DIVERGED = 11
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130

# Ways out that typer (or Python) already reports: passed through untouched. TyperException
# is the base of the usage errors (typer's vendored click's ClickException).
EXITS = (SystemExit, typer.Exit, typer.Abort, typer.TyperException)


def exit_table() -> tuple[tuple[type[BaseException], int], ...]:
    """(error class, exit code), most specific first; imported here so `--help` stays fast."""
    from panels.errors import (
        HostDbError,
        HostError,
        PanelsError,
        TeamFileError,
        VerbError,
        WindowVerbError,
    )
    from peerbus.errors import PeerbusError
    from runtime.errors import (
        ConfigError,
        DriverError,
        FetchError,
        InstanceError,
        MnemaraError,
        PolicyError,
        RoleDocError,
        StoreError,
    )
    from runtime.rehearsal.errors import RehearsalError

    return (
        (VerbError, EXIT_USAGE),
        (WindowVerbError, EXIT_USAGE),
        (TeamFileError, EXIT_CONFIG),  # a PanelsError too: listed before PanelsError
        (ConfigError, EXIT_CONFIG),
        (RehearsalError, EXIT_CONFIG),
        (InstanceError, EXIT_INSTANCE),
        (StoreError, EXIT_STORE),
        (DriverError, EXIT_DRIVER),
        (RoleDocError, EXIT_ROLE_DOC),
        (FetchError, EXIT_ROLE_DOC),
        (PolicyError, EXIT_POLICY),
        (PeerbusError, EXIT_BUS),
        (HostError, EXIT_HOST),
        (HostDbError, EXIT_HOST),
        (PanelsError, EXIT_HOST),
        (MnemaraError, EXIT_FAILURE),
        (OSError, EXIT_FAILURE),
    )


def exit_code_for(exc: BaseException) -> int:
    """The exit code of an error we raise on purpose (or an OSError); 70 for anything else."""
    for cls, code in exit_table():
        if isinstance(exc, cls):
            return code
    return EXIT_INTERNAL


def fail(message: str, code: int = EXIT_FAILURE) -> typer.Exit:
    """Print `message` to stderr and return the Exit to raise."""
    typer.echo(f"mnemara: {message}", err=True)
    return typer.Exit(code)


def check_home() -> None:
    """Refuse a MNEMARA_HOME that is (or lies under) a file, before anything uses it."""
    from runtime.errors import ConfigError
    from runtime.instance.home import mnemara_home

    home = mnemara_home()
    probe = home
    while not probe.exists() and probe != probe.parent:  # exists() is False under a file
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(
            f"MNEMARA_HOME must be a directory, but {probe} is a file; point MNEMARA_HOME at "
            "a directory (it is created when missing), or unset it to use ~/.mnemara",
            path=home,
        )


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, in order; a bare one is its own leaf."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def _ours(exc: BaseException) -> bool:
    from peerbus.errors import PeerbusError
    from runtime.errors import MnemaraError

    return isinstance(exc, MnemaraError | PeerbusError | OSError)


def _message(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}{exc.strerror}"
    return str(exc) or type(exc).__name__


def report(exc: BaseException) -> int:
    """Print what went wrong (no traceback) and return the exit code; re-raise an exit.

    A typer/click exit or usage error found inside a group is raised again, as is a bare
    one, so click prints it as it always does.
    """
    found = leaves(exc)
    if any(isinstance(leaf, KeyboardInterrupt) for leaf in found):
        typer.echo("", err=True)
        return EXIT_INTERRUPTED
    for leaf in found:
        if isinstance(leaf, EXITS):
            raise leaf
    ours = [leaf for leaf in found if _ours(leaf) and not isinstance(leaf, BrokenPipeError)]
    if ours:
        shown: list[str] = []
        for leaf in ours:
            message = _message(leaf)
            if message not in shown:  # the same failure in several tasks is said once
                shown.append(message)
                typer.echo(f"mnemara: {message}", err=True)
        return exit_code_for(ours[0])
    if any(isinstance(leaf, BrokenPipeError) for leaf in found):
        return EXIT_FAILURE  # the reader went away (`| head`): nothing to say
    return report_bug(exc)


def report_bug(exc: BaseException) -> int:
    """An exception nobody meant: its traceback goes to a file, one line to stderr."""
    import tempfile  # here, not at start-up: only a crash needs it

    stamp = time.strftime("%Y%m%d-%H%M%S")
    try:
        with tempfile.NamedTemporaryFile(
            "w", prefix=f"mnemara-crash-{stamp}-", suffix=".log", delete=False
        ) as out:
            traceback.print_exception(exc, file=out)
        where = f"the details are in {out.name}"
    except OSError:
        where = "the details could not be written to a file"
    first = leaves(exc)[0]  # a group's own name says nothing: name what went wrong in it
    kind = type(first).__name__
    text = " ".join(str(first).split())[:300]
    typer.echo(
        f"mnemara: unexpected error ({kind}: {text}); this is a bug in mnemara: {where}; "
        "please report it with that file",
        err=True,
    )
    return EXIT_INTERNAL


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Run a command with MNEMARA_HOME checked, and every failure reported by `report`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            check_home()
            return func(*args, **kwargs)
        except EXITS:
            raise
        except BaseException as exc:  # groups and KeyboardInterrupt too: `report` sorts them
            code = report(exc)
        raise typer.Exit(code)

    return wrapper
