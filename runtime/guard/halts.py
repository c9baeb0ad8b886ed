"""Halt records: where the reason a panel stopped is written, and how a session reports it.

A halt record (runtime/guard/records.py: rule, message, turn, time, the calls with their
row ids, the figures of a budget) is written twice:

- to `debug.log`, as the guard makes it, as one line of kind "halt" (event `sentinel_halt` /
  `budget_halt`; shadow-mode records as `sentinel_halt_shadow`): the history of every halt;
- to the store's meta key `halt` (JSON, with the row ids of the calls once the turn is
  stored), the panel's current halt, which `mnemara show` and `inspect_context` print from
  any process. Resuming sets it to "" (no current halt), and so does opening a session with a
  guard of its own: its budgets and sentinel start fresh.

The session's spend (turns, requests, tokens, dollars, limits) goes to the meta key `spend`
after every turn, and the last turn's reported usage to `last_usage`, for the same readers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from runtime.guard.records import HaltRecord
from runtime.instance.debuglog import DebugLog
from runtime.store import AsyncTurnStore
from runtime.turn.driver import Usage

HALT_META = "halt"
SPEND_META = "spend"


@dataclass(frozen=True)
class Halted:
    """Session event: this turn ended the panel's run; `record` says why."""

    record: HaltRecord


def halt_fields(record: HaltRecord, user_row_id: int | None) -> dict[str, Any]:
    return {**record.as_dict(), "user_row_id": user_row_id}


def log_halt(debug: DebugLog, record: HaltRecord, *, user_row_id: int | None) -> None:
    """A halt, as it happens, to the history (`user_row_id`: the input of the turn it ended)."""
    debug.write("halt", f"{record.source}_halt", **halt_fields(record, user_row_id))


async def save_halt(store: AsyncTurnStore, record: HaltRecord, *, user_row_id: int | None) -> None:
    """The panel's current halt, for `mnemara show` and `inspect_context`."""
    fields = halt_fields(record, user_row_id)
    await store.set_meta(HALT_META, json.dumps(fields, sort_keys=True, default=str))


def log_shadow(debug: DebugLog, record: HaltRecord) -> None:
    """What shadow mode would have halted: logged, nothing stopped, no current halt set."""
    debug.write("halt", f"{record.source}_halt_shadow", **record.as_dict())


async def clear_halt(store: AsyncTurnStore, debug: DebugLog, record: HaltRecord | None) -> None:
    await store.set_meta(HALT_META, "")
    debug.write("info", "panel_resumed", rule=record.rule if record else None)


async def save_spend(store: AsyncTurnStore, spend: dict[str, Any]) -> None:
    await store.set_meta(SPEND_META, json.dumps(spend, sort_keys=True))


def turn_figures(
    usage: Usage | None, cost_usd: float | None, spend: dict[str, Any]
) -> dict[str, str]:
    """The meta values a turn stores with its commit: the usage the model service reported
    for it (`last_usage`), if any, and the session's spend so far."""
    figures = {SPEND_META: json.dumps(spend, sort_keys=True)}
    if usage is not None:
        fields = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_creation_input_tokens": usage.cache_creation_input_tokens,
            "cache_read_input_tokens": usage.cache_read_input_tokens,
            "cost_usd": cost_usd,
        }
        figures["last_usage"] = json.dumps(fields, sort_keys=True)
    return figures


def halted_message(panel: str, record: HaltRecord) -> str:
    return (
        f"panel {panel} is halted: {record.notice()} (turn {record.turn}). Your input was not "
        "sent; resume the panel to go on, then send it again."
    )
