"""Closing `attach` says what the team does now: it keeps running (and how to stop it), or
its host is not running."""

from __future__ import annotations

from panels.cli.dash import after_closing


def test_a_running_team_keeps_running_and_the_line_says_how_to_stop_it() -> None:
    assert after_closing("trio", True) == (
        "the team trio keeps running; `mnemara down -t trio` stops it"
    )


def test_a_stopped_host_is_not_said_to_keep_running() -> None:
    said = after_closing("trio", False)
    assert "keeps running" not in said and "not running" in said
