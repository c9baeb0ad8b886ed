"""The rules of warm spares, without a CLI: the host's limit and who gets a place (pool.py),
what a spare is matched on (spare.py's fingerprint, request.py's key), and the binding that
gives a spare's callbacks to the turn that takes it (binding.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from runtime.claude import ClaudeDriver
from runtime.claude.binding import UNBOUND, Binding
from runtime.claude.pool import SparePool
from runtime.instance.config import InstanceConfig
from runtime.sandbox import Sandbox, SandboxSettings
from runtime.turn.cache_ttl import LONG_PAUSE, TtlChooser
from runtime.turn.driver import Decision, ToolCallRequest, ToolOutput, ToolSpec
from runtime.turn.request import spare_key


def test_the_pool_keeps_the_limit_and_gives_places_to_the_panels_due_soonest() -> None:
    now = [100.0]
    pool: SparePool[str] = SparePool(2, clock=lambda: now[0])
    woken: list[str] = []

    def wake(name: str) -> Callable[[], None]:
        return lambda: woken.append(name)

    assert pool.admit("a", 160.0, wake("a")) == (True, None)  # due in a minute
    assert pool.admit("b", None, wake("b")) == (True, None)  # no guess yet
    assert pool.admit("c", 101.0, wake("c")) == (False, None)  # both places still being built
    pool.ready("a")
    pool.ready("b")
    assert pool.admit("c", 101.0, wake("c")) == (True, "b")  # the weakest claim below c's goes
    assert len(pool) == 2 and not pool.holds("b")
    assert pool.admit("d", None, wake("d")) == (False, None)  # no guess: below every holder
    pool.ready("c")
    assert pool.admit("e", 40.0, wake("e")) == (False, None)  # a minute overdue: ties with a
    now[0] = 150.0  # the claims are measured when compared: a is due in 10 s now
    assert pool.admit("e", 200.0, wake("e")) == (False, None)
    assert pool.refused == 4 and woken == []
    # A place freed (c's spare taken by its turn) goes to the strongest refused claim: e,
    # due in 50 s, before b and d with no guess; and it is told once.
    pool.release("c")
    assert woken == ["e"]
    assert pool.admit("e", 200.0, wake("e")) == (True, None)
    pool.release("a")
    assert woken == ["e", "b"] or woken == ["e", "d"]
    pool.forget("e")  # a panel that stops: its place is freed, and it is never told
    pool.forget("d")
    pool.forget("b")
    assert len(pool) == 0
    pool.release("x")  # nothing freed: nobody is told
    assert len(woken) == 3
    assert SparePool[str](0).admit("x", 9.0) == (False, None)


def test_the_fingerprint_follows_everything_that_shapes_the_process(
    make_request: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = ClaudeDriver(env={"K": "v"})
    request = make_request()
    same = driver.fingerprint(replace(request, blocks=({"type": "text", "text": "other"},)))
    assert driver.fingerprint(request) == same  # the prompt is not part of it
    spec = ToolSpec("t", "d", {"type": "object", "properties": {}}, _noop)
    changes = [
        replace(request, system=request.system + " "),
        replace(request, model="claude-other"),
        replace(request, native_tools=("Bash",)),
        replace(request, sdk_tools=(spec,)),
        replace(request, max_budget_usd=1.0),
        replace(request, max_turns=3),
        replace(request, bash_timeout_seconds=61),
        replace(request, env={"CLAUDE_CODE_PROMPT_CACHE_TTL": "1h"}),
        replace(request, spare_key="another role doc or config"),
    ]
    prints = {driver.fingerprint(r) for r in changes}
    assert len(prints) == len(changes) and driver.fingerprint(request) not in prints
    assert ClaudeDriver(env={"K": "w"}).fingerprint(request) != driver.fingerprint(request)
    monkeypatch.setenv("MNEMARA_SPARE_TEST", "1")  # the environment the CLI inherits
    assert driver.fingerprint(request) != same
    before = driver.fingerprint(request)
    (request.cwd / ".git").mkdir()  # an empty one: the sandbox's stand-in, no repository
    assert driver.fingerprint(request) == before
    (request.cwd / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert driver.fingerprint(request) != before  # the CLI says it works in a repository


def test_the_spare_key_is_the_role_docs_bytes_and_the_config() -> None:
    config = InstanceConfig()
    key = spare_key("---\nlane: a\n---\nbody\n", config)
    assert key == spare_key("---\nlane: a\n---\nbody\n", config)
    assert key != spare_key("---\nlane: b\n---\nbody\n", config)  # the front matter too
    assert key != spare_key("---\nlane: a\n---\nbody\n", config.model_copy(update={"model": "m"}))


def test_peek_is_what_the_next_turn_would_get_and_records_nothing() -> None:
    now = [0.0]
    chooser = TtlChooser(lambda: now[0])
    chooser.start_turn("auto")
    chooser.end_turn()
    now[0] = LONG_PAUSE - 1
    assert chooser.peek("auto") == "5m" and chooser.peek("1h") == "1h"
    now[0] = LONG_PAUSE + 1
    assert chooser.peek("auto") == "1h"
    assert chooser.start_turn("auto") == "1h"  # the peek did not record the pause


class Approve:
    def __init__(self, allow: bool, message: str) -> None:
        self.decision = Decision(allow=allow, message=message)
        self.asked: list[str] = []

    async def decide(self, call: ToolCallRequest) -> Decision:
        self.asked.append(call.name)
        return self.decision


async def _noop(arguments: dict[str, Any]) -> ToolOutput:
    return ToolOutput("noop")


@pytest.mark.anyio
async def test_a_binding_refuses_until_bound_then_serves_the_bound_turn_only(
    make_request: Any,
) -> None:
    binding = Binding()
    unbound = await binding.pre_tool_use(
        {"tool_name": "Bash", "tool_input": {}}, "u1", {"signal": None}
    )
    assert unbound["hookSpecificOutput"]["permissionDecisionReason"] == UNBOUND  # type: ignore[typeddict-item]
    assert (await binding.call("t", {})).is_error  # no tool runs before a turn

    async def first_tool(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput("first turn's handler")

    async def second_tool(arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput("second turn's handler")

    schema = {"type": "object", "properties": {}}
    first, second = Approve(True, ""), Approve(False, "no, says the second")
    binding.bind(make_request(approver=first, sdk_tools=(ToolSpec("t", "d", schema, first_tool),)))
    binding.bind(
        make_request(approver=second, sdk_tools=(ToolSpec("t", "d", schema, second_tool),))
    )
    hook = await binding.pre_tool_use(
        {"tool_name": "Bash", "tool_input": {}}, "u2", {"signal": None}
    )
    assert hook["hookSpecificOutput"]["permissionDecision"] == "deny"  # type: ignore[typeddict-item]
    assert first.asked == [] and second.asked == ["Bash"]
    assert (await binding.call("t", {})).text == "second turn's handler"


def test_a_file_the_sandbox_guards_since_it_was_made_changes_the_fingerprint(
    make_request: Any, tmp_path: Path
) -> None:
    """A role doc switched to mid-run is read-only in every sandbox made from then on
    (runtime/sandbox/launch.py): a spare made before it does not guard it, so it is not
    taken."""
    sandbox = Sandbox(SandboxSettings(), "/usr/bin/bwrap", tmp_path)
    driver = ClaudeDriver(sandbox=sandbox)
    request = make_request()
    before = driver.fingerprint(request)
    role = tmp_path / "new.md"
    sandbox.added.add(role)
    assert sandbox.current().read_only == (role,)
    assert driver.fingerprint(request) != before
    sandbox.added.add(role)  # once is enough
    assert sandbox.current().read_only == (role,)
    guarded = Sandbox(SandboxSettings(read_only=(role,)), "/usr/bin/bwrap", tmp_path)
    guarded.added.add(role)  # guarded from the start: nothing new
    assert guarded.current() is guarded.settings
