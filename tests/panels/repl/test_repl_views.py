"""The line REPL takes `/context` and `/role_doc`, as the dashboard does: the first shows
where the next request's tokens go (the dashboard's own figures, runtime/window/budget.py)
and every row with its id and tokens; the second the role doc's path, lane and text, and
where to edit it."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.slash import help_text
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import Done, TextDelta, Usage
from runtime.turn.scripted import ScriptedDriver
from tests.panels.repl.screen import drive_repl

ROLE = "---\nwritable: [src]\n---\nYou count words.\n"


@pytest.fixture
def instance(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("solo", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text(ROLE, encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    return paths


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["trio"])  # the REPL runs on trio (run_solo)
async def test_context_and_role_doc_show_what_the_dashboard_shows(
    instance: InstancePaths, tmp_path: Path
) -> None:
    driver = ScriptedDriver([[TextDelta("Counted."), Usage(900, 4), Done()]])
    lines = ["hi", "/context", "/role_doc", "/role_doc vim", "/context 3", "/quit"]
    out = await drive_repl(lines, driver, tmp_path)
    assert "unknown command" not in out
    # /context: the budget's parts with how each is known, then the rows by id.
    assert "where the next request's input tokens go:" in out
    assert "last turn's input            900  reported" in out
    assert "window cap" in out and "(2 rows)" in out
    assert "#1     user" in out and "#2     assistant 4 tok" in out
    # /role_doc: path, the lane its front matter declares, the text, and where to edit it.
    assert f"role doc: {instance.role}" in out
    assert "lane: writable: src" in out and "You count words." in out
    assert "edit the file in your editor, and the panel reads it again" in out
    # Arguments are refused with the right form, not ignored.
    assert "/role_doc takes no arguments" in out and "/context takes no arguments" in out


def test_the_repl_help_lists_them() -> None:
    assert "/context" in help_text() and "/role_doc" in help_text()
