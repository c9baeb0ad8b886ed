"""`mnemara rehearse`: an instance's turns through the real CLI against a script file."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.rehearsal.env import rehearsal_env
from runtime.store import TurnStore
from runtime.window.rows import text_of

pytestmark = pytest.mark.e2e

SCRIPT = """
[panels.reviewer]
fallback_text = "Nothing else."

[[panels.reviewer.replies]]
when = { user_text_contains = "hello" }
text = "Hello, I review diffs."

[[panels.reviewer.replies]]
when = { user_text_contains = "status" }
text = "All reviews are done."
"""


@pytest.fixture
def script(tmp_path: Path, mnemara_home: Path) -> Path:
    paths = InstancePaths.for_name("rev", mnemara_home)
    paths.root.mkdir()
    paths.role.write_text("# Role\nReview diffs.\n", encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    path = tmp_path / "reviewer.toml"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def test_prompts_run_as_turns_and_print_replies_and_usage(script: Path, mnemara_home: Path) -> None:
    result = CliRunner().invoke(
        app,
        [
            "rehearse",
            "-i",
            "rev",
            "--script",
            str(script),
            "--prompt",
            "hello",
            "--prompt",
            "status?",
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "you> hello\nassistant: Hello, I review diffs.\n" in out
    assert "you> status?\nassistant: All reviews are done.\n" in out
    assert out.count("[turn: 1 request(s)") == 2
    assert "rehearsal total: 2 request(s)" in out and "cache read" in out
    with TurnStore.open(InstancePaths.for_name("rev", mnemara_home).turns) as store:
        stored = [text_of(r.blocks) for r in store.rows()]
    assert stored == ["hello", "Hello, I review diffs.", "status?", "All reviews are done."]


def test_without_prompts_it_is_the_line_repl(script: Path) -> None:
    result = CliRunner().invoke(
        app, ["rehearse", "-i", "rev", "--script", str(script)], input="hello\n/quit\n"
    )
    assert result.exit_code == 0, result.output
    assert "assistant: Hello, I review diffs." in result.stdout
    assert "rehearsal total: 1 request(s)" in result.stdout


def test_an_unknown_panel_is_refused_before_anything_runs(script: Path) -> None:
    result = CliRunner().invoke(
        app, ["rehearse", "-i", "rev", "--script", str(script), "--panel", "nobody"]
    )
    assert result.exit_code == 2
    assert "no panel 'nobody'; it has: reviewer" in result.stderr


def test_the_cli_env_cannot_reach_a_real_service(tmp_path: Path) -> None:
    env = rehearsal_env("http://127.0.0.1:9/p/x", tmp_path)
    assert env["ANTHROPIC_BASE_URL"] == "http://127.0.0.1:9/p/x"
    assert env["CLAUDE_CODE_USE_BEDROCK"] == env["CLAUDE_CODE_USE_VERTEX"] == ""
    assert env["HOME"] == str(tmp_path)


def test_the_coder_example_script_rehearses_a_refused_bash_call(
    mnemara_home: Path, tmp_path: Path
) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "rehearsal" / "coder.toml"
    paths = InstancePaths.for_name("coder-try", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    args = ["rehearse", "-i", "coder-try", "--script", str(example), "--prompt", "run the tests"]
    # Unconfined, the Bash call asks, and with --prompt no one answers: refused.
    result = CliRunner().invoke(app, [*args, "--sandbox", "off"])
    assert result.exit_code == 0, result.output
    assert "> tool: Bash" in result.stdout and "Bash call not run" in result.stdout
    assert "The test run was not approved" in result.stdout
    # In the sandbox (bubblewrap works here: CI installs it) the sandbox contains the call,
    # so it runs without asking.
    result = CliRunner().invoke(app, [*args, "--sandbox", "required"])
    assert result.exit_code == 0, result.output
    assert "> tool: Bash" in result.stdout and "Bash call not run" not in result.stdout
