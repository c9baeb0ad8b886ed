"""The agent's own tools, served to the model as the in-process MCP server `mnemara`.

`build_tools(ctx)` gives the panel's fixed tool list (fixed, because any change to the tool
list breaks the prompt cache): memory.py (write_memory, propose_role_amendment, log_choice),
recall.py (wiki_*; memory_search and memory_index when `rag_enabled`; graph_* when
`graph_enabled`),
window.py (slots, pins, list_window, tune_window, inspect_context), eviction.py (evict_*,
mark_segment), skeleton.py (read_skeleton, when `read_skeleton_enabled`). Parameters are typed
(params.py). Around the tools: manifest.py (the file-state manifest and the files a session
wrote), compress_reads.py and aftercare.py (post-turn window care), mcp_wire.py and
mcp_stderr.py (stdio MCP servers from the config, with their failures logged).
"""

from __future__ import annotations

from runtime.tools.context import ToolContext
from runtime.tools.eviction import eviction_tools
from runtime.tools.memory import memory_tools
from runtime.tools.recall import graph_tools, search_tools, wiki_tools
from runtime.tools.skeleton import skeleton_tools
from runtime.tools.window import window_tools
from runtime.turn.driver import ToolSpec

__all__ = ["ToolContext", "build_tools"]


def build_tools(ctx: ToolContext) -> tuple[ToolSpec, ...]:
    """The panel's tools, honouring the config switches as they are when the session opens."""
    specs = [*memory_tools(ctx), *wiki_tools(ctx), *window_tools(ctx), *eviction_tools(ctx)]
    if ctx.config.rag_enabled:
        specs += search_tools(ctx)
    if ctx.config.graph_enabled:
        specs += graph_tools(ctx)
    if ctx.config.read_skeleton_enabled:
        specs += skeleton_tools(ctx)
    return tuple(specs)
