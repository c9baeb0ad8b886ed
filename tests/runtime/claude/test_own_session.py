"""The launcher that runs an unconfined CLI in a session of its own (runtime/claude/bundled.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.claude.bundled import own_session_cli
from tests.noexec_kit import ROOT_ONLY, run_on_noexec

# Stands in for the CLI: says its pid, its session and its process group.
PROBE = f"#!{sys.executable}\nimport os\nprint(os.getpid(), os.getsid(0), os.getpgid(0))\n"


def probe_cli(tmp_path: Path) -> Path:
    cli = tmp_path / "bin with space" / "claude"
    cli.parent.mkdir()
    cli.write_text(PROBE)
    cli.chmod(0o755)
    return cli


def test_the_cli_runs_in_a_session_of_its_own_as_the_process_the_sdk_started(
    tmp_path: Path,
) -> None:
    launcher = own_session_cli(tmp_path / "cli", probe_cli(tmp_path))
    assert launcher is not None and launcher.stat().st_mode & 0o777 == 0o700
    child = subprocess.Popen([str(launcher)], stdout=subprocess.PIPE, text=True)
    out, _ = child.communicate(timeout=30)
    pid, sid, group = (int(x) for x in out.split())
    assert pid == child.pid  # exec'd, not forked: the SDK's stop reaches the CLI itself
    assert sid == pid and group == pid
    assert sid != os.getsid(0) and group != os.getpgid(0)  # out of the caller's reach


def test_the_launcher_is_written_again_only_when_it_differs(tmp_path: Path) -> None:
    cli = probe_cli(tmp_path)
    launcher = own_session_cli(tmp_path / "cli", cli)
    assert launcher is not None
    stamp = launcher.stat().st_mtime_ns
    assert own_session_cli(tmp_path / "cli", cli) == launcher
    assert launcher.stat().st_mtime_ns == stamp
    launcher.write_text("#!/bin/sh\nexit 1\n")  # stale or tampered with
    assert own_session_cli(tmp_path / "cli", cli) == launcher
    assert str(cli) in launcher.read_text()
    assert [p.name for p in launcher.parent.iterdir()] == ["claude"]  # no temporary left


def test_without_setsid_a_cli_or_a_writable_folder_there_is_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = probe_cli(tmp_path)
    assert own_session_cli(tmp_path / "cli", tmp_path / "missing") is None
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert own_session_cli(blocked / "cli", cli) is None  # a folder under a file
    monkeypatch.setenv("PATH", str(tmp_path))  # no setsid on it
    assert own_session_cli(tmp_path / "cli", cli) is None


@ROOT_ONLY
def test_none_on_a_file_system_that_runs_nothing(tmp_path: Path) -> None:
    cli = probe_cli(tmp_path)
    mount = tmp_path / "noexec"
    check = (
        "from pathlib import Path; from runtime.claude.bundled import own_session_cli; "
        f"print(own_session_cli(Path({str(mount / 'cli')!r}), Path({str(cli)!r})))"
    )
    assert run_on_noexec(mount, check).strip() == "None"
