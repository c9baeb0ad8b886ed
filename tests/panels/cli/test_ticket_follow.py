"""`send --wait` follows the turn that took the operator's input, not another panel's turn
or a turn of peer messages whose ids happen to be the same (issue 30).

With the team's bus foreign (or on PostgreSQL), operator input waits on the host's own bus:
its message ids and the team bus's are counted apart, so message 1 exists on both.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from panels.cli.steer import follow_ticket
from panels.hostdb import PanelRow, append_events, connect, set_meta, upsert_panels
from panels.hostdb.catalogue import Delivered, HostEvent, TurnEnded, VerbApplied


def _input(message: int) -> VerbApplied:
    """Command 1, input to the producer, applied as operator message `message`."""
    return VerbApplied(
        panel="producer", id=1, verb="input", by="operator", summary="", message=message,
        ok=True, outcome=f"queued as message {message}",
    )  # fmt: skip


def _ended(panel: str, turn: int, outcome: str = "done") -> TurnEnded:
    return TurnEnded(
        panel=panel, turn=turn, outcome=outcome, error=None, tool_calls=0, input_tokens=0,
        output_tokens=0, usd=0.0,
    )  # fmt: skip


def _team(home: Path, events: list[HostEvent]) -> None:
    state = home / "_teams" / "crew"
    state.mkdir(parents=True)
    conn = connect(state / "host.sqlite")
    upsert_panels(
        conn, [PanelRow("producer", "producer", "idle"), PanelRow("frontend", "w", "idle")]
    )
    set_meta(conn, {"bus": str(home / "shared.db"), "operator_bus": str(state / "bus.sqlite")})
    append_events(conn, [(float(n), e) for n, e in enumerate(events)])
    conn.close()


def test_the_ticket_is_the_operator_input_turn_of_the_panel_it_was_given_to(
    mnemara_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _team(
        mnemara_home,
        [
            _input(1),
            # Another panel's turn took peer message 1 of the team's bus.
            Delivered(panel="frontend", turn=1, ids=(1,), senders=("producer",)),
            _ended("frontend", 1),
            # The producer's own turn of peer messages: id 1 of the team's bus, not ours.
            Delivered(panel="producer", turn=1, ids=(1,), senders=("frontend",)),
            _ended("producer", 1, "failed"),
            # The operator's input: id 1 of the host's own bus, from `operator`.
            Delivered(panel="producer", turn=2, ids=(1,), senders=("operator",)),
            _ended("producer", 2),
        ],
    )
    follow_ticket("crew", 1, wait=30.0)
    assert capsys.readouterr().out == "turn 2 of producer done\n"


def test_a_failed_operator_turn_exits_one(mnemara_home: Path) -> None:
    _team(
        mnemara_home,
        [
            _input(4),
            Delivered(panel="producer", turn=3, ids=(2, 4), senders=("frontend", "operator")),
            _ended("producer", 3, "failed"),
        ],
    )
    with pytest.raises(typer.Exit) as caught:
        follow_ticket("crew", 1, wait=30.0)
    assert caught.value.exit_code == 1


def test_a_row_that_claims_to_be_the_operator_on_another_bus_is_not_the_ticket(
    mnemara_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A foreign table's row written as `operator`, to the same panel, with the same id as
    the input: the sender cannot tell the buses apart, the bus identity does."""
    given = VerbApplied(
        panel="producer", id=1, verb="input", by="operator", summary="", message=7,
        bus="host-own", ok=True, outcome="queued as message 7",
    )  # fmt: skip
    _team(
        mnemara_home,
        [
            given,
            Delivered(panel="producer", turn=1, ids=(7,), senders=("operator",), bus="shared"),
            _ended("producer", 1, "failed"),
            Delivered(panel="producer", turn=2, ids=(7,), senders=("operator",), bus="host-own"),
            _ended("producer", 2),
        ],
    )
    follow_ticket("crew", 1, wait=30.0)
    assert capsys.readouterr().out == "turn 2 of producer done\n"
