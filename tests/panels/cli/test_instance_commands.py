"""The instance commands from the shell: init, list, show, clear, delete, note, role, transfer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.window.rows import NewRow

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def role_doc(tmp_path: Path) -> Path:
    doc = tmp_path / "role.md"
    doc.write_text("# Role\nBe brief.\n", encoding="utf-8")
    return doc


def test_init_list_show_and_refuse_overwrite(mnemara_home: Path, role_doc: Path) -> None:
    code, out, _ = mnemara("init", "--instance", "scratch", "--role", str(role_doc))
    assert code == 0 and "created" in out
    assert (mnemara_home / "scratch" / "config.json").is_file()
    assert (mnemara_home / "scratch" / "turns.sqlite").is_file()
    code, out, _ = mnemara("list")
    assert code == 0 and out.startswith("scratch\t")
    code, out, _ = mnemara("show", "--instance", "scratch")
    assert code == 0 and "the window is empty" in out and "0/100 rows" in out
    code, _, err = mnemara("init", "--instance", "scratch")
    assert code == 4 and "already exists" in err


@pytest.mark.parametrize("name", ["../x", "a/b", "..", "_teams", "-rf", ""])
def test_path_tricks_in_names_are_refused(name: str, mnemara_home: Path) -> None:
    code, _, err = mnemara("init", "--instance", name)
    assert code == 4 and "invalid instance name" in err
    assert not (mnemara_home.parent / "x").exists()


def test_role_doc_that_is_a_directory_or_binary_is_refused(tmp_path: Path) -> None:
    assert mnemara("init", "--instance", "r")[0] == 0
    code, _, err = mnemara("role", "--instance", "r", "--set", str(tmp_path))
    assert code == 7 and "directory" in err
    blob = tmp_path / "blob.md"
    blob.write_bytes(b"\x00\x01\x02")
    code, _, err = mnemara("role", "--instance", "r", "--set", str(blob))
    assert code == 7 and "binary" in err


def test_corrupt_config_names_file_and_field(mnemara_home: Path) -> None:
    assert mnemara("init", "--instance", "c")[0] == 0
    config = mnemara_home / "c" / "config.json"
    data = json.loads(config.read_text())
    data["max_window_turns"] = "lots"
    config.write_text(json.dumps(data))
    code, _, err = mnemara("show", "--instance", "c")
    assert code == 3 and "config.json" in err and "max_window_turns" in err
    config.write_text("{not json")
    code, _, err = mnemara("show", "--instance", "c")
    assert code == 3 and "not valid JSON" in err


def test_corrupt_store_is_an_error_not_a_fresh_window(mnemara_home: Path) -> None:
    assert mnemara("init", "--instance", "s")[0] == 0
    turns = mnemara_home / "s" / "turns.sqlite"
    for extra in ("-wal", "-shm"):
        Path(f"{turns}{extra}").unlink(missing_ok=True)
    turns.write_bytes(b"this is not sqlite" * 100)
    code, _, err = mnemara("show", "--instance", "s")
    assert code == 5 and "turns.sqlite" in err
    assert turns.read_bytes().startswith(b"this is not sqlite")


def _seed(paths: InstancePaths) -> None:
    with TurnStore.open(paths.turns) as store:
        ids = store.append(
            [
                NewRow("user", ({"type": "text", "text": "hello"},), 2),
                NewRow(
                    "assistant",
                    (
                        {"type": "thinking", "thinking": "hm", "signature": "sig"},
                        {"type": "text", "text": "hi"},
                    ),
                    3,
                    tokens_exact=True,
                ),
                NewRow("user", ({"type": "text", "text": "keep me"},), 2, pinned=True, label="k"),
            ]
        )
        store.upsert_slot("mood", "system", "calm")
        store.mark_segment("start")
        assert len(ids) == 3


def test_clear_keeps_pins_unless_all() -> None:
    assert mnemara("init", "--instance", "w")[0] == 0
    paths = InstancePaths.for_name("w")
    _seed(paths)
    code, out, _ = mnemara("clear", "--instance", "w")
    assert code == 0 and "removed 2 rows" in out
    with TurnStore.open(paths.turns) as store:
        assert [r.pinned for r in store.rows()] == [True]
        assert [s.label for s in store.slots()] == ["mood"]
    assert mnemara("clear", "--instance", "w", "--all")[0] == 0
    with TurnStore.open(paths.turns) as store:
        assert store.rows() == [] and store.slots() == []


def test_export_import_reproduces_the_store_exactly(tmp_path: Path) -> None:
    assert mnemara("init", "--instance", "src")[0] == 0
    assert mnemara("init", "--instance", "dst")[0] == 0
    _seed(InstancePaths.for_name("src"))
    dump = tmp_path / "w.jsonl"
    assert mnemara("export", "--instance", "src", "-o", str(dump))[0] == 0
    code, out, _ = mnemara("import", "--instance", "dst", str(dump))
    assert code == 0 and "3 rows" in out
    with (
        TurnStore.open(InstancePaths.for_name("src").turns) as a,
        TurnStore.open(InstancePaths.for_name("dst").turns) as b,
    ):
        assert a.rows() == b.rows() and a.slots() == b.slots() and a.markers() == b.markers()
    code, _, err = mnemara("import", "--instance", "dst", str(dump))
    assert code == 5 and "replace" in err
    code, out, _ = mnemara("export", "--instance", "src", "--markdown")
    assert code == 0 and "hello" in out and "mood" in out


def test_import_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    assert mnemara("init", "--instance", "n")[0] == 0
    dump = tmp_path / "future.jsonl"
    assert mnemara("export", "--instance", "n", "-o", str(dump))[0] == 0
    header, *rest = dump.read_text().splitlines()
    data = json.loads(header)
    data["version"] = 99
    dump.write_text("\n".join([json.dumps(data), *rest]) + "\n")
    code, _, err = mnemara("import", "--instance", "n", str(dump))
    assert code == 5 and "newer" in err


def test_original_mnemara_instance_migrates(mnemara_home: Path) -> None:
    assert mnemara("init", "--instance", "old")[0] == 0
    turns = mnemara_home / "old" / "turns.sqlite"
    turns.unlink()
    conn = sqlite3.connect(turns)
    conn.execute(
        "CREATE TABLE turns (id INTEGER PRIMARY KEY, ts TEXT, role TEXT, content TEXT,"
        " tool_uses TEXT, tokens_in INTEGER, tokens_out INTEGER, pin_label TEXT,"
        " compressed_read_stub INTEGER)"
    )
    conn.execute(
        "INSERT INTO turns VALUES (1, '2026-05-01T10:00:00+00:00', 'user', 'hi', NULL, 5, 0,"
        " NULL, 0)"
    )
    conn.execute(
        "INSERT INTO turns VALUES (2, '2026-05-01T10:00:05+00:00', 'assistant', 'hello', '[]',"
        " 0, 9, 'greeting', 0)"
    )
    conn.commit()
    conn.close()
    code, out, _ = mnemara("migrate", "--instance", "old")
    assert code == 0 and "2" in out
    code, out, _ = mnemara("migrate", "--all")
    assert code == 0 and "already" in out
    with TurnStore.open(turns) as store:
        rows = store.rows()
    assert [r.role for r in rows] == ["user", "assistant"]
    assert rows[1].pinned and rows[1].label == "greeting"


def test_note_and_delete(mnemara_home: Path) -> None:
    assert mnemara("init", "--instance", "d")[0] == 0
    code, out, _ = mnemara("note", "--instance", "d", "remember", "this")
    assert "noted in" in out
    assert code == 0
    notes = list((mnemara_home / "d" / "memory").glob("*.md"))
    assert len(notes) == 1 and "remember this" in notes[0].read_text()
    code, _, err = mnemara("delete", "--instance", "d")
    assert code == 2 and "--force" in err
    assert mnemara("delete", "--instance", "d", "--force")[0] == 0
    assert not (mnemara_home / "d").exists()


def test_version_and_help() -> None:
    code, out, _ = mnemara("--version")
    assert code == 0 and out.startswith("mnemara ")
    code, out, _ = mnemara("--help")
    assert code == 0
    for command in ("init", "run", "show", "export", "migrate", "bus"):
        assert command in out
