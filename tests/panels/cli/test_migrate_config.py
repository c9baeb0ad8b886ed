"""An instance the original mnemara's `init` made: `show` and `run` work on it as it is, and
`migrate` rewrites its config in our forms once, keeping the original file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runtime.instance.config import DEFAULT_SILENT_TYPES
from tests.runtime.test_config_original import ORIGINAL_INIT_CONFIG

ROOT = Path(__file__).resolve().parents[3]
runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    from panels.cli.main import app

    result = runner.invoke(app, list(args), prog_name="mnemara")
    return result.exit_code, result.stdout, result.stderr


def original_instance(home: Path, name: str = "orig", config: str = ORIGINAL_INIT_CONFIG) -> Path:
    """The directory the original's `init` leaves: config, permissions, three empty folders."""
    root = home / name
    for folder in ("memory", "wiki", "index"):
        (root / folder).mkdir(parents=True)
    (root / "config.json").write_text(config)
    (root / "permissions.json").write_text("{}\n")
    return root


def backups(root: Path) -> list[Path]:
    return sorted(root.glob("config.json.bak-*"))


def test_show_works_on_an_original_instance(mnemara_home: Path) -> None:
    original_instance(mnemara_home)
    code, out, err = mnemara("show", "-i", "orig")
    assert code == 0, err
    assert "the window is empty" in out and "0/100 rows, 0/500000 tokens" in out


def test_run_starts_on_an_original_instance(mnemara_home: Path) -> None:
    original_instance(mnemara_home)
    script = ROOT / "examples" / "rehearsal" / "solo.toml"
    done = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", "run", "-i", "orig", "--no-tui",
         "--rehearsal", str(script)],
        cwd=ROOT, input="hello\n/quit\n", capture_output=True, text=True, timeout=90,
        env={**os.environ, "MNEMARA_HOME": str(mnemara_home)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "assistant: Hello. Ask me to write the notes file" in done.stdout


def test_migrate_rewrites_the_config_once_and_keeps_the_original(mnemara_home: Path) -> None:
    root = original_instance(mnemara_home)
    code, out, err = mnemara("migrate", "-i", "orig")
    assert code == 0, err
    config = root / "config.json"
    assert f"{config}: peer_poll_silent_types: null -> " in out
    assert "(null meant the default set)" in out
    [backup] = backups(root)
    assert backup.read_text() == ORIGINAL_INIT_CONFIG  # the original's bytes, as they were
    assert f"{config}: original kept at {backup}" in out
    data = json.loads(config.read_text())
    assert data["peer_poll_silent_types"] == list(DEFAULT_SILENT_TYPES)
    assert data["replay_cluster_within_category"] is False  # unknown to us, kept
    written = config.read_bytes()

    code, out, err = mnemara("migrate", "-i", "orig")
    assert code == 0, err
    assert f"{config}: already in our field forms" in out
    assert backups(root) == [backup] and config.read_bytes() == written
    assert mnemara("show", "-i", "orig")[0] == 0


def test_migrate_splits_a_silent_types_string_and_says_how_the_original_read_it(
    mnemara_home: Path,
) -> None:
    data = json.loads(ORIGINAL_INIT_CONFIG)
    data["peer_poll_silent_types"] = "ack,pong_ack"
    root = original_instance(mnemara_home, config=json.dumps(data, indent=2))
    code, out, err = mnemara("migrate", "--all")
    assert code == 0, err
    assert 'peer_poll_silent_types: "ack,pong_ack" -> ["ack", "pong_ack"]' in out
    assert "the original read this string character by character" in out
    assert json.loads((root / "config.json").read_text())["peer_poll_silent_types"] == [
        "ack",
        "pong_ack",
    ]
    assert len(backups(root)) == 1


@pytest.mark.parametrize("value", ['"lots"', "null"])
def test_migrate_stops_at_a_config_it_cannot_read(value: str, mnemara_home: Path) -> None:
    text = ORIGINAL_INIT_CONFIG.replace('"max_window_turns": 100', f'"max_window_turns": {value}')
    root = original_instance(mnemara_home, config=text)
    code, _, err = mnemara("migrate", "-i", "orig")
    assert code == 3
    assert err.startswith("mnemara: ") and err.count("\n") == 1
    assert "config.json: field 'max_window_turns'" in err
    assert (root / "config.json").read_text() == text and backups(root) == []
