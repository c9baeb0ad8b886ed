"""Our in-process MCP tool `write_memory`, called by the model through the real CLI."""

from __future__ import annotations

import pytest

from runtime.turn.driver import ToolResult
from runtime.turn.events import SessionEvent

from .conftest import Rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

WRITE_MEMORY = """
[[panels.eng.replies]]
when = { user_text_contains = "remember" }

[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__write_memory"
input = { text = "The parser lives in parse.py.", category = "insight" }

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "Noted."
"""


async def test_write_memory_is_served_in_process_and_its_note_written(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    async with rehearse(WRITE_MEMORY) as rig, rig.session() as session:
        events: list[SessionEvent] = [e async for e in session.turn("remember where the parser is")]

    tools = [tool["name"] for tool in rig.requests()[0]["tools"]]
    assert "mcp__mnemara__write_memory" in tools
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert not result.is_error, result.content
    (note_file,) = rig.paths.memory.glob("*.md")
    assert note_file.name[:4].isdigit() and note_file.suffix == ".md"  # YYYY-MM-DD.md
    note = note_file.read_text(encoding="utf-8")
    assert "insight" in note and "The parser lives in parse.py." in note


REMEMBER_SEARCH_LINK = """
[[panels.eng.replies]]
when = { user_text_contains = "remember and link" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__write_memory"
input = { text = "The parser lives in parse.py and fails on tabs.", category = "insight" }

[[panels.eng.replies]]
when = { tool_result_contains = "noted under" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__memory_search"
input = { query = "where is the parser", k = 2 }

[[panels.eng.replies]]
when = { tool_result_contains = "fails on tabs" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__graph_add_node"
input = { label = "module", id = "parser", properties = { file = "parse.py" } }

[[panels.eng.replies]]
when = { tool_result_contains = "node parser added" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__graph_add_node"
input = { label = "module", id = "tests", properties = { file = "test_parse.py" } }

[[panels.eng.replies]]
when = { tool_result_contains = "node tests added" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__graph_add_edge"
input = { from_id = "parser", to_id = "tests", relationship = "tested_by" }

[[panels.eng.replies]]
when = { tool_result_contains = "edge" }
[[panels.eng.replies.content]]
tool_use = "mcp__mnemara__graph_query"
input.cypher = "MATCH (a:Node)-[e:Edge]->(b:Node) RETURN a.id AS a, e.relationship AS r, b.id AS b"

[[panels.eng.replies]]
when = { tool_result_contains = "tested_by" }
text = "Remembered, found, and linked."
"""


async def test_the_model_remembers_searches_and_links_through_the_real_cli(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    async with rehearse(REMEMBER_SEARCH_LINK) as rig, rig.session() as session:
        events: list[SessionEvent] = [e async for e in session.turn("remember and link this")]

    outputs = [e for e in events if isinstance(e, ToolResult)]
    assert [r.is_error for r in outputs] == [False] * 6, [r.content for r in outputs]
    noted, found, _, _, linked, queried = (r.content for r in outputs)
    assert "also in the search index and graph" in noted
    assert "[1] memory/" in found and "fails on tabs" in found
    assert linked.startswith("edge ") and linked.endswith(" added")
    assert '"a": "parser"' in queried and '"r": "tested_by"' in queried
    # The search result reached the model as a tool result, not in the cached prefix.
    final = rig.requests()[-1]
    assert "fails on tabs" not in str(final["system"])
