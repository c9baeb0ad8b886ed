"""Tool calls through the real CLI: what the policy allows runs, what it refuses never runs.

Each test runs a whole session turn: our prompt, the bundled CLI, the rehearsal model asking
for a tool, our approval gate deciding, the CLI running (or not running) the tool, and the
model's follow-up request carrying the result. Proof is taken from the file system and from
the request bytes the model service received.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig, ToolPolicy, default_tool_policies
from runtime.turn.driver import TextDelta, ToolCall, ToolResult, Usage
from runtime.turn.events import SessionEvent, TurnCommitted
from runtime.turn.prompt import HEAD_TEXT

from .conftest import ROLE_DOC, Rehearse, Rig

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def run_turn(rig: Rig, text: str) -> list[SessionEvent]:
    async with rig.session() as session:
        return [event async for event in session.turn(text)]


def text_of(events: list[SessionEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def tool_results(events: list[SessionEvent]) -> list[ToolResult]:
    return [e for e in events if isinstance(e, ToolResult)]


ALLOWED_BASH = """
[[panels.eng.replies]]
when = { user_text_contains = "make the file" }
content = [
  { text = "Making it. " },
  { tool_use = "Bash", input = { command = "touch made.txt && echo done" } },
]

[[panels.eng.replies]]
when = { tool_result_contains = "done" }
text = "made.txt is there."
"""


async def test_text_and_an_allowed_bash_call_that_really_runs(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    bash = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=(r"touch made\.txt", "echo done"))
    others = tuple(p for p in default_tool_policies() if p.tool != "Bash")
    config = InstanceConfig(allowed_tools=(bash, *others))
    async with rehearse(ALLOWED_BASH, config=config) as rig:
        events = await run_turn(rig, "please make the file")

    assert (rig.work / "made.txt").is_file()  # the CLI ran the command, in the session's cwd
    assert text_of(events) == "Making it. made.txt is there."
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.name == "Bash" and call.input["command"] == "touch made.txt && echo done"
    (result,) = tool_results(events)
    assert not result.is_error and "done" in result.content
    assert any(isinstance(e, Usage) and e.prompt_tokens > 0 for e in events)
    assert isinstance(events[-1], TurnCommitted)

    first, second = rig.requests()
    # Our layout reached the service verbatim: the role doc as a system block, our head block
    # (after the CLI's own reminders) and the input last; the follow-up carries the tool's
    # real output.
    assert ROLE_DOC in [block["text"] for block in first["system"]]  # type: ignore[attr-defined]
    texts = [block["text"] for block in first["messages"][0]["content"]]  # type: ignore[index]
    assert HEAD_TEXT in texts and texts[-1] == "please make the file"
    assert "done" in json.dumps(second["messages"][-1])  # type: ignore[index]


DENIED_BASH = """
[[panels.eng.replies]]
when = { user_text_contains = "denied file" }
content = [{ tool_use = "Bash", input = { command = "touch denied.txt" } }]

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "Understood, I will not."
"""


async def test_a_bash_call_the_policy_refuses_never_runs(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    # Default policy: Bash asks; a session opened without an asker is headless and says no.
    async with rehearse(DENIED_BASH) as rig:
        events = await run_turn(rig, "make the denied file")

    assert not (rig.work / "denied.txt").exists()
    (result,) = tool_results(events)
    assert result.is_error and "Bash call not run" in result.content
    assert text_of(events) == "Understood, I will not."
    follow_up = rig.requests()[-1]["messages"][-1]  # type: ignore[index]
    assert "Bash call not run" in json.dumps(follow_up)


async def test_a_read_outside_the_allowed_area_is_refused(
    rehearse: Rehearse, anyio_backend: str, tmp_path: Path
) -> None:
    secret = tmp_path / "outside" / "secret.txt"
    script = f"""
[[panels.eng.replies]]
when = {{ user_text_contains = "read it" }}
content = [{{ tool_use = "Read", input = {{ file_path = "{secret}" }} }}]

[[panels.eng.replies]]
when = {{ tool_result_contains = "" }}
text = "I cannot read that file."
"""
    async with rehearse(script) as rig:
        secret.write_text("TOP-SECRET-CONTENT\n", encoding="utf-8")
        events = await run_turn(rig, "please read it")

    (result,) = tool_results(events)
    assert result.is_error and "outside the allowed directories" in result.content
    sent = json.dumps(rig.requests())
    assert "outside the allowed directories" in sent  # the model was told why
    assert "TOP-SECRET-CONTENT" not in sent  # and never saw the file
