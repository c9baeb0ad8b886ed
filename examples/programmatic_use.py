"""Embed mnemara in your own code: create an instance, run two turns, read the window back.

Runs offline with the ScriptedDriver (no key, no network):

    .venv/bin/python examples/programmatic_use.py

To talk to a real model, replace the driver with `runtime.claude.ClaudeDriver()` and set
ANTHROPIC_API_KEY (or log in with the Claude Code CLI).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio

from runtime import open_session
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.turn.driver import Decision, Done, TextDelta, ToolCallRequest, Usage
from runtime.turn.scripted import ScriptedDriver


class AllowReads:
    """A tiny approver: reads are fine, everything else is refused."""

    async def decide(self, call: ToolCallRequest) -> Decision:
        if call.name == "Read":
            return Decision(allow=True)
        return Decision(allow=False, message=f"{call.name} is not allowed in this example")


async def main(home: Path) -> None:
    paths = InstancePaths.for_name("demo", home)
    paths.root.mkdir(parents=True)
    role = paths.root / "role.md"
    role.write_text("You are a terse assistant. Answer in one sentence.\n", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(role)))

    driver = ScriptedDriver(
        [
            [TextDelta("Hello! "), TextDelta("I read my role doc."), Usage(120, 9), Done()],
            [TextDelta("You said hello a moment ago."), Usage(160, 8), Done()],
        ]
    )
    async with open_session("demo", driver=driver, approver=AllowReads(), home=home) as session:
        for text in ("hello", "what did I say?"):
            print(f"you: {text}")
            print("assistant: ", end="")
            async for event in session.turn(text):
                if isinstance(event, TextDelta):
                    print(event.text, end="", flush=True)
            print()
        rows = await session.store.rows()
        print(f"\nthe window now holds {len(rows)} rows:")
        for row in rows:
            print(f"  #{row.id} {row.role}: {row.blocks[0].get('text')!r}")
    # The second request carried the first exchange as transcript blocks:
    second = driver.requests[1]
    print(f"second request: {len(second.blocks)} blocks, system prompt {second.system!r}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, Path(tmp))
