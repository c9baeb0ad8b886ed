"""`mnemara memory`: search, index, wiki pages and the graph of one instance, from a shell.

Commands that write (index, reindex, graph rebuild) hold the instance's lease, so they refuse
an instance a running host is using. search, the wiki commands and `graph query` only read, and
write no byte of the instance (not even a lease file), but for one thing: notes `mnemara note`
wrote without the engines are indexed and linked first, under the lease, when no host holds
the instance. An index that does not exist yet is not made by a read, and the graph is opened
read-only with either engine, so an original mnemara's Kuzu graph stays as it was. LanceDB
readers may run beside a writing process (150 searches beside a writer's 757 upserts, no
error); ladybug opens read-only beside a writer, kuzu refuses while a writer holds its file,
and the message says so.

Text read from memory is untrusted: every hidden character is shown as an escape.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, cast

import typer

from panels.cli import memory_graph
from panels.cli.errors import EXIT_USAGE, fail, reports_errors
from panels.cli.memory_common import APP_SETTINGS, JsonOpt, opened, shown, shown_page
from panels.cli.options import Command, InstanceOpt, TeamOpt

if TYPE_CHECKING:
    from runtime.instance.config import SearchMode

memory_app = typer.Typer(
    help="Search and maintain an instance's memory: notes, wiki pages, the index and the graph.",
    **APP_SETTINGS,  # type: ignore[arg-type]
)
wiki_app = typer.Typer(help="List and read wiki pages.", **APP_SETTINGS)  # type: ignore[arg-type]
graph_app = typer.Typer(help="Query and rebuild the graph.", **APP_SETTINGS)  # type: ignore[arg-type]
memory_app.add_typer(wiki_app, name="wiki")
memory_app.add_typer(graph_app, name="graph")
graph_app.command("query", cls=Command)(memory_graph.graph_query)
graph_app.command("rebuild", cls=Command)(memory_graph.graph_rebuild)

KINDS = ("note", "wiki")
PREVIEW_CHARS = 100


@memory_app.command(cls=Command)
@reports_errors
def search(
    query: Annotated[str, typer.Argument(metavar="QUERY", help="What to look for, in words.")],
    instance: InstanceOpt,
    k: Annotated[
        int,
        typer.Option("-k", metavar="N", min=1, max=100, help="How many results (1-100)."),
    ] = 5,
    kind: Annotated[
        str | None,
        typer.Option("--kind", metavar="note|wiki", help="Only notes, or only wiki pages."),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            metavar="hybrid|vector",
            help="hybrid: by meaning and by the query's exact words (ids, numbers, versions, "
            "names); vector: by meaning only. Default: rag_search_mode in config.json.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The notes and wiki pages that best match QUERY, by meaning and by its words; each says
    why ([meaning, words: ...]). Score: cosine similarity, 1 is the same meaning."""
    from runtime.memory.figures import fixed
    from runtime.memory.fulltext import SEARCH_MODES

    if kind is not None and kind not in KINDS:
        raise fail(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}", EXIT_USAGE)
    if mode is not None and mode not in SEARCH_MODES:
        raise fail(f"--mode must be one of {', '.join(SEARCH_MODES)}, not {mode!r}", EXIT_USAGE)
    with opened(instance) as (_, memory):
        hits = memory.search(query, k, kind, cast("SearchMode | None", mode))
        empty = not hits and memory.index().count() == 0
    if as_json:
        items = [
            {
                "source": hit.source,
                "kind": hit.kind,
                "category": hit.category,
                "score": round(hit.score, 3),
                "matched": list(hit.matched),
                "text": hit.text,
            }
            for hit in hits
        ]
        typer.echo(json.dumps(items, ensure_ascii=False))
        return
    if empty:
        typer.echo(f"(the search index is empty: run `mnemara memory index --instance {instance}`)")
    elif not hits:
        typer.echo("(no match)")
    for hit in hits:
        typer.echo(
            f"{fixed(hit.score)}  {hit.kind:<4}  {shown(hit.source)}  "
            f"{shown(hit.text, PREVIEW_CHARS)}  [{shown(hit.why())}]"
        )


@memory_app.command(cls=Command)
@reports_errors
def index(instance: InstanceOpt) -> None:
    """Bring the search index up to date with the notes and wiki (only changes are embedded)."""
    from runtime.memory.memory import sync_index
    from runtime.memory.progress import progress_bar

    with opened(instance, ("memory index", "index it")) as (_, memory):
        bar = progress_bar(0, "indexing")
        try:
            synced = sync_index(memory, bar)
        finally:
            bar.close()
    typer.echo(str(synced))


@memory_app.command(cls=Command)
@reports_errors
def reindex(instance: InstanceOpt) -> None:
    """Drop the search index and build it again from notes and wiki with the configured
    embedder (needed after changing rag_embed_url or rag_embed_model)."""
    from runtime.memory.lance import drop_lance_index
    from runtime.memory.memory import sync_index
    from runtime.memory.progress import progress_bar

    with opened(instance, ("memory reindex", "reindex it")) as (paths, memory):
        if not memory.config.rag_enabled:
            memory.index()  # raises: search is off, said the house way
        drop_lance_index(paths.index)
        bar = progress_bar(0, "indexing")
        try:
            synced = sync_index(memory, bar)
        finally:
            bar.close()
    typer.echo(f"reindexed: {synced.added} atoms embedded")


@wiki_app.command("ls", cls=Command)
@reports_errors
def wiki_ls(
    instance: InstanceOpt,
    prefix: Annotated[
        str, typer.Argument(metavar="PREFIX", help="Only pages whose name starts with it.")
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """List the wiki pages, sorted by name."""
    with opened(instance) as (_, memory):
        slugs = memory.wiki.pages(prefix)
    if as_json:
        typer.echo(json.dumps(slugs, ensure_ascii=False))
        return
    if not slugs:
        typer.echo(f"(no wiki pages under {shown(prefix)!r})" if prefix else "(no wiki pages)")
    for slug in slugs:
        typer.echo(slug)


@wiki_app.command("show", cls=Command)
@reports_errors
def wiki_show(
    slug: Annotated[str, typer.Argument(metavar="SLUG", help="The page, e.g. deploy/checklist.")],
    instance: InstanceOpt,
) -> None:
    """Print one wiki page."""
    with opened(instance) as (_, memory):
        text = memory.wiki.read(slug)
    if text is None:
        raise fail(
            f"no wiki page {shown(slug)!r} in instance {instance!r}; "
            f"`mnemara memory wiki ls --instance {instance}` lists them",
            EXIT_USAGE,
        )
    typer.echo(shown_page(text.rstrip("\n")))


@memory_app.command("quarantine", cls=Command)
@reports_errors
def quarantine(
    team: TeamOpt,
    release: Annotated[
        list[str] | None,
        typer.Option(
            "--release",
            metavar="PANEL:EPOCH:TURN",
            help="Lift one turn's quarantine (repeatable); --release-all lifts every one.",
        ),
    ] = None,
    release_all: Annotated[
        bool, typer.Option("--release-all", help="Lift every quarantine of the team.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """List (or release) the halted turns whose writes to the team's shared memory are held.

    A turn the host halted keeps what it wrote to the team wiki and graph, marked, and out of
    search, until it is released here.
    """
    from panels.cli.teams import team_state
    from runtime.memory.quarantine import Quarantine, parse_key, show_key

    name, state = team_state(team)
    if not state.is_dir():
        from panels.errors import NoHostError

        raise NoHostError(
            f"team {name!r} has no state under {state}; check the name with `mnemara list`",
            team=name,
        )
    ledger = Quarantine(state / "memory" / "quarantine.jsonl")
    entries = ledger.entries()
    wanted = [entry.key for entry in entries] if release_all else []
    for text in release or []:
        try:
            wanted.append(parse_key(text))
        except ValueError:
            raise fail(
                f"--release takes PANEL:EPOCH:TURN as listed by this command, not {text!r}",
                EXIT_USAGE,
            ) from None
    for key in wanted:
        if not ledger.release(key):
            raise fail(f"{show_key(key)} is not quarantined in team {name!r}", EXIT_USAGE)
        typer.echo(f"released {show_key(key)}: its writes are searchable again")
    if wanted:
        return
    if as_json:
        shown_entries = [{"turn": show_key(e.key), "reason": e.reason, "at": e.at} for e in entries]
        typer.echo(json.dumps(shown_entries, ensure_ascii=False))
        return
    if not entries:
        typer.echo(f"team {name!r}: nothing quarantined")
    for entry in entries:
        typer.echo(f"{show_key(entry.key)}\t{entry.at}\t{shown(entry.reason)}")
