"""`/rewind [N]` and `/rewind list`: in the solo REPL over a real host, and as the dashboard
reads them (the same verb, built by the REPL's table)."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.hostdb import verbs
from panels.slash import SlashError
from panels.ui.slash import Send, Shown, action_for
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import DriverEvent, TextDelta, TurnRequest, Usage
from runtime.turn.scripted import ScriptedDriver
from tests.panels.repl.screen import drive_repl


@pytest.fixture
def instance(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("solo", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text("ROLE", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    return paths


@pytest.mark.anyio
async def test_rewind_in_the_repl_lists_and_undoes_the_last_turn(
    instance: InstancePaths, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.md").write_text("the plan\n")

    def edits(request: TurnRequest) -> list[DriverEvent]:
        (work / "plan.md").write_text("rewritten by the turn\n")
        (work / "scratch.txt").write_text("made by the turn\n")
        return [TextDelta("edited"), Usage(10, 2)]

    driver = ScriptedDriver([edits])
    lines = ["edit it", "@edited@/rewind list", "@the newest@/rewind", "@rewind@/rewind x",
             "/quit"]  # fmt: skip
    out = await drive_repl(lines, driver, work)
    assert 'before turn 1: "edit it"; the newest' in out
    assert "files back to checkpoint 1 (taken before turn 1" in out
    assert "1 restored, 1 removed" in out and "removed: scratch.txt" in out
    assert "usage: /rewind [N]" in out
    assert (work / "plan.md").read_text() == "the plan\n" and not (work / "scratch.txt").exists()


def test_the_dashboard_sends_the_same_verb_and_points_at_the_list(tmp_path: Path) -> None:
    paths = InstancePaths("eng", tmp_path / "eng")
    assert action_for("/rewind 3", "eng", paths) == Send(verbs.Rewind(panel="eng", turn=3))
    assert action_for("/rewind", "eng", paths) == Send(verbs.Rewind(panel="eng"))
    listed = action_for("/rewind list", "eng", paths, "trio")
    assert isinstance(listed, Shown) and "mnemara rewind -t trio -p eng --list" in listed.text
    unnamed = action_for("/rewind list", "eng", paths)
    assert isinstance(unnamed, Shown) and "mnemara rewind -t TEAM -p eng --list" in unnamed.text
    for bad in ("/rewind x", "/rewind 1 2", "/rewind 0"):
        with pytest.raises(SlashError):
            action_for(bad, "eng", paths)
