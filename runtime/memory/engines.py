"""The graph engines behind the Kuzu API: importing one safely and opening its database file.

ladybug (the maintained fork of Kuzu) and kuzu (archived, kept to open an original instance's
graph in place) share their Python API but not their files, and the two extension modules
register the same native types: with both imported, the first `Database` segfaults the
process. So an engine is imported here and only here, lazily, after checking that the other
one is not already loaded.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from runtime.errors import EngineUnavailableError

GraphEngine = Literal["ladybug", "kuzu"]
GRAPH_ENGINES: tuple[GraphEngine, ...] = ("ladybug", "kuzu")

# Each engine keeps its own file name, so switching engines never hands one the other's file.
DATABASE_FILES: dict[GraphEngine, str] = {"ladybug": "lbug_db", "kuzu": "kuzu_db"}
INSTALL_HINTS: dict[GraphEngine, str] = {
    "ladybug": "pip install 'ladybug>=0.22' (it comes with mnemara; reinstall mnemara)",
    "kuzu": "pip install 'mnemara[kuzu]'",
}


def database_path(root: Path, engine: GraphEngine) -> Path:
    return root / DATABASE_FILES[engine]


def rebuild_hint(instance: str | None) -> str:
    return f"run `mnemara memory graph rebuild --instance {instance or 'NAME'}`"


def import_engine(engine: GraphEngine) -> ModuleType:
    """The engine's module, or EngineUnavailableError when it is missing or cannot coexist."""
    if engine not in GRAPH_ENGINES:
        raise EngineUnavailableError(
            f"unknown graph engine {engine!r}; choose one of {', '.join(GRAPH_ENGINES)}",
            store="graph",
        )
    other = "kuzu" if engine == "ladybug" else "ladybug"
    if sys.modules.get(other) is not None:
        # Checked before the import: the crash comes later, on the first Database, and a
        # segfault cannot be caught.
        raise EngineUnavailableError(
            f"the graph engine {engine} cannot be loaded: {other} is already loaded in this "
            f"process, and the two crash together; use one graph engine per process "
            f"(run the other in a separate command)",
            store="graph",
        )
    try:
        return importlib.import_module(engine)
    except ImportError as exc:
        raise EngineUnavailableError(
            f"the graph engine {engine} is not installed ({exc}); {INSTALL_HINTS[engine]}",
            store="graph",
        ) from exc


def open_database(
    module: ModuleType, path: Path, instance: str | None, read_only: bool = False
) -> tuple[Any, Any]:
    """(database, connection) on `path`, or EngineUnavailableError saying what to do."""
    try:
        database = module.Database(str(path), read_only=read_only)
    except RuntimeError as exc:
        reason = str(exc).removeprefix("Runtime exception: ")
        if "lock" in reason.lower():
            advice = "another process has the graph open; stop it (a running host?) and retry"
        else:
            # Corrupt, written by the other engine, or by another storage version: the graph
            # is derived data, rebuilt from notes and the wiki.
            advice = f"{rebuild_hint(instance)} to rebuild it from notes and the wiki"
        raise EngineUnavailableError(
            f"the graph engine {module.__name__} cannot open {path.name}: {reason}; {advice}",
            store="graph",
            path=path,
        ) from exc
    try:
        return database, module.Connection(database)
    except RuntimeError as exc:
        database.close()
        raise EngineUnavailableError(
            f"the graph engine {module.__name__} cannot connect to {path.name}: {exc}",
            store="graph",
            path=path,
        ) from exc
