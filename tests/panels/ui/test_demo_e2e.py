"""End to end: the dashboard attached to a real host running the demo team (producer, engineer,
watchdog) on the rehearsal model, through the bundled Claude Code CLI. Each panel's replies
arrive in its own pane, in the order the story has them; the operator answers the engineer's
approval from the modal; the watchdog's halt shows in the engineer's pane."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import anyio.abc
import pytest

from panels.host import Host
from panels.host.demo import EXAMPLE, REQUEST
from panels.host.thread import HostThread, StopFn, serve_host
from panels.hostdb import connect, submit_command
from panels.hostdb.verbs import Input
from panels.team import TeamSpec, load_team
from panels.ui.app import make_app
from panels.ui.modals import ApprovalScreen
from tests.panels.ui.conftest import transcript, until

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]

PRODUCER_SAYS = [
    "Two tasks. The engineer starts with the counter itself.",
    "Task 1 passes its test. Next: the --top option.",
    "Understood: the engineer was halted during task 2.",
]
ENGINEER_SAYS = ["Writing wordcount.py.", "Running the test.", "Working on --top."]


def demo_host(team: TeamSpec, home: Path) -> HostThread[Host]:
    """The demo team's host (real Claude drivers, rehearsal model) in a thread of its own."""

    async def work(*, task_status: anyio.abc.TaskStatus[StopFn]) -> Host:
        return await serve_host(Host(team, home=home, grace=10.0), task_status=task_status)

    return HostThread(work)


def in_order(text: str, parts: list[str]) -> bool:
    """Whether every part is in `text`, each after the one before."""
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


async def test_the_demo_team_streams_into_its_own_panes(tmp_path: Path) -> None:
    team_dir = tmp_path / EXAMPLE.name
    shutil.copytree(EXAMPLE, team_dir, ignore=shutil.ignore_patterns("work"))
    team = load_team(team_dir / "team.toml", home=tmp_path / "home")
    host = demo_host(team, tmp_path / "home")
    host.start()
    try:
        app = make_app(team.hostdb_path)
        async with app.run_test(size=(200, 50)) as pilot:
            await until(pilot, lambda: len(app.panes) == 3, within=30)
            conn = connect(team.hostdb_path, create=False)
            submit_command(conn, Input(panel="producer", text=REQUEST))
            conn.close()
            answered: list[str] = []

            def story_told() -> bool:
                if isinstance(app.screen, ApprovalScreen):  # the operator says yes
                    answered.append(app.screen.question.target)
                    app.screen.action_answer("yes")
                return "HALTED by" in transcript(app, "engineer") and in_order(
                    transcript(app, "producer"), PRODUCER_SAYS
                )

            try:
                await until(pilot, story_told, within=90)
            except AssertionError:
                shown = {name: transcript(app, name) for name in app.panes}
                raise AssertionError(f"the story did not reach the halt: {shown}") from None
            producer, engineer = transcript(app, "producer"), transcript(app, "engineer")
            assert in_order(engineer, ENGINEER_SAYS)
            assert not any(line in engineer for line in PRODUCER_SAYS)
            assert not any(line in producer for line in ENGINEER_SAYS)
            assert "watchdog" in engineer.split("HALTED by", 1)[1].split("\n", 1)[0]
            asked = [line for line in engineer.splitlines() if line.startswith("? asks")]
            assert asked and answered, "the engineer's approval was asked and answered here"
            assert "approval 1: yes" in engineer
    finally:
        host.stop()
