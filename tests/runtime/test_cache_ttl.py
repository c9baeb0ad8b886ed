"""The per-turn choice of prompt-cache lifetime (runtime/turn/cache_ttl.py), on a manual clock."""

from __future__ import annotations

import pytest

from runtime.rehearsal import ManualClock
from runtime.turn.cache_ttl import (
    LONG_PAUSE,
    CacheTtl,
    TtlChooser,
    TtlSetting,
    cache_marker,
    cli_env,
)


def run_turns(
    chooser: TtlChooser, clock: ManualClock, pauses: list[float], setting: TtlSetting = "auto"
) -> list[CacheTtl]:
    """The lifetime of each turn; `pauses[i]` seconds pass before turn i (the first ignored)."""
    chosen = []
    for pause in pauses:
        clock.advance(pause)
        chosen.append(chooser.start_turn(setting))
        clock.advance(3)  # the turn itself
        chooser.end_turn()
    return chosen


def test_turns_seconds_apart_keep_five_minute_entries() -> None:
    clock = ManualClock()
    assert run_turns(TtlChooser(clock), clock, [0, 2, 2, 2, 30]) == ["5m"] * 5


def test_a_pause_of_minutes_switches_to_one_hour_and_back_after_short_pauses() -> None:
    clock = ManualClock()
    chosen = run_turns(TtlChooser(clock), clock, [0, 2, LONG_PAUSE, 2, 2, 2, 2])
    # The pause counts for the next three turns, then the rhythm is short again.
    assert chosen == ["5m", "5m", "1h", "1h", "1h", "5m", "5m"]


def test_a_pause_just_under_the_threshold_stays_at_five_minutes() -> None:
    clock = ManualClock()
    assert run_turns(TtlChooser(clock), clock, [0, LONG_PAUSE - 1]) == ["5m", "5m"]


@pytest.mark.parametrize("setting", ["5m", "1h"])
def test_a_fixed_setting_wins_whatever_the_rhythm(setting: TtlSetting) -> None:
    clock = ManualClock()
    assert run_turns(TtlChooser(clock), clock, [0, 2, 900, 2], setting) == [setting] * 4


def test_the_cli_is_told_the_lifetime_either_way() -> None:
    assert cache_marker("5m") == {"type": "ephemeral"}
    assert cli_env("5m") == {"CLAUDE_CODE_PROMPT_CACHE_TTL": "5m"}
    assert cache_marker("1h") == {"type": "ephemeral", "ttl": "1h"}
    assert cli_env("1h") == {
        "CLAUDE_CODE_PROMPT_CACHE_TTL": "1h",
        "CLAUDE_CODE_MESSAGES_PROMPT_CACHE_TTL": "5m",
    }
