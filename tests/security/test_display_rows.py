"""Checklist row #16: a look-alike or invisible character in a command is visible when asked.

The whole way a question travels: the real policy decides the call (a `git status` pattern
must not match), the real host asker writes the `ApprovalAsked` event into a real host.sqlite
event log, and the faces render it: the REPL's question, the dashboard's approval modal and
its log line. Each must show the command so that it differs from `git status` at a glance.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.host.control.asker import Approvals, HostAsker
from panels.host.control.eventlog import EventLog
from panels.hostdb import HostEvent, open_hostdb
from panels.hostdb.catalogue import ApprovalAsked
from panels.repl.approve import question_text
from panels.ui.approvals import Question
from panels.ui.entries import Line, entries
from runtime.instance.config import InstanceConfig, ToolPolicy
from runtime.instance.home import InstancePaths
from runtime.policy.approver import Answer, PolicyApprover, prompt_text
from runtime.policy.context import PolicyContext
from runtime.policy.display import escape_command_for_display, escape_for_display
from runtime.policy.policy import PolicyState, Verdict
from runtime.turn.driver import ToolCallRequest

LOOK_ALIKES = {
    "\u0261it status": "\\u0261it status",  # LATIN SMALL LETTER SCRIPT G
    "g\u0456t status": "g\\u0456t status",  # CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
    "git stat\u03c5s": "git stat\\u03c5s",  # GREEK SMALL LETTER UPSILON
    "\uff47it status": "\\uff47it status",  # FULLWIDTH LATIN SMALL LETTER G
    "git\u200b status": "git\\u200b status",  # ZERO WIDTH SPACE
    "git status\u202e": "git status\\u202e",  # RIGHT-TO-LEFT OVERRIDE
}


async def asked_events(tmp_path: Path, commands: list[str]) -> dict[str, ApprovalAsked | None]:
    """Put each Bash command to the real policy and host asker; the event each one asked with."""
    home = tmp_path / "home"
    project = home / "project"
    project.mkdir(parents=True)
    state_root = home / ".mnemara"
    instance = InstancePaths.for_name("scratch", state_root)
    instance.root.mkdir(parents=True)
    ctx = PolicyContext.build(
        cwd=project, home=home, instance=instance, state_root=state_root, search_path="/usr/bin"
    )
    bash = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=("git status",))
    state = PolicyState.from_config(InstanceConfig(allowed_tools=(bash,)))
    found: dict[str, ApprovalAsked | None] = {}
    async with open_hostdb(tmp_path / "host.sqlite") as db:
        log = EventLog(db)
        approvals = Approvals()
        asked: list[ApprovalAsked] = []

        def operator(event: HostEvent) -> None:  # reads the question, answers no
            if isinstance(event, ApprovalAsked):
                asked.append(event)
                approvals.answer(event.request, Answer.NO)

        log.listen_live(operator)
        approver = PolicyApprover(state, ctx, HostAsker("p", approvals, log, timeout=60))
        for i, command in enumerate(commands):
            before = len(asked)
            await approver.decide(ToolCallRequest(f"t{i}", "Bash", {"command": command}))
            found[command] = asked[-1] if len(asked) > before else None
    return found


@pytest.mark.anyio
async def test_16_look_alike_and_invisible_characters_are_escaped_in_every_prompt(
    tmp_path: Path,
) -> None:
    """#16: no pattern match, and the REPL, the modal and the log line all show code points."""
    events = await asked_events(tmp_path, [*LOOK_ALIKES, "git status"])
    assert events["git status"] is None  # the real one is allowed without a question
    for command, shown in LOOK_ALIKES.items():
        event = events[command]
        assert event is not None, f"{command!r} matched the `git status` pattern"
        repl = question_text(event)
        modal = Question.of(event)
        log_line = " ".join(e.text for e in entries(event) if isinstance(e, Line))
        for rendered in (repl.splitlines()[1], modal.target, log_line):
            assert shown in rendered, (command, rendered)
            assert "git status" not in rendered.replace(shown, ""), rendered
            assert rendered.isascii(), rendered
        # The reason quotes the command too ("not allowed by a pattern: `...`"): the whole
        # question, reason included, is printable ASCII everywhere it is shown.
        for whole in (repl, modal.reason, log_line):
            assert whole.isascii(), (command, whole)


def test_16_the_runtime_prompt_escapes_look_alikes_in_the_reason_too() -> None:
    """#16: `prompt_text` (the runtime's own question) escapes the target, the reason that
    quotes it and the "always" rules alike."""
    verdict = Verdict("ask", "Bash", "not allowed by a pattern: `\u0261it status`",
                      "\u0261it status", ("\u0261it\\ status",))  # fmt: skip
    shown = prompt_text(verdict)
    assert shown.isascii() and shown.count("\\u0261it") == 3, shown


def test_16_commands_get_the_strict_form_and_prose_stays_readable() -> None:
    """#16: paths and commands are printable ASCII only; prose keeps `café` but not U+202E."""
    assert escape_command_for_display("cat ~/caf\u00e9.md") == "cat ~/caf\\xe9.md"
    assert escape_command_for_display("echo \U0001f600\x1b[2J") == "echo \\U0001f600\\x1b[2J"
    assert escape_command_for_display("a\tb\nc") == "a\\tb\\nc"
    assert escape_for_display("caf\u00e9 \u202e") == "caf\u00e9 \\u202e"
    once = escape_for_display("\u0261it\u200b")
    assert escape_command_for_display(once) == escape_command_for_display("\u0261it\u200b")
