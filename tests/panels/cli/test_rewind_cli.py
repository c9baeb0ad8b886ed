"""`mnemara rewind` from the shell, with no host running: it lists, rewinds holding the
instance's lease, notes the rewind in the window, and refuses bad input with the documented
exit code (2 usage, 1 failure, 4 instance) and one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from panels.hostdb import PanelRow, connect, set_meta, upsert_panels
from runtime.checkpoint import CheckpointSettings, open_store, take_and_prune
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.instance.lease import LeaseOwner, acquire_lease
from runtime.store import TurnStore

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def inst(mnemara_home: Path, tmp_path: Path) -> tuple[InstancePaths, Path]:
    """Instance `eng` with two checkpoints of its working directory (turns 1 and 2), and the
    host state of team `crew` that ran it (panel `eng`; no host running now)."""
    paths = InstancePaths.for_name("eng", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("one\n")
    store = open_store(paths.root)
    take_and_prune(store, [work], settings=CheckpointSettings(), turn=1, note="first")
    (work / "app.py").write_text("two\n")
    (work / "new.py").write_text("made by turn 1\n")
    take_and_prune(store, [work], settings=CheckpointSettings(), turn=2, note="second")
    (work / "app.py").write_text("three\n")
    state = mnemara_home / "_teams" / "crew"
    state.mkdir(parents=True)
    conn = connect(state / "host.sqlite")
    upsert_panels(conn, [PanelRow("eng", "worker", "idle"), PanelRow("lead", "producer", "idle")])
    set_meta(conn, {"instance:eng": str(paths.root)})
    conn.close()
    return paths, work


def test_list_then_rewind_then_undo(inst: tuple[InstancePaths, Path]) -> None:
    paths, work = inst
    code, out, _ = mnemara("rewind", "-t", "crew", "-p", "eng", "--list")
    assert code == 0, out
    assert "checkpoints of eng (" in out
    assert 'before turn 1: "first"; then 1 added, 1 changed' in out
    assert 'before turn 2: "second"; the newest' in out
    code, out, err = mnemara("rewind", "-i", "eng", "--turn", "1")
    assert code == 0, err
    assert out.startswith("rewind: files back to checkpoint 1 (taken before turn 1")
    assert "1 restored, 1 removed" in out and "removed: new.py" in out
    assert (work / "app.py").read_text() == "one\n" and not (work / "new.py").exists()
    with TurnStore.open(paths.turns) as store:
        (row,) = store.rows()
    assert row.role == "system" and "[files rewound]" in row.blocks[0]["text"]
    code, out, err = mnemara("rewind", "-t", "crew", "-p", "eng", "--turn", "3")  # undo
    assert code == 0, err
    assert (work / "app.py").read_text() == "three\n" and (work / "new.py").is_file()


def test_without_a_turn_the_last_turn_is_undone(inst: tuple[InstancePaths, Path]) -> None:
    _, work = inst
    code, out, err = mnemara("rewind", "-i", "eng")
    assert code == 0, err
    assert "checkpoint 2 (taken before turn 2" in out
    assert (work / "app.py").read_text() == "two\n"


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        ([], 2, "name the panel"),
        (["-i", "eng", "-t", "crew"], 2, "--instance alone"),
        (["-i", "eng", "--list", "--turn", "1"], 2, "--list lists"),
        (["-i", "eng", "--turn", "0"], 2, ""),
        (["-i", "eng", "--turn", "x"], 2, ""),
        (["-i", "eng", "--turn", "99"], 2, "no checkpoint 99"),
        (["-t", "crew", "-p", "ghost"], 2, "no panel 'ghost'"),
        (["-t", "crew"], 2, "name the panel with --panel"),
        (["-t", "ghost", "-p", "eng"], 10, "has no host state"),
        (["-i", "ghost"], 4, "no instance 'ghost'"),
        (["-i", "../x"], 4, "invalid instance name"),
    ],
)
def test_bad_input_is_refused_with_its_code(
    inst: tuple[InstancePaths, Path], args: list[str], code: int, says: str
) -> None:
    got, out, err = mnemara("rewind", *args)
    assert got == code, out + err
    assert says in err
    assert "Traceback" not in out + err


def test_no_checkpoints_is_a_failure_not_a_usage_error(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("fresh", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    code, _, err = mnemara("rewind", "-i", "fresh")
    assert code == 1 and "no checkpoints yet" in err
    code, out, _ = mnemara("rewind", "-i", "fresh", "--list")
    assert code == 0 and "(no checkpoints yet" in out


def test_an_instance_another_command_holds_is_refused(inst: tuple[InstancePaths, Path]) -> None:
    paths, work = inst
    with acquire_lease(paths, LeaseOwner.this_process("`mnemara clear`"), action="clear it"):
        code, _, err = mnemara("rewind", "-i", "eng", "--turn", "1")
    assert code == 4 and "mnemara clear" in err
    assert (work / "app.py").read_text() == "three\n"
