"""What the `mnemara memory` commands share: the instance's memory opened for one command, and
untrusted text shown on a terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.instances import hold_instance
from panels.cli.lazy import Group
from panels.cli.options import HELP_OPTIONS

if TYPE_CHECKING:
    from runtime.instance.home import InstancePaths
    from runtime.memory import Memory

APP_SETTINGS = {
    "cls": Group,
    "no_args_is_help": True,
    "add_completion": False,
    "pretty_exceptions_enable": False,
    "rich_markup_mode": None,
    "context_settings": HELP_OPTIONS,
}
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]


@contextmanager
def opened(
    instance: str, lease: tuple[str, str] | None = None
) -> Iterator[tuple[InstancePaths, Memory]]:
    """The instance's memory for one command, its engines closed at the end.

    With `lease` (command, action) the instance is leased first and let go last, after the
    engines are closed: a host starting meanwhile never finds the graph's file locked.
    Without, the command only reads, and the engines are opened so that they write nothing,
    unless notes written by `mnemara note` wait to be indexed and no host holds the instance.
    """
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths
    from runtime.instance.lease import InstanceLeasedError
    from runtime.memory import open_memory
    from runtime.memory.pending import Pending

    paths = InstancePaths.for_name(instance).require()
    with ExitStack() as stack:
        waiting = len(Pending(paths.memory).sources()) if lease is None else 0
        if waiting:
            # Notes `mnemara note` left waiting: indexed and linked now, under the lease, when
            # no host holds the instance (a running host takes them in at its next search).
            try:
                stack.enter_context(hold_instance(paths, "memory", "index new notes in it"))
                lease = ("memory", "index new notes in it")
                typer.echo(
                    f"mnemara: indexing {waiting} new note{'' if waiting == 1 else 's'} "
                    "written by `mnemara note` first",
                    err=True,
                )
            except InstanceLeasedError:
                typer.echo(
                    "mnemara: notes written by `mnemara note` are searchable after the running "
                    "host's next search",
                    err=True,
                )
        elif lease is not None:
            stack.enter_context(hold_instance(paths, *lease))
        config = load_config(paths.config)
        memory = stack.enter_context(open_memory(paths, config, read_only=lease is None))
        if waiting and lease is not None:
            memory.catch_up()  # now, whichever engine the command itself goes on to use
        yield paths, memory


def shown(text: str, limit: int | None = None) -> str:
    """Untrusted text on one line, cut to `limit`, hidden characters escaped."""
    from runtime.policy.display import escape_for_display

    line = " ".join(text.split())
    if limit is not None and len(line) > limit:
        line = line[: limit - 1] + "…"
    return escape_for_display(line)


def shown_page(text: str) -> str:
    """A page's lines as written, each with its hidden characters escaped."""
    from runtime.policy.display import escape_for_display

    lines = text.split("\n")
    return "\n".join(
        escape_for_display(line.removesuffix("\r").replace("\t", "    ")) for line in lines
    )
