"""`mnemara role`: point an instance at a role doc, or download one once into it.

A downloaded doc is never fetched again by itself, so it cannot change behind the operator's
back (#36). Downloading again over a role doc with different text shows the diff and asks
(or needs `--yes`); `--sha256` pins the exact text expected. A download whose front matter
declares a lane shows that lane and asks too, the first download included (#28): a lane only
narrows what the policy allows, but it replaces the lane in force, and the operator sees
what it says before it steers a panel. A failed or refused download leaves the current role
doc and config.json as they were. Role docs carry no permissions.
"""

from __future__ import annotations

import difflib
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import EXIT_ROLE_DOC, EXIT_USAGE, fail, reports_errors
from panels.cli.instances import hold_instance
from panels.cli.options import InstanceOpt

if TYPE_CHECKING:
    from runtime.instance.home import InstancePaths


@reports_errors
def role(
    instance: InstanceOpt,
    set_: Annotated[
        Path | None,
        typer.Option("--set", metavar="FILE", help="Use this local Markdown file as the role doc."),
    ] = None,
    set_from_url: Annotated[
        str | None,
        typer.Option(
            "--set-from-url",
            metavar="URL",
            help="Download an https role doc once into the instance's role.md.",
        ),
    ] = None,
    sha256: Annotated[
        str | None,
        typer.Option(
            "--sha256",
            metavar="HEX",
            help="With --set-from-url: refuse the download unless its SHA-256 is this.",
        ),
    ] = None,
    yes: Annotated[
        bool,
        typer.Option("--yes", "-y", help="Replace a different current role doc without asking."),
    ] = False,
) -> None:
    """Show or set the role doc (re-read from disk on every turn)."""
    from runtime.instance.config import load_config, save_config
    from runtime.instance.home import InstancePaths

    paths = InstancePaths.for_name(instance).require()
    if set_ and set_from_url:
        raise fail("give either --set or --set-from-url, not both", EXIT_USAGE)
    if sha256 is not None and set_from_url is None:
        raise fail("--sha256 goes with --set-from-url", EXIT_USAGE)
    if set_ is None and set_from_url is None:
        typer.echo(load_config(paths.config).role_doc_path or "(no role doc set)")
        return
    # Leased before the download, so an instance in use is refused before anything is fetched,
    # and held until config.json is saved, so no host starts on the half-changed instance.
    with hold_instance(paths, "role", "change its role doc"):
        config = load_config(paths.config)
        target = _new_role_doc(paths, config.role_doc_path, set_, set_from_url, sha256, yes)
        save_config(paths.config, config.model_copy(update={"role_doc_path": str(target)}))
    typer.echo(f"role doc for {instance}: {target}")


def _new_role_doc(
    paths: InstancePaths,
    current: str | None,
    set_: Path | None,
    set_from_url: str | None,
    sha256: str | None,
    yes: bool,
) -> Path:
    """The role doc to point at: a checked local file, or one downloaded into the instance."""
    from runtime.instance.roledoc import read_role_doc

    if set_ is not None:
        target = set_.expanduser().resolve()
        _check_text(read_role_doc(target), str(target))
        return target
    import hashlib  # here, not at start-up: it loads OpenSSL

    from runtime.instance.config import write_text_atomic
    from runtime.instance.fetch import fetch_role_doc

    url = str(set_from_url)
    text = fetch_role_doc(url)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if sha256 is not None and digest != sha256.strip().lower():
        raise fail(
            f"{url}: the downloaded text has SHA-256 {digest}, not the {sha256} given with "
            "--sha256; nothing was changed",
            EXIT_ROLE_DOC,
        )
    _check_text(text, url)
    _confirm_lane(text, url, yes)
    _confirm_change(Path(current) if current else None, text, url, yes)
    write_text_atomic(paths.role, text)
    typer.echo(
        f"saved {len(text)} chars to {paths.role} (sha256 {digest}; never re-fetched; "
        "edit it freely)"
    )
    return paths.role


def _check_text(text: str, source: str) -> None:
    """Refuse a role doc whose lane (front matter) cannot be read: every turn would halt on
    it. Say which invisible characters (bidi controls, zero-width characters) it holds: they
    are kept, but the model reads them and a terminal does not show them."""
    from runtime.instance.lane import split_front_matter
    from runtime.instance.roledoc import role_text_flags

    split_front_matter(text, source)  # LaneError: exit 7, naming the line and the field
    flags = role_text_flags(text)
    if flags:
        typer.echo(
            f"note: {source} holds invisible characters the model reads but a terminal does "
            "not show: " + "; ".join(flags),
            err=True,
        )


def _confirm_lane(text: str, url: str, yes: bool) -> None:
    """Show the lane a downloaded role doc declares, and ask before it is saved."""
    from runtime.instance.lane import split_front_matter
    from runtime.policy.display import escape_for_display

    lane, _ = split_front_matter(text, url)
    if lane is None:
        return
    typer.echo("the download declares a lane (its front matter), which the panel will be held to:")
    for line in lane.describe():
        typer.echo(f"  {escape_for_display(line)}")
    typer.echo(
        "  (a lane only narrows what the permission policy allows; it grants nothing the "
        "policy does not)"
    )
    _ask(yes, url, "it declares a lane (above)", "save the role doc with this lane?")


def _ask(yes: bool, url: str, why: str, question: str) -> None:
    """Go on with --yes; else ask on a terminal, and refuse without one."""
    if yes:
        return
    if not sys.stdin.isatty():
        raise fail(
            f"{url}: not saved, because {why}; run again with --yes to save it", EXIT_ROLE_DOC
        )
    if not typer.confirm(question, default=False):
        raise fail(f"{url}: not saved; the role doc is unchanged", EXIT_ROLE_DOC)


def _confirm_change(current: Path | None, text: str, url: str, yes: bool) -> None:
    """Show how the download differs from the role doc in use, and ask before replacing it."""
    from runtime.errors import RoleDocError
    from runtime.instance.roledoc import read_role_doc

    if current is None:
        return
    try:
        old = read_role_doc(current)
    except RoleDocError:
        return  # nothing usable to compare with, and nothing usable is lost
    if old == text:
        return
    typer.echo(f"the download differs from the current role doc {current}:")
    typer.echo(role_doc_diff(old, text, str(current), url))
    _ask(
        yes,
        url,
        "it would change the role doc (diff above)",
        "replace the role doc with the download?",
    )


def role_doc_diff(old: str, new: str, old_name: str, new_name: str, limit: int = 200) -> str:
    """A unified diff, every line escaped for the terminal, at most `limit` lines."""
    from runtime.policy.display import escape_for_display

    lines = [
        escape_for_display(line)
        for line in difflib.unified_diff(
            old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""
        )
    ]
    if len(lines) > limit:
        lines = [*lines[:limit], f"... [{len(lines) - limit} more diff lines]"]
    return "\n".join(lines)
