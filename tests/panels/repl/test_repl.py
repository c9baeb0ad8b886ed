"""The solo line REPL as the face of a one-panel host: slash commands, streamed turns,
approvals asked on the terminal and answered through the host."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio
import pytest

from panels.repl.approve import parse_answer, question_text
from panels.repl.terminal import safe
from panels.slash import SlashError, parse, parse_token_count, resolve_model
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.policy.asking import Answer
from runtime.store import TurnStore
from runtime.turn.driver import (
    Done,
    DriverEvent,
    ErrorEvent,
    TextDelta,
    ToolCall,
    TurnRequest,
    Usage,
)
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
async def test_turn_streams_and_slash_commands_work(
    instance: InstancePaths, tmp_path: Path
) -> None:
    driver = ScriptedDriver(
        [
            [TextDelta("Hello "), TextDelta("there"), Usage(50, 4), Done()],
            [TextDelta("on sonnet"), Done()],
        ]
    )
    out = await drive_repl(
        ["hi", "/show", "/swap sonnet", "/tokens 500k", "/note keep this", "again", "/quit"],
        driver,
        tmp_path,
    )
    assert "assistant: Hello there" in out
    assert driver.requests[1].model == "claude-sonnet-4-6"  # /swap reached the running panel
    assert "#2     assistant 4 tok" in out  # exact count from reported usage, no ~
    assert "model is claude-sonnet-4-6 from the next turn (saved to its config)" in out
    assert "max_window_tokens is 500000" in out
    config = InstanceConfig.model_validate_json(instance.config.read_text())
    assert config.model == "claude-sonnet-4-6" and config.max_window_tokens == 500_000
    assert "keep this" in next(instance.memory.glob("*.md")).read_text()


@pytest.mark.anyio
async def test_ask_verdict_is_put_to_the_operator(instance: InstancePaths, tmp_path: Path) -> None:
    target = tmp_path / "made-by-agent.txt"
    driver = ScriptedDriver(
        [
            [ToolCall("t1", "Bash", {"command": f"touch {target}"}), Done()],
            [ToolCall("t2", "Bash", {"command": f"rm {target}"}), Done()],
        ]
    )
    out = await drive_repl(["make it", "?y", "remove it", "?n", "/quit"], driver, tmp_path)
    assert out.count("allow? ") == 2
    assert "Bash wants to run" in out
    results = [b for r in driver.requests for b in r.blocks]
    assert results  # both turns reached the driver
    assert "error: Bash call not run" in out  # the refusal reached the model as a tool result


@pytest.mark.anyio
async def test_unknown_and_malformed_commands_say_what_to_do(
    instance: InstancePaths, tmp_path: Path
) -> None:
    out = await drive_repl(
        ["/nonsense", "/tokens lots", "/evict wat", "/quit"], ScriptedDriver([]), tmp_path
    )
    assert "unknown command /nonsense; /help lists them" in out
    assert "not a token count" in out
    assert "usage: /evict" in out


def test_slash_parsing_helpers() -> None:
    assert parse("/exit").name == "quit"
    assert parse('/note "two words"').args == ("two words",)
    assert parse_token_count("1m") == 1_000_000 and parse_token_count("200,000") == 200_000
    assert resolve_model("2") == "claude-sonnet-4-6" and resolve_model("my-model") == "my-model"
    with pytest.raises(SlashError):
        resolve_model("9")
    with pytest.raises(SlashError):
        parse("/note 'unclosed")
    assert parse_answer("A", always_offered=True) is Answer.ALWAYS
    assert parse_answer("a", always_offered=False) is None
    assert safe("ok\x1b[31mred\x1b[0m\x07") == "okred"


BUNDLED_CLI = Path(__import__("claude_agent_sdk").__file__).parent / "_bundled" / "claude"


@pytest.mark.e2e
@pytest.mark.skipif(not BUNDLED_CLI.exists(), reason="the SDK's bundled Claude Code CLI is absent")
def test_run_without_credentials_says_how_to_provide_them(
    mnemara_home: Path, tmp_path: Path
) -> None:
    exe = shutil.which("mnemara", path=str(Path(sys.executable).parent))
    assert exe
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env |= {"HOME": str(tmp_path), "MNEMARA_HOME": str(mnemara_home)}
    subprocess.run(
        [exe, "init", "--instance", "scratch"],
        env=env,
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )
    done = subprocess.run(
        [exe, "run", "--instance", "scratch", "--no-tui"],
        input="hello\n/show\n/quit\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "ANTHROPIC_API_KEY" in done.stdout and "mnemara claude auth login" in done.stdout
    assert "ANTHROPIC_BASE_URL" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr
    assert "user      interrupted" in done.stdout  # the unanswered input is kept and marked


@pytest.mark.anyio
async def test_sentinel_halt_is_shown_and_resume_lets_the_panel_go_on(
    instance: InstancePaths, tmp_path: Path
) -> None:
    config = InstanceConfig.model_validate_json(instance.config.read_text())
    save_config(instance.config, config.model_copy(update={"runtime_sentinel": True}))
    driver = ScriptedDriver(
        [
            [ToolCall(f"p{i}", "Read", {"file_path": "/tmp/x"}) for i in range(3)] + [Done()],
            [TextDelta("back to work"), Done()],
        ]
    )
    out = await drive_repl(["poll", "again?", "/resume", "go on", "/quit"], driver, tmp_path)
    assert "[SENTINEL HALT]" in out and "/resume lets it go on." in out
    refused = out.split("/resume lets it go on.")[1].split("resumed:")[0]
    assert "[error]" in refused and "halted" in refused  # the turn while halted is refused
    assert len(driver.requests) == 2  # ... and never reached the model
    assert "resumed:" in out
    assert "assistant: back to work" in out


@pytest.mark.anyio
async def test_skeleton_and_compress_reads(instance: InstancePaths, tmp_path: Path) -> None:
    source = tmp_path / "mod.py"
    source.write_text('def f(a: int) -> int:\n    """Add one."""\n    return a + 1\n')
    out = await drive_repl(
        [f"/skeleton {source}", "/compress reads", "/quit"], ScriptedDriver([]), tmp_path
    )
    assert "def f(a: int) -> int" in out and "Add one." in out and "return a + 1" not in out
    assert "repeated reads stubbed in 0 rows" in out


@pytest.mark.anyio
async def test_a_failed_turn_is_shown_once_and_its_input_is_not_delivered_again(
    instance: InstancePaths, tmp_path: Path
) -> None:
    from panels.host.delivery.feed import operator_route
    from panels.host.solo import solo_team
    from peerbus import open_bus

    driver = ScriptedDriver([[ErrorEvent("other", "boom: no way in")], [TextDelta("fine"), Done()]])
    out = await drive_repl(["first", "/show", "second", "/quit"], driver, tmp_path)
    assert out.count("[error] boom: no way in") == 1
    assert "the panel failed" not in out  # the restart after a failed turn is not news
    assert "user      interrupted" in out  # the input is kept in the window, marked
    assert "assistant: fine" in out
    assert [r.blocks[-1]["text"] for r in driver.requests] == ["first", "second"]
    async with open_bus(Path(solo_team("solo").bus)) as bus:
        assert await bus.inbox(operator_route("solo"), senders=()) == []  # nothing left


class Blocks:
    """The first turn says it is working and blocks until stopped; the next one answers."""

    def __init__(self) -> None:
        self.requests: list[TurnRequest] = []

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        self.requests.append(request)
        if len(self.requests) == 1:
            yield TextDelta("working")
            await anyio.sleep_forever()
        yield TextDelta("second turn")
        yield Done()


@pytest.mark.anyio
async def test_stop_ends_the_turn_in_flight_and_lines_typed_meanwhile_wait(
    instance: InstancePaths, tmp_path: Path
) -> None:
    driver = Blocks()
    out = await drive_repl(
        ["go", "@working@/show", "/help", "/stop", "again", "/quit"], driver, tmp_path
    )
    assert "assistant: working" in out and "[stopped]" in out
    assert "/inbox [on|off]" in out.split("[stopped]")[0]  # /help answered at once
    assert "(queued until the turn ends" in out.split("[stopped]")[0]  # /show waited
    assert "turn stopped before it finished" in out.split("[stopped]")[1]  # ... and shows the row
    assert "assistant: second turn" in out


@pytest.mark.anyio
async def test_halt_refuses_input_until_resume(instance: InstancePaths, tmp_path: Path) -> None:
    driver = ScriptedDriver([[TextDelta("after resume"), Done()]])
    out = await drive_repl(
        ["/halt enough for now", "hi", "/resume", "hi again", "/quit"], driver, tmp_path
    )
    assert "[SENTINEL HALT] operator_halt: enough for now" in out
    assert "/resume lets it go on. The line was not sent." in out
    assert "assistant: after resume" in out
    assert [r.blocks[-1]["text"] for r in driver.requests] == ["hi again"]


def test_the_question_shows_what_always_would_allow() -> None:
    from panels.hostdb.catalogue import ApprovalAsked

    request = ApprovalAsked(panel="p", request=1, tool="Bash", target="rm x\\x1b", reason="asks",
                            always_offered=True, remember=("rm x",), timeout=10.0)  # fmt: skip
    text = question_text(request)
    assert "Bash wants to run:\n  rm x\\x1b" in text
    assert "always would allow exactly:\n  rm x" in text and "[a]lways" in text


@pytest.mark.anyio
async def test_solo_mode_honours_the_instance_sentinel_settings(
    instance: InstancePaths, tmp_path: Path
) -> None:
    """The defect: in solo mode a default host sentinel overrode the instance's switch,
    thresholds and shadow mode. Shadow mode here: the loop is recorded, nothing is stopped."""
    from runtime.instance.guard_settings import LimitsConfig, SentinelSettings

    config = InstanceConfig.model_validate_json(instance.config.read_text())
    limits = LimitsConfig(sentinel=SentinelSettings(shadow=True))
    save_config(instance.config, config.model_copy(update={"limits": limits}))
    calls = [ToolCall(f"p{i}", "Read", {"file_path": "/tmp/x"}) for i in range(3)]
    driver = ScriptedDriver([[*calls, TextDelta("done polling"), Done()]])
    out = await drive_repl(["poll", "/quit"], driver, tmp_path)
    assert "[sentinel, shadow mode: repeat" in out
    assert "SENTINEL HALT" not in out and "assistant: done polling" in out


@pytest.mark.anyio
async def test_the_repl_acts_only_through_the_hosts_verbs(
    instance: InstancePaths, tmp_path: Path
) -> None:
    """The REPL no longer reaches into the live session: every command that changes
    something is a verb the host's dispatcher applied and logged, as the CLI's are."""
    from panels.host.solo import solo_state_dir
    from panels.hostdb import connect, read_events
    from panels.hostdb.catalogue import VerbApplied

    driver = ScriptedDriver([[TextDelta("hi"), Done()]])
    # Each line waits for the answer to the one before ("@TEXT@LINE": see screen.py).
    lines = [
        "hello",
        "@assistant: hi@/pin 2",
        "@row 2 pinned@/slot status green",
        "@slot 'status'@/inbox off",
        "@delivery is off@/clear",
        "@removed@/halt",
        "/quit",
    ]
    out = await drive_repl(lines, driver, tmp_path)
    state = solo_state_dir("solo")
    assert state is not None
    conn = connect(state / "host.sqlite")
    applied = [e.event for e in read_events(conn, kinds=["command"], limit=100)]
    conn.close()
    verbs = [(e.verb, e.by, e.ok) for e in applied if isinstance(e, VerbApplied)]
    assert verbs == [
        (verb, "operator", True) for verb in ("input", "pin", "slot", "inbox", "clear", "halt")
    ]
    assert "row 2 pinned" in out and "slot 'status'" in out and "removed 1 rows" in out
