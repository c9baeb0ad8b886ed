"""Memory that outlives the window: notes, wiki, vector search, a property graph, and replay.

The seam (protocols.py) has one protocol per capability; notes.py and wiki.py are the file
stores, lance.py and embed.py the search index, graph.py the graph over the Kuzu API, fake.py
in-memory stand-ins for tests. memory.py joins them per instance (`open_memory`). Only this
package imports the heavy engines, and only inside the functions that open them.
"""

from runtime.memory.memory import Memory, Written, open_memory
from runtime.memory.model import Atom, GraphNode, Hit, Provenance, QueryResult

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
