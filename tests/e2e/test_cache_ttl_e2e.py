"""The prompt cache's lifetime through the real CLI: our marker and the CLI's agree.

The rehearsal model refuses (400) a request with a one-hour breakpoint after a five-minute
one, as the service does, so a turn that mixed them would fail here.
"""

from __future__ import annotations

from typing import Any

import pytest

from runtime.instance.config import InstanceConfig
from runtime.rehearsal import ManualClock, PanelScript, Reply, Rule, Script

from .conftest import Rehearse

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

# A turn that runs one tool: two requests, the second with the CLI's breakpoint moved on.
TOOL_TURN = Script(
    {"eng": PanelScript((Rule(Reply.tool("Bash", {"command": "true"}, text="Checking.")),))}
)


def markers(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every cache_control in the request, in cache order."""
    found = [b["cache_control"] for b in body.get("system", []) if "cache_control" in b]
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, list):
            found += [b["cache_control"] for b in content if "cache_control" in b]
    return found


def lifetimes(body: dict[str, Any]) -> list[str]:
    return [m.get("ttl", "5m") for m in markers(body)]


async def test_one_hour_turns_keep_the_prefix_an_hour_and_the_exchange_five_minutes(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    config = InstanceConfig(prompt_cache_ttl="1h")
    async with rehearse(TOOL_TURN, config=config) as rig, rig.session() as session:
        [e async for e in session.turn("run a check")]
    records = [r for r in rig.server.requests("eng") if r.source != "structured-default"]
    assert len(records) == 2 and all(r.status == 200 for r in records)
    for record in records:
        body = dict(record.body)
        system = [b["cache_control"] for b in body["system"] if "cache_control" in b]
        assert system and all(m.get("ttl") == "1h" for m in system)
        ours = [b for b in body["messages"][0]["content"] if b.get("cache_control", {}).get("ttl")]
        assert len(ours) == 1 and ours[0]["text"].startswith("<<mnemara transcript")
        assert lifetimes(body)[-1] == "5m"  # the CLI's own marker at the end of the messages
    usage = [r.usage for r in records if r.usage is not None]
    assert sum(u.ephemeral_1h_input_tokens for u in usage) > 0
    assert sum(u.ephemeral_5m_input_tokens for u in usage) > 0


async def test_auto_switches_to_one_hour_after_a_long_pause(
    rehearse: Rehearse, anyio_backend: str
) -> None:
    clock = ManualClock()
    async with rehearse("[panels.eng]\n") as rig, rig.session(clock=clock) as session:
        [e async for e in session.turn("first")]
        clock.advance(2)
        [e async for e in session.turn("soon after")]
        clock.advance(301)
        [e async for e in session.turn("after a pause")]
    bodies = rig.requests()
    assert len(bodies) == 3 and all(r.status == 200 for r in rig.server.requests("eng"))
    assert [set(lifetimes(b)) for b in bodies] == [{"5m"}, {"5m"}, {"1h", "5m"}]
    assert lifetimes(bodies[2])[:3] == ["1h", "1h", "1h"]  # the system prompt, then ours
