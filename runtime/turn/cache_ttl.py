"""How long a turn asks the prompt cache to keep what it writes: five minutes or one hour.

A five-minute entry costs 1.25x an input token to write and lapses five minutes after its last
use; a one-hour entry costs 2x and lasts an hour. A panel whose turns come seconds apart does
best with five minutes. A panel that waits minutes between turns (an operator thinking, a
team member waiting for work) would lose its whole cached transcript at every turn and write
it again, so it does better paying the higher write price once and reading the rest.

`auto` (the default) decides per turn from the panel's own rhythm: one hour when any of the
last `HISTORY` pauses between turns reached `LONG_PAUSE`, else five minutes. A pause is
measured from the end of one turn to the start of the next on the session's clock.

The service refuses a one-hour breakpoint after a five-minute one (in cache order: tools,
system, messages), so our marker and the CLI's must agree. The CLI reads two switches
(bundled CLI 2.1.x): `CLAUDE_CODE_PROMPT_CACHE_TTL` sets the lifetime of every breakpoint it
places, and `CLAUDE_CODE_MESSAGES_PROMPT_CACHE_TTL=5m` brings the ones it places in the
messages back to five minutes. So a one-hour turn keeps the system prompt and our transcript
(the part the next turn reads) for an hour, and the CLI's marker at the end of the turn's
exchange, read only by the turn's next request seconds later, for five minutes at the lower
write price. A five-minute turn says so explicitly: left unset, the CLI picks one hour by
itself on a subscription login, which would put its one-hour markers after ours.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Literal

CacheTtl = Literal["5m", "1h"]
TtlSetting = Literal["auto", "5m", "1h"]

# A pause this long is close enough to the five-minute lifetime that the next one may pass it.
LONG_PAUSE = 240.0
HISTORY = 3
CLI_TTL_ENV = "CLAUDE_CODE_PROMPT_CACHE_TTL"
CLI_MESSAGES_TTL_ENV = "CLAUDE_CODE_MESSAGES_PROMPT_CACHE_TTL"


def cache_marker(ttl: CacheTtl) -> dict[str, Any]:
    """Our `cache_control` value for a breakpoint with this lifetime."""
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


def cli_env(ttl: CacheTtl) -> dict[str, str]:
    """The CLI environment that puts its breakpoints in a valid order around ours."""
    if ttl == "1h":
        return {CLI_TTL_ENV: "1h", CLI_MESSAGES_TTL_ENV: "5m"}
    return {CLI_TTL_ENV: "5m"}


class TtlChooser:
    """Picks each turn's lifetime from the panel's setting and its recent pauses."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._ended_at: float | None = None
        self._pauses: deque[float] = deque(maxlen=HISTORY)

    def start_turn(self, setting: TtlSetting) -> CacheTtl:
        """The lifetime for the turn starting now (records the pause before it)."""
        if self._ended_at is not None:
            self._pauses.append(self.clock() - self._ended_at)
            self._ended_at = None
        if setting != "auto":
            return setting
        return "1h" if any(p >= LONG_PAUSE for p in self._pauses) else "5m"

    def peek(self, setting: TtlSetting) -> CacheTtl:
        """The lifetime a turn starting now would get, recording nothing (a warm spare's
        guess; a turn that gets another lifetime does not use that spare)."""
        if setting != "auto":
            return setting
        pauses = list(self._pauses)
        if self._ended_at is not None:
            pauses = [*pauses, self.clock() - self._ended_at][-HISTORY:]
        return "1h" if any(p >= LONG_PAUSE for p in pauses) else "5m"

    def end_turn(self) -> None:
        self._ended_at = self.clock()
