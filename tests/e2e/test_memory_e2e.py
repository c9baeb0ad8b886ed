"""Our in-process MCP tool `write_memory`, called by the model through the real CLI."""

from __future__ import annotations

import pytest

from runtime.driver import ToolResult
from runtime.session import SessionEvent

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
