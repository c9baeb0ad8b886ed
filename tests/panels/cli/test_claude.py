"""`mnemara claude ARGS...` runs the CLI bundled in the SDK, with its arguments and exit code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.claude.bundled import bundled_cli

ROOT = Path(__file__).resolve().parents[3]

# Runs `mnemara claude ...` with the bundled CLI replaced by argv[1] (exec replaces the
# process, so this cannot run inside pytest's).
WITH_FAKE_CLI = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import runtime.claude.bundled as bundled
    from panels.cli.main import run_cli

    bundled.bundled_cli = lambda: Path(sys.argv[1])
    run_cli(["claude", *sys.argv[2:]])
    """
)


def test_the_bundled_cli_is_where_the_sdk_keeps_it() -> None:
    import claude_agent_sdk

    cli = bundled_cli()
    assert cli == Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    assert cli.is_file()


def test_arguments_the_terminal_and_the_exit_code_pass_through(tmp_path: Path) -> None:
    fake = tmp_path / "claude"
    fake.write_text('#!/bin/sh\necho "args: $*"\nread line\necho "read: $line"\nexit 7\n')
    fake.chmod(0o755)
    done = subprocess.run(
        [sys.executable, "-c", WITH_FAKE_CLI, str(fake), "auth", "login", "-h", "--x=1"],
        cwd=ROOT, input="typed\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 7
    assert done.stdout == "args: auth login -h --x=1\nread: typed\n"


@pytest.mark.e2e
def test_the_real_bundled_cli_answers() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", "claude", "--version"],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0 and "Claude Code" in done.stdout
    unknown = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", "claude", "--no-such-flag"],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert unknown.returncode == 1 and "unknown option" in unknown.stderr


@pytest.mark.parametrize(
    ("where", "says"),
    [
        ("missing", "the Claude Code CLI bundled in the SDK is missing"),
        ("not-executable", "the bundled CLI "),
        (None, "the Claude Agent SDK (claude-agent-sdk) is not installed"),
    ],
)
def test_a_missing_bundled_cli_is_a_clear_error(
    where: str | None, says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import runtime.claude.bundled as bundled

    path = None if where is None else tmp_path / where
    if where == "not-executable":
        assert path is not None
        path.write_text("#!/bin/sh\n")
        path.chmod(0o644)
    monkeypatch.setattr(bundled, "bundled_cli", lambda: path)
    result = CliRunner().invoke(app, ["claude", "auth", "login"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"mnemara: {says}")
    assert "pip install --force-reinstall claude-agent-sdk" in result.stderr
    assert os.environ.get("MNEMARA_HOME")  # the tests' own home, untouched
