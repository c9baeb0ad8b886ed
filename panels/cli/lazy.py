"""The `mnemara` command tree, built one command at a time as a run names it.

Why: typer turns every registered function into a click command each time the app is
called, reading each signature and evaluating its annotations; for our ~45 commands that is
about a fifth of `mnemara --help`, and any one run uses one command. `lazy_command(app)`
builds the root group alone (its callback's options) and gives it a `LazyCommands` mapping,
which builds a command, or a group with a lazy mapping of its own, the first time it is looked
up. Each is built by typer's own functions from the same registration, so it is the command
`typer.main.get_command(app)` would give (tests/panels/cli/test_startup.py compares the two).

A help listing needs only names and help lines: `Group` lists names without building, and
asks `LazyCommands.listed` for a stand-in that has the command's help and no parameters.
`Group` also keeps typer's validator library (pydantic) out of help: see `help_off_by_default`.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Iterator, MutableMapping
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup
from typer.main import (
    get_command_from_info,
    get_command_name,
    get_group_from_info,
    solve_typer_info_defaults,
)
from typer.models import CommandInfo, TyperInfo

from panels.cli.options import help_off_by_default

Entry = CommandInfo | TyperInfo | None  # None: a command added already built


class Group(TyperGroup):
    """The class of every `mnemara` group: lists its commands without building them."""

    # Any: typer vendors click (typer._click) and keeps those classes private.
    def get_help_option(self, ctx: Any) -> Any:
        return help_off_by_default(super().get_help_option(ctx))

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)  # names only: typer's own version builds every command

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """typer's listing, from stand-ins where a command is not built yet."""
        commands = self.commands
        listed = commands.listed if isinstance(commands, LazyCommands) else commands.__getitem__
        shown = [(name, listed(name)) for name in self.list_commands(ctx)]
        shown = [(name, command) for name, command in shown if not command.hidden]
        if not shown:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in shown)
        with formatter.section("Commands"):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in shown])


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands by name, in registration order, each built on first lookup."""

    def __init__(self, app: typer.Typer, settings: dict[str, Any]) -> None:
        self._settings = settings  # the root's pretty_exceptions_short, markup, suggestions
        self._entries: dict[str, Entry] = {}
        self._built: dict[str, Any] = {}
        for info in app.registered_commands:
            assert info.callback is not None, "a command needs a function"
            self._entries[info.name or get_command_name(info.callback.__name__)] = info
        for group in app.registered_groups:
            name = solve_typer_info_defaults(group).name
            if not name:
                raise TypeError("every sub-app of the mnemara tree needs a name (add_typer)")
            self._entries[name] = group

    def __getitem__(self, name: str) -> Any:
        if name not in self._built:
            entry = self._entries[name]  # KeyError: no such command, as with a dict
            if isinstance(entry, CommandInfo):
                built = get_command_from_info(
                    entry,
                    pretty_exceptions_short=self._settings["pretty_exceptions_short"],
                    rich_markup_mode=self._settings["rich_markup_mode"],
                )
            else:
                assert entry is not None
                built = lazy_group(entry, self._settings)
            self._built[name] = built
        return self._built[name]

    def __setitem__(self, name: str, command: Any) -> None:
        self._entries.setdefault(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._entries[name]
        self._built.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def built(self) -> list[str]:
        """The names looked up so far, which are the only ones turned into commands."""
        return list(self._built)

    def listed(self, name: str) -> Any:
        """What a help listing needs of `name` (help line, hidden, deprecated), unbuilt."""
        entry = self._entries[name]
        if name in self._built or entry is None:
            return self[name]
        if isinstance(entry, CommandInfo):
            assert entry.callback is not None
            # the same help text typer's get_command_from_info gives the built command
            text = (
                inspect.getdoc(entry.callback)
                if entry.help is None
                else inspect.cleandoc(entry.help)
            )
            cls: type[Any] = entry.cls or TyperCommand
            short_help, hidden, deprecated = entry.short_help, entry.hidden, entry.deprecated
        else:
            solved = solve_typer_info_defaults(entry)
            text, cls = solved.help, solved.cls or TyperGroup
            short_help, hidden, deprecated = solved.short_help, solved.hidden, solved.deprecated
        return cls(
            name=name,
            help=text,
            short_help=short_help,
            hidden=hidden,
            deprecated=deprecated,
        )


def lazy_group(info: TyperInfo, settings: dict[str, Any]) -> Any:
    """The group `info` registers, built without its commands, which `LazyCommands` holds."""
    app = info.typer_instance
    assert app is not None, "a group needs its typer app"
    # typer builds a group's commands from its app's lists: give it a copy with none.
    bare = copy.copy(app)
    bare.registered_commands = []
    bare.registered_groups = []
    bare_info = copy.copy(info)
    bare_info.typer_instance = bare
    group = get_group_from_info(
        bare_info,
        pretty_exceptions_short=settings["pretty_exceptions_short"],
        suggest_commands=settings["suggest_commands"],
        rich_markup_mode=settings["rich_markup_mode"],
    )
    group.commands = LazyCommands(app, settings)
    return group


def lazy_command(app: typer.Typer) -> Any:
    """The click group for `app`, as `typer.main.get_command(app)` gives it, built lazily.

    `app` must be a group (it has a callback); completion options are not added."""
    settings = {
        "pretty_exceptions_short": app.pretty_exceptions_short,
        "rich_markup_mode": app.rich_markup_mode,
        "suggest_commands": app.suggest_commands,
    }
    return lazy_group(TyperInfo(app), settings)
