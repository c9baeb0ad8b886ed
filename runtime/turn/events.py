"""What a session's turn yields besides the driver's own events, and the errors a failed turn
raises (runtime/turn/session.py)."""

from __future__ import annotations

from dataclasses import dataclass

from runtime.errors import CredentialsError, DriverError, PromptTooLongError, ServiceBusyError
from runtime.guard.halts import Halted
from runtime.turn.driver import DriverEvent, ErrorEvent

# The note a turn stopped half way ends with, in its assistant row.
STOPPED_NOTE = "[turn stopped before it finished]"


@dataclass(frozen=True)
class RoleWarning:
    message: str


@dataclass(frozen=True)
class Trimmed:
    evicted: tuple[int, ...]
    forced: tuple[int, ...]


@dataclass(frozen=True)
class TurnCommitted:
    user_row_id: int
    row_ids: tuple[int, ...]


SessionEvent = DriverEvent | RoleWarning | Trimmed | TurnCommitted | Halted


def error_for(event: ErrorEvent) -> DriverError:
    if event.kind == "credentials":
        return CredentialsError(event.message)
    if event.kind in ("rate_limited", "overloaded"):
        return ServiceBusyError(f"{event.message} (your input is kept; send it again later)")
    if event.kind == "prompt_too_long":
        return PromptTooLongError(
            f"{event.message}; lower max_window_tokens (/tokens) or evict rows (/evict)"
        )
    return DriverError(event.message)
