"""Turns a driver's event stream into the assistant row to store."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from runtime.store import truncate_tool_result
from runtime.turn.driver import Cost, DriverEvent, TextDelta, Thinking, ToolCall, ToolResult, Usage
from runtime.window.rows import Block, NewRow, estimate_tokens


@dataclass
class TurnRecorder:
    """Collects one turn's output in order; tool results are cut to `result_cap` characters.

    `usage` is the turn's total: drivers report one `Usage` per model request, so they are
    summed. `cost_usd` is the last `Cost`, a running total whose final value is authoritative.
    """

    result_cap: int
    blocks: list[Block] = field(default_factory=list)
    usage: Usage | None = None
    cost_usd: float | None = None

    def add(self, event: DriverEvent) -> None:
        if isinstance(event, TextDelta):
            if self.blocks and self.blocks[-1].get("type") == "text":
                last = self.blocks[-1]
                self.blocks[-1] = {**last, "text": str(last["text"]) + event.text}
            else:
                self.blocks.append({"type": "text", "text": event.text})
        elif isinstance(event, Thinking):
            self.blocks.append(
                {"type": "thinking", "thinking": event.text, "signature": event.signature}
            )
        elif isinstance(event, ToolCall):
            self.blocks.append(
                {"type": "tool_use", "id": event.id, "name": event.name, "input": event.input}
            )
        elif isinstance(event, ToolResult):
            self.blocks.append(
                {
                    "type": "tool_result",
                    "tool_use_id": event.tool_use_id,
                    "content": truncate_tool_result(event.content, self.result_cap),
                    "is_error": event.is_error,
                }
            )
        elif isinstance(event, Usage):
            self.usage = event if self.usage is None else add_usage(self.usage, event)
        elif isinstance(event, Cost):
            self.cost_usd = event.usd

    def note(self, text: str) -> None:
        """Add a notice of our own (a stop, a halt) as its own text block."""
        self.blocks.append({"type": "text", "text": text})

    def final_blocks(self) -> tuple[Block, ...]:
        # Blank text blocks are dropped by the CLI when re-sent; never store them.
        return tuple(
            b for b in self.blocks if b.get("type") != "text" or str(b.get("text", "")).strip()
        )

    def rows(self) -> list[NewRow]:
        """The rows the turn stores: its assistant row, if it said or did anything, counted by
        the model's own output tokens when it reported them, else estimated."""
        blocks = self.final_blocks()
        if not blocks:
            return []
        usage = self.usage
        if usage is not None and usage.output_tokens > 0:
            return [NewRow("assistant", blocks, usage.output_tokens, tokens_exact=True)]
        return [NewRow("assistant", blocks, estimate_tokens(json.dumps(blocks)))]


def add_usage(a: Usage, b: Usage) -> Usage:
    """Two usages summed field by field."""
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cache_creation_input_tokens + b.cache_creation_input_tokens,
        a.cache_read_input_tokens + b.cache_read_input_tokens,
    )
