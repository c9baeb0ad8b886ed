"""`mnemara init | list | show | clear | delete | note`: one instance's files from the shell.

Commands that change or remove an instance hold its lease while they do (`hold_instance`), so
they refuse an instance a host is running and no host starts on it half-way through.
`show`, `list`, `export` only read, and write no byte of the instance: an original mnemara's
store is read as it is (TurnStore.open_read_only). `note` only appends to a memory file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import EXIT_CONFIG, EXIT_USAGE, fail, reports_errors
from panels.cli.options import InstanceOpt, not_negative

if TYPE_CHECKING:
    from runtime.instance.home import InstancePaths
    from runtime.instance.lane import Lane
    from runtime.instance.lease import Lease
    from runtime.memory.protocols import WikiStore


def hold_instance(paths: InstancePaths, command: str, action: str) -> Lease:
    """Lease the instance for `mnemara <command>`, or raise InstanceLeasedError (`action`).

    An original mnemara's instance not yet migrated is refused first, before the lease file
    is made: only `migrate` (which converts it, keeping a backup) and `delete` (which the user
    asked for by name) change its files."""
    from runtime.instance.lease import LeaseOwner, acquire_lease
    from runtime.store.schema import refuse_original

    if command not in ("migrate", "delete"):
        refuse_original(paths.turns)

    lease = acquire_lease(paths, LeaseOwner.this_process(f"`mnemara {command}`"), action=action)
    if lease.stale_owner is not None:
        typer.echo(
            f"mnemara: took over the stale lease of {lease.stale_owner.describe()}: "
            "that process is gone",
            err=True,
        )
    return lease


@reports_errors
def init(
    instance: InstanceOpt,
    role: Annotated[
        Path | None,
        typer.Option(
            "--role", metavar="FILE", help="Role doc (Markdown) to use as the system prompt."
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option("--model", metavar="NAME", help="Claude model id.")
    ] = None,
) -> None:
    """Create a new instance under MNEMARA_HOME (refuses to overwrite one)."""
    from runtime.errors import InstanceExistsError
    from runtime.instance.config import InstanceConfig, save_config
    from runtime.instance.home import InstancePaths
    from runtime.instance.lane import read_lane
    from runtime.store import TurnStore

    paths = InstancePaths.for_name(instance)
    if paths.root.exists():
        raise InstanceExistsError(
            f"instance {instance!r} already exists at {paths.root}; "
            f"use another name or `mnemara delete --instance {instance} --force` first",
            instance=instance,
        )
    if role is None and sys.stdin.isatty():
        answer = typer.prompt("Role doc path (blank to set later)", default="", show_default=False)
        role = Path(answer).expanduser() if answer.strip() else None
    config = InstanceConfig()
    if role is not None:
        read_lane(role)  # refuse a directory, binary or unreadable file, or a bad lane, now
        config = config.model_copy(update={"role_doc_path": str(role.resolve())})
    if model:
        config = config.model_copy(update={"model": model})
    paths.root.mkdir(parents=True)
    save_config(paths.config, config)
    TurnStore.open(paths.turns).close()
    typer.echo(f"created {paths.root}")
    if not config.role_doc_path:
        typer.echo(f"next: mnemara role --instance {instance} --set PATH")


@reports_errors
def list_() -> None:
    """List the instances under MNEMARA_HOME."""
    from runtime.errors import ConfigError
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths, list_instances, mnemara_home

    names = list_instances()
    if not names:
        typer.echo(f"no instances under {mnemara_home()}; create one with `mnemara init`")
        return
    broken = 0
    for name in names:
        paths = InstancePaths.for_name(name)
        try:
            cfg = load_config(paths.config)
            detail = f"model={cfg.model} role={cfg.role_doc_path or '-'}"
        except ConfigError as exc:
            broken += 1
            detail = f"(config problem: {exc})"
        typer.echo(f"{name}\t{detail}")
    if broken:
        # Every instance is listed first; the exit code then tells a script that one is unusable.
        raise fail(
            f"{broken} instance(s) above have a config problem: fix the files named", EXIT_CONFIG
        )


@reports_errors
def show(
    instance: InstanceOpt,
    n: Annotated[
        int,
        typer.Option(
            "-n", metavar="N", callback=not_negative, help="Show only the last N rows (0: all)."
        ),
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the rolling window, slots, token accounting, this session's spend and the lane
    the role doc declares (read-only). Exits 7 after printing when the role doc's lane cannot
    be read: the panel's next turn would halt on it."""
    from runtime.errors import RoleDocError
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths
    from runtime.instance.lane import read_lane
    from runtime.instance.replay_record import last_replay
    from runtime.store import TurnStore
    from runtime.window.inspect import describe_window

    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    # Read-only: an original mnemara's store is read as `migrate` would convert it, in memory.
    with TurnStore.open_read_only(paths.turns) as store:
        view = describe_window(store, config, last=n)
    replayed = last_replay(paths)
    role = Path(config.role_doc_path) if config.role_doc_path else None
    lane, problem = None, None
    try:
        lane = read_lane(role) if role is not None else None
    except RoleDocError as exc:
        problem = exc
    if as_json:
        shown = view.as_dict() | {"last_replay": replayed.as_dict() if replayed else None}
        shown["lane"] = None if lane is None else lane.as_dict()
        shown["lane_problem"] = None if problem is None else str(problem)
        typer.echo(json.dumps(shown, indent=2, ensure_ascii=False))
    else:
        typer.echo(view.as_text())
        typer.echo(replayed.summary() if replayed else "last replay: never (mnemara replay)")
        typer.echo(lane_text(role, lane, problem))
    if problem is not None:
        raise problem


def lane_text(role: Path | None, lane: Lane | None, problem: Exception | None) -> str:
    """The lane part of `show`: what the role doc declares, one key a line."""
    from peerbus.render import strip_controls

    if role is None:
        return "lane: none (the instance has no role doc)"
    shown = strip_controls(str(role))
    if problem is not None:
        return f"lane: unknown ({shown} cannot be read, see below)"
    if lane is None:
        return f"lane: none ({shown} has no front matter)"
    return "\n".join([f"lane (from {shown}):", *(f"  {line}" for line in lane.describe())])


@reports_errors
def clear(
    instance: InstanceOpt,
    all_: Annotated[bool, typer.Option("--all", help="Also drop pinned rows and slots.")] = False,
) -> None:
    """Wipe the rolling window; pinned rows and slots are kept unless --all."""
    from runtime.instance.home import InstancePaths
    from runtime.store import TurnStore

    paths = InstancePaths.for_name(instance).require()
    with hold_instance(paths, "clear", "clear its window"), TurnStore.open(paths.turns) as store:
        removed = store.clear(keep_pinned=not all_)
    kept = "" if all_ else " (pinned rows and slots kept; --all drops them too)"
    typer.echo(f"removed {removed} rows{kept}")


@reports_errors
def delete(
    instance: InstanceOpt,
    force: Annotated[bool, typer.Option("--force", help="Really delete everything.")] = False,
) -> None:
    """Delete an instance directory and everything in it (needs --force)."""
    from runtime.instance.home import InstancePaths
    from runtime.instance.lease import delete_instance

    paths = InstancePaths.for_name(instance).require()
    with hold_instance(paths, "delete", "delete it") as lease:
        if not force:
            raise fail(
                f"this deletes {paths.root} and all its files; add --force to confirm", EXIT_USAGE
            )
        delete_instance(lease)
    typer.echo(f"deleted {paths.root}")


@reports_errors
def note(
    instance: InstanceOpt,
    text: Annotated[list[str], typer.Argument(metavar="TEXT", help="The note's text.")],
    category: Annotated[
        str, typer.Option("--category", metavar="NAME", help="A category for the note.")
    ] = "note",
) -> None:
    """Append a note to today's memory file (memory/YYYY-MM-DD.md).

    It returns at once: the search index and the graph take the note in later, at the next
    search or `mnemara memory index`, or at the running host's next search.
    """
    from runtime.errors import MemoryStoreError
    from runtime.instance.home import InstancePaths
    from runtime.memory.notes import FileNotes
    from runtime.memory.pending import Pending, write_record
    from runtime.store.schema import refuse_original

    def wiki() -> WikiStore:
        from runtime.memory.wiki import FileWiki

        return FileWiki(paths.wiki)

    paths = InstancePaths.for_name(instance).require()
    refuse_original(paths.turns)  # an original mnemara's files change only by `migrate`
    note, page = write_record(FileNotes(paths.memory), wiki, " ".join(text), category)
    also = f" and {page.source}" if page else ""
    try:
        Pending(paths.memory).add([note.source, *([page.source] if page else [])])
    except MemoryStoreError as exc:  # the note is written; only its place in the queue is not
        typer.echo(f"noted in {note.source}{also}")
        typer.echo(
            f"mnemara: not queued for the search index ({exc}); "
            f"`mnemara memory index -i {instance}` takes it in",
            err=True,
        )
        return
    typer.echo(f"noted in {note.source}{also}; searchable after the next search or index")
