"""How the CLI reports failures: one line on stderr, no traceback, an exit code per kind."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer

P = ParamSpec("P")
R = TypeVar("R")

EXIT_CODES = {
    "ConfigError": 3,
    "InstanceError": 4,
    "StoreError": 5,
    "DriverError": 6,
    "RoleDocError": 7,
    "FetchError": 7,
    "PolicyError": 8,
    "PeerbusError": 9,
    "HostError": 10,
}


def exit_code_for(exc: BaseException) -> int:
    for cls in type(exc).__mro__:
        if cls.__name__ in EXIT_CODES:
            return EXIT_CODES[cls.__name__]
    return 1


def fail(message: str, code: int = 1) -> typer.Exit:
    """Print `message` to stderr and return the Exit to raise."""
    typer.echo(f"mnemara: {message}", err=True)
    return typer.Exit(code)


def reports_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Turn the project's own errors into a message on stderr and a non-zero exit code."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from peerbus.errors import PeerbusError
        from runtime.errors import MnemaraError

        try:
            return func(*args, **kwargs)
        except (MnemaraError, PeerbusError) as exc:
            raise fail(str(exc), exit_code_for(exc)) from None
        except KeyboardInterrupt:
            typer.echo("", err=True)
            sys.exit(130)

    return wrapper
