"""Checkpoints through a real host: one before each turn, the `rewind` verb restoring one
between turns, the window's marker the next turn sees, and a checkpoint that cannot be taken
(a warning said once, or a halt when the team requires checkpoints)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.hostdb.verbs import Input, Rewind
from runtime.errors import CheckpointError
from runtime.store import TurnStore
from runtime.turn.driver import DriverEvent, TurnRequest
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


async def test_the_cli_reaches_a_running_host_through_the_control_table(
    anyio_backend: str, tmp_path: Path, start_host: Any, mnemara_home: Path
) -> None:
    from typer.testing import CliRunner

    from panels.cli.main import app
    from panels.host.process import take_pid_file

    team = make_team(tmp_path, panels("a"))
    assert team.state_dir.parents[1] == mnemara_home  # the CLI finds this team's host
    work = team.workdir
    (work / "f.txt").write_text("before\n", encoding="utf-8")
    async with start_host(team, {"a": [writes(work, {"f.txt": "after\n"})]}) as (host, events, _):
        take_pid_file(team)  # as `mnemara up` does: the CLI sees a host running
        await host.dispatch(Input(panel="a", text="change it"))
        await events.wait("turn_ended", "a")

        def cli(*args: str) -> Any:
            return CliRunner().invoke(app, ["rewind", "-t", team.name, *args])

        listed = await anyio.to_thread.run_sync(cli, "--list")
        assert listed.exit_code == 0 and 'before turn 1: "change it"' in listed.stdout
        done = await anyio.to_thread.run_sync(cli, "-p", "a")
        assert done.exit_code == 0, done.stdout + done.stderr
        assert done.stdout.startswith("rewind: files back to checkpoint 1")
        (applied,) = await events.wait("command", "a", where=lambda e: e.verb == "rewind")
        assert applied.ok and applied.id is not None  # a control-table command, applied
    assert (work / "f.txt").read_text(encoding="utf-8") == "before\n"


def test_the_checkpointer_says_each_left_out_file_once_and_stops_walking_a_huge_area(
    tmp_path: Path,
) -> None:
    from panels.host.turns.checkpointer import make_checkpointer, may_write
    from runtime.instance.config import InstanceConfig, ToolPolicy

    team = make_team(tmp_path, panels("a"), extra="[team.checkpoints]\nmax_file_mb = 0.001\n")
    keeper = make_checkpointer(team, team.panels[0], tmp_path / "mnemara-home")
    assert keeper.areas == [team.workdir.resolve()]
    assert tmp_path / "mnemara-home" in keeper.exclude and team.state_dir in keeper.exclude
    (team.workdir / "big.bin").write_bytes(b"x" * 5000)
    first = keeper.news(keeper.take(1, "one"))
    assert len(first) == 1 and "big.bin" in first[0] and "max_file_mb" in first[0]
    assert keeper.news(keeper.take(2, "two")) == []  # said once a host run
    small = make_checkpointer(
        make_team(tmp_path, panels("b"), extra="[team.checkpoints]\nmax_files = 1\n"),
        make_team(tmp_path, panels("b")).panels[0],
        tmp_path / "mnemara-home",
    )
    (team.workdir / "more.txt").write_text("two files now\n")
    skipped = small.take(1, "one")
    assert skipped.checkpoint.recorded() == () and small.too_big == {str(small.areas[0])}
    with pytest.raises(CheckpointError, match="checkpoints are off for this host run"):
        small.take(2, "two")  # not walked again
    denied = tuple(ToolPolicy(tool=t, mode="deny") for t in ("Bash", "Edit", "Write"))
    assert not may_write(InstanceConfig(allowed_tools=denied))
    assert may_write(InstanceConfig())


def test_the_sandbox_s_stand_in_is_in_no_checkpoint_so_a_rewind_without_a_host_makes_none(
    tmp_path: Path,
) -> None:
    """A confined host holds an empty `.envrc` at the top of the working directory while its
    turns run (runtime/sandbox/placeholders.py). A checkpoint that held it put it back as a
    file of the user's when `mnemara rewind` ran after the host had stopped."""
    from panels.host.turns.checkpointer import make_checkpointer
    from runtime.checkpoint import CheckpointSettings, open_store, rewind

    team = make_team(tmp_path, panels("a"))
    work = team.workdir
    keeper = make_checkpointer(team, team.panels[0], tmp_path / "mnemara-home")
    (work / "notes.txt").write_text("before\n", encoding="utf-8")
    (work / ".envrc").touch()  # the stand-in, while the host runs
    taken = keeper.take(1, "one")
    assert [a.files for a in taken.checkpoint.areas] == [1]
    (work / "notes.txt").write_text("turn 1\n", encoding="utf-8")
    keeper.take(2, "two")
    (work / ".envrc").unlink()  # the host stopped: its stand-in is gone
    report = rewind(open_store(keeper.paths.root), 1, settings=CheckpointSettings())
    assert report.ok and "1 restored" in report.summary(), report.summary()
    assert (work / "notes.txt").read_text(encoding="utf-8") == "before\n"
    assert not (work / ".envrc").exists()
