"""The dashboard in front: when a command opens it, and how it runs over a host in a thread.

`mnemara run`, `up` and `demo` open the dashboard (panels/ui) when they are on a terminal:
stdin and stdout are TTYs, `--no-tui` was not given and MNEMARA_NO_TUI is not "1". For `run`
and `demo` the host is in this process: its work runs under trio in a `HostThread`
(panels/host/thread.py) and the dashboard, on asyncio, owns the main thread; they meet only
through host.sqlite, as any viewer and host do. Closing the dashboard stops that host; a
host that stops from outside (`mnemara down`) closes the dashboard. `up` opens it over a
detached host, which goes on when the dashboard closes.

Textual is imported only here, when a dashboard opens, so `mnemara --help` stays quick.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

if TYPE_CHECKING:
    from panels.host.thread import HostThread

T = TypeVar("T")
NO_TUI_ENV = "MNEMARA_NO_TUI"


def on_terminal() -> bool:
    """stdin and stdout are both a terminal (a dashboard can be drawn and typed into)."""
    return sys.stdin.isatty() and sys.stdout.isatty()


def wants_dashboard(no_tui: bool = False) -> bool:
    """The dashboard opens: on a terminal, without --no-tui, and without MNEMARA_NO_TUI=1."""
    return not no_tui and os.environ.get(NO_TUI_ENV) != "1" and on_terminal()


def open_dashboard(
    hostdb_path: Path, *, read_only: bool = False, until: HostThread[Any] | None = None
) -> None:
    """Run the dashboard over `hostdb_path` until the user quits it, or until the work of
    `until` ends (the host stopped from outside), whichever comes first."""
    import asyncio

    from panels.ui import make_app

    app = make_app(hostdb_path, read_only=read_only, stops_team=until is not None)

    async def front() -> None:
        loop = asyncio.get_running_loop()

        def close() -> None:  # in the host's thread
            with suppress(RuntimeError):  # the loop is closed: the dashboard is gone already
                loop.call_soon_threadsafe(app.exit)

        if until is not None:
            until.when_done(close)
        await app.run_async()

    asyncio.run(front())


def dashboard_over(thread: HostThread[T], hostdb_path: Path, *, stopping: str) -> T:
    """Start the host's thread, show the dashboard over it, then stop the host (`stopping`
    is said while it stops) and return its work's result.

    Ctrl-C before the dashboard is up (or a dashboard that fails) stops the host too, then
    the exception goes on.
    """
    try:
        thread.start()
        open_dashboard(hostdb_path, until=thread)
    except BaseException:  # Ctrl-C while starting, or a dashboard that failed: stop all the same
        with suppress(Exception):
            thread.stop()
        raise
    if thread.done:
        typer.echo("(the host stopped: the dashboard closed)", err=True)
    else:
        typer.echo(stopping, err=True)
    return thread.stop()
