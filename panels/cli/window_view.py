"""The text and JSON that `mnemara show` and `/show` print for a window."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from runtime.config import InstanceConfig
from runtime.inspect import (
    SUMMARY_META_KEYS,
    WindowSummary,
    describe_row,
    format_summary,
    summarize,
)
from runtime.rows import Row, Slot
from runtime.store import TurnStore


@dataclass(frozen=True)
class WindowView:
    rows: list[Row]
    slots: list[Slot]
    summary: WindowSummary

    def as_text(self) -> str:
        lines = [describe_row(r) for r in self.rows]
        for slot in self.slots:
            lines.append(f"slot {slot.position}: {slot.label} ({slot.role}) = {slot.content}")
        if not lines:
            lines.append("(the window is empty)")
        lines.append("")
        lines.append(format_summary(self.summary))
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": [asdict(r) for r in self.rows],
            "slots": [asdict(s) for s in self.slots],
            "summary": asdict(self.summary) | {"source": self.summary.source},
        }


def describe_window(store: TurnStore, config: InstanceConfig, last: int = 0) -> WindowView:
    rows = store.rows()
    slots = store.slots()
    meta = {k: v for k in SUMMARY_META_KEYS if (v := store.get_meta(k))}
    summary = summarize(rows, slots, config, meta)
    shown = rows[-last:] if last > 0 else rows
    return WindowView(shown, slots, summary)
