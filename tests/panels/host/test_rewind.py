"""Checkpoints through a real host: one before each turn, the `rewind` verb restoring one
between turns, the window's marker the next turn sees, and a checkpoint that cannot be taken
(a warning said once, or a halt when the team requires checkpoints)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.hostdb.verbs import Input, Rewind
from runtime.driver import DriverEvent, TurnRequest
from runtime.store import TurnStore
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio


def writes(work: Path, changes: dict[str, str | None]) -> Any:
    """A scripted turn that changes files in the working directory, as a tool would."""

    def turn(request: TurnRequest) -> list[DriverEvent]:
        for name, text in changes.items():
            if text is None:
                (work / name).unlink()
            else:
                (work / name).write_text(text, encoding="utf-8")
        return reply("changed")

    return turn


def prompt_text(request: TurnRequest) -> str:
    return "\n".join(str(b.get("text", "")) for b in request.blocks)


async def test_a_rewind_restores_the_files_of_before_a_turn_and_the_window_says_so(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    work = team.workdir
    (work / "kept.txt").write_text("as it was\n", encoding="utf-8")
    (work / "gone.txt").write_text("deleted by turn 2\n", encoding="utf-8")
    script = [
        writes(work, {"kept.txt": "turn 1\n"}),
        writes(work, {"kept.txt": "turn 2\n", "new.txt": "made by turn 2\n", "gone.txt": None}),
        reply("after"),
    ]
    async with start_host(team, {"a": script}) as (host, events, drivers):
        for n in (1, 2):
            await host.dispatch(Input(panel="a", text=f"turn {n}"))
            await events.wait("turn_ended", "a", count=n)
        taken = events.of("checkpoint", "a")
        assert [e.turn for e in taken] == [1, 2]
        before_two = taken[1].number
        outcome = await host.dispatch(Rewind(panel="a", turn=before_two))
        assert outcome.ok, outcome.text
        assert "1 restored, 1 removed, 1 recreated" in outcome.text
        assert (work / "kept.txt").read_text(encoding="utf-8") == "turn 1\n"
        assert (work / "gone.txt").read_text(encoding="utf-8") == "deleted by turn 2\n"
        assert not (work / "new.txt").exists()
        await host.dispatch(Input(panel="a", text="what now?"))
        await events.wait("turn_ended", "a", count=3)
        # The rewind took a checkpoint first: rewinding to it undoes the rewind.
        undo = await host.dispatch(Rewind(panel="a", turn=before_two + 1))
        assert undo.ok, undo.text
        assert (work / "kept.txt").read_text(encoding="utf-8") == "turn 2\n"
        assert (work / "new.txt").is_file() and not (work / "gone.txt").exists()
    seen = prompt_text(drivers["a"].requests[2])
    assert "[files rewound]" in seen and f"checkpoint {before_two}" in seen
    assert "restored: kept.txt" in seen and "removed: new.txt" in seen
    with TurnStore.open(host.team.state_dir.parents[1] / "a" / "turns.sqlite") as store:
        marks = [r for r in store.rows() if r.role == "system"]
    assert len(marks) == 2 and all("[files rewound]" in str(r.blocks) for r in marks)


async def test_only_the_operator_rewinds_and_an_unknown_checkpoint_is_refused(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "dog", dog="watchdog"))
    async with start_host(team, {"a": [reply()], "dog": []}) as (host, events, _):
        none_yet = await host.dispatch(Rewind(panel="a"))
        assert not none_yet.ok and "no checkpoints yet" in none_yet.text
        await host.dispatch(Input(panel="a", text="go"))
        await events.wait("turn_ended", "a")
        by_dog = await host.dispatch(Rewind(panel="a"), by="dog")
        assert not by_dog.ok and "only the operator" in by_dog.text
        unknown = await host.dispatch(Rewind(panel="a", turn=99))
        assert not unknown.ok and "no checkpoint 99" in unknown.text


def _break_store(tmp_path: Path) -> None:
    """A file where the panel's checkpoint folder goes: every checkpoint fails."""
    root = tmp_path / "mnemara-home" / "a"
    root.mkdir(parents=True)
    (root / "checkpoints").write_text("in the way\n", encoding="utf-8")


async def test_a_failing_checkpoint_is_said_once_and_the_turns_run(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    _break_store(tmp_path)
    team = make_team(tmp_path, panels("a"))
    async with start_host(team, {"a": [reply(), reply()]}) as (host, events, _):
        for n in (1, 2):
            await host.dispatch(Input(panel="a", text=f"turn {n}"))
            await events.wait("turn_ended", "a", count=n)
    said = [e.message for e in events.of("warning", "a") if "checkpoint" in e.message]
    assert len(said) == 1 and "runs without one" in said[0]
    assert [e.outcome for e in events.of("turn_ended", "a")] == ["done", "done"]


async def test_a_required_checkpoint_that_fails_halts_the_panel_and_keeps_its_message(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    _break_store(tmp_path)
    team = make_team(tmp_path, panels("a"), extra="[team.checkpoints]\nrequired = true\n")
    async with start_host(team, {"a": [reply()]}) as (host, events, drivers):
        await host.dispatch(Input(panel="a", text="keep me"))
        (ended,) = await events.wait("turn_ended", "a")
        assert ended.outcome == "refused"
        (halted,) = await events.wait("halt", "a")
        assert halted.rule == "checkpoint_failed"
        assert drivers["a"].requests == []
        waiting = await host.services.operator_bus.inbox("a@operator", limit=10)
        assert [m.id for m in waiting]  # given back, not consumed
