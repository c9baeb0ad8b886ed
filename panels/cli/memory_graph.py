"""`mnemara memory graph query` and `mnemara memory graph rebuild` (registered in memory.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import reports_errors
from panels.cli.memory_common import JsonOpt, opened, shown
from panels.cli.options import InstanceOpt

if TYPE_CHECKING:
    from runtime.instance.home import InstancePaths
    from runtime.memory import Memory, QueryResult
    from runtime.memory.engines import GraphEngine


@reports_errors
def graph_query(
    cypher: Annotated[
        str, typer.Argument(metavar="CYPHER", help="A read-only Cypher query (MATCH ... RETURN).")
    ],
    instance: InstanceOpt,
    as_json: JsonOpt = False,
) -> None:
    """Run a read-only Cypher query on the graph (anything that writes is refused)."""
    from runtime.instance.config import load_config
    from runtime.instance.home import InstancePaths
    from runtime.policy.cypher import require_read_only

    require_read_only(cypher)  # refused before anything is opened
    paths = InstancePaths.for_name(instance).require()
    config = load_config(paths.config)
    if not config.graph_enabled:
        with opened(instance) as (_, memory):
            memory.graph()  # says the graph is off, and where to switch it on
    result = _query_read_only(paths, config.graph_engine, cypher)
    if as_json:
        typer.echo(json.dumps({"columns": result.columns, "rows": result.rows}, ensure_ascii=False))
        return
    typer.echo("\t".join(shown(column) for column in result.columns))
    for row in result.rows:
        typer.echo("\t".join(shown(_cell(row.get(column))) for column in result.columns))
    if not result.rows:
        typer.echo("(no rows)")


def _query_read_only(paths: InstancePaths, engine: GraphEngine, cypher: str) -> QueryResult:
    """The query on the instance's graph opened read-only (no byte written, no lease taken);
    an empty result when there is no graph yet. With ladybug, a writer's checkpoint being
    replayed refuses a read-only open for a moment: tried three times. kuzu refuses while a
    writer (a running host) holds the file, and the error says so."""
    from runtime.errors import EngineUnavailableError
    from runtime.memory import QueryResult
    from runtime.memory.engines import database_path
    from runtime.memory.graph import open_graph

    root = paths.root / "graph"
    if not database_path(root, engine).exists():
        if engine == "ladybug" and database_path(root, "kuzu").exists():
            typer.echo(
                f"mnemara: no ladybug graph yet, but the original mnemara's Kuzu graph is at "
                f"{database_path(root, 'kuzu')}: `mnemara migrate --instance {paths.name}` "
                'carries it over, or set graph_engine to "kuzu" in config.json to query it '
                "in place",
                err=True,
            )
        return QueryResult([], [])
    for attempt in range(3):
        try:
            graph = open_graph(root, engine, instance=paths.name, read_only=True)
            break
        except EngineUnavailableError as exc:
            if "recovery" not in str(exc) or attempt == 2:
                raise
            time.sleep(0.2)
    try:
        return graph.query(cypher)
    finally:
        graph.close()


def _cell(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


@reports_errors
def graph_rebuild(instance: InstanceOpt) -> None:
    """Clear the graph and build it again from the notes and wiki pages.

    A graph file the engine cannot open (corrupt, or another engine's) is set aside, never
    deleted, and an empty graph is built in its place.
    """
    from runtime.errors import EngineUnavailableError

    try:
        with opened(instance, ("memory graph rebuild", "rebuild its graph")) as (_, memory):
            counts = rebuild(memory)
    except EngineUnavailableError as exc:
        if exc.store != "graph" or exc.path is None or not exc.path.is_file():
            raise
        typer.echo(f"mnemara: set the unreadable graph aside as {set_aside(exc.path)}", err=True)
        with opened(instance, ("memory graph rebuild", "rebuild its graph")) as (_, memory):
            counts = rebuild(memory)
    notes, pages, nodes, edges = counts
    typer.echo(
        f"graph rebuilt from {notes} notes and {pages} wiki pages: {nodes} nodes, {edges} edges"
    )


def rebuild(memory: Memory) -> tuple[int, int, int, int]:
    """(notes, pages, nodes, edges) after linking every note and page into a cleared graph."""
    from runtime.memory.linking import rebuild_graph
    from runtime.memory.progress import progress_bar

    graph = memory.graph()
    notes, pages = memory.notes.atoms(), memory.wiki.atoms()
    bar = progress_bar(len(notes) + len(pages), "linking")
    try:
        nodes, edges = rebuild_graph(graph, notes, pages, bar)
    finally:
        bar.close()
    return len(notes), len(pages), nodes, edges


def set_aside(database: Path) -> Path:
    """Rename a graph file and its companions (`.wal`, ...) to `<name>.broken-<time>`."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for companion in sorted(database.parent.glob(f"{database.name}.*")):
        if ".broken-" not in companion.name:
            companion.rename(
                companion.with_name(
                    f"{database.name}.broken-{stamp}{companion.name[len(database.name) :]}"
                )
            )
    kept = database.with_name(f"{database.name}.broken-{stamp}")
    database.rename(kept)
    return kept
