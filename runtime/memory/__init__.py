"""Memory that outlives the window: notes, wiki, vector search, a property graph, and replay.

The seam (protocols.py) has one protocol per capability; notes.py and wiki.py are the file
stores, lance.py and embed.py the search index, graph.py the graph over the Kuzu API, fake.py
in-memory stand-ins for tests. memory.py joins them per instance (`open_memory`). Only this
package imports the heavy engines, and only inside the functions that open them.

The names below load on first use: `mnemara note` imports notes.py alone, and the package
must not bring memory.py (and with it the config's models) along.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.memory.memory import Memory, Written, open_memory
    from runtime.memory.model import Atom, GraphNode, Hit, Provenance, QueryResult

_HOMES = {
    "Memory": "runtime.memory.memory",
    "Written": "runtime.memory.memory",
    "open_memory": "runtime.memory.memory",
    "Atom": "runtime.memory.model",
    "GraphNode": "runtime.memory.model",
    "Hit": "runtime.memory.model",
    "Provenance": "runtime.memory.model",
    "QueryResult": "runtime.memory.model",
}

__all__ = [
    "Atom",
    "GraphNode",
    "Hit",
    "Memory",
    "Provenance",
    "QueryResult",
    "Written",
    "open_memory",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(home), name)
