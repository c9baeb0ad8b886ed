"""One guard per panel in a host: the instance's sentinel switch, thresholds and shadow mode are
honoured in team and solo mode, a team file overrides them per panel, and the budget spent
and the halt survive a restart of the panel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from panels.hostdb.verbs import Input
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.guard_settings import BudgetSettings, LimitsConfig, SentinelSettings
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.turn.driver import Done, ErrorEvent, ToolCall, ToolResult, Usage
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio

ALLOW_BASH = '[[panels.policy]]\ntool = "Bash"\nmode = "allow"\n'


def allowed(*names: str, extra: dict[str, str] | None = None) -> str:
    """Panels whose Bash calls are allowed (`extra`: more keys or tables per panel)."""
    return "\n".join(
        f'[[panels]]\nname = "{n}"\n{(extra or {}).get(n, "")}\n{ALLOW_BASH}' for n in names
    )


def same_calls(count: int) -> list[Any]:
    """`count` identical Bash calls in one turn, each answered the same."""
    out: list[Any] = []
    for i in range(count):
        out += [ToolCall(f"c{i}", "Bash", {"command": "cat status.txt"}), ToolResult(f"c{i}", "x")]
    return [*out, Usage(10, 1), Done()]


def instance(team: Any, name: str, **fields: Any) -> None:
    paths = InstancePaths.for_name(name, team.state_dir.parents[1])
    paths.root.mkdir(parents=True)
    save_config(paths.config, InstanceConfig(**fields))
    TurnStore.open(paths.turns).close()


async def run_turn(host: Any, events: Any, panel: str = "a") -> None:
    await host.services.bus.submit(OPERATOR, operator_route(panel), {"text": "go"})
    await events.wait("turn_ended", panel)


async def test_the_sentinel_is_on_for_a_new_panel_and_halts_the_third_same_call(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, allowed("a"))
    async with start_host(team, {"a": [same_calls(3)]}) as (host, events, _):
        await run_turn(host, events)
        assert host.panels["a"].state == "halted"
    (halt,) = events.of("halt", "a")
    assert (halt.by, halt.rule) == ("sentinel", "repeat")


async def test_an_instance_that_switched_its_sentinel_off_runs_without_one(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, allowed("a"))
    instance(team, "a", runtime_sentinel=False)
    async with start_host(team, {"a": [same_calls(4)]}) as (host, events, _):
        await run_turn(host, events)
        assert host.panels["a"].state == "idle"
    assert not events.of("halt", "a") and not events.of("sentinel", "a")


async def test_the_instance_thresholds_and_shadow_mode_apply_in_a_team(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, allowed("a", "b"))
    instance(team, "a", limits=LimitsConfig(sentinel=SentinelSettings(repeat_threshold=4)))
    instance(team, "b", limits=LimitsConfig(sentinel=SentinelSettings(shadow=True)))
    scripts = {"a": [same_calls(3), same_calls(4)], "b": [same_calls(3)]}
    async with start_host(team, scripts) as (host, events, _):
        await run_turn(host, events, "a")
        assert host.panels["a"].state == "idle"  # three is below its threshold of four
        await run_turn(host, events, "a")
        await run_turn(host, events, "b")
        assert host.panels["b"].state == "idle"
    assert [h.rule for h in events.of("halt", "a")] == ["repeat"]
    assert not events.of("halt", "b")
    (shadow,) = events.of("sentinel", "b")  # what it would have halted, recorded
    assert shadow.rule == "repeat"


async def test_a_team_file_overrides_the_instance_per_panel(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # `a` raises its threshold in the team file; `c` switches its sentinel off there.
    extra = {"a": "[panels.sentinel]\nrepeat_threshold = 4\n", "c": "runtime_sentinel = false\n"}
    team = make_team(tmp_path, allowed("a", "b", "c", extra=extra))
    instance(team, "c", runtime_sentinel=True)
    scripts = {"a": [same_calls(3)], "b": [same_calls(3)], "c": [same_calls(5)]}
    async with start_host(team, scripts) as (host, events, _):
        for name in ("a", "b", "c"):
            await run_turn(host, events, name)
        states = {name: host.panels[name].state for name in ("a", "b", "c")}
    assert states == {"a": "idle", "b": "halted", "c": "idle"}


async def test_the_budget_spent_and_a_halt_survive_a_restart_of_the_panel(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a"))
    limits = LimitsConfig(budget=BudgetSettings(max_session_input_tokens=150))
    instance(team, "a", limits=limits)
    died = [ErrorEvent("cli", "killed")]
    script = [reply("one"), died, reply("two"), reply("never")]
    async with start_host(team, {"a": script}) as (host, events, drivers):
        for text in ("first", "dies", "second"):
            await host.dispatch(Input(panel="a", text=text))
            await events.wait("turn_ended", "a", count=len(events.of("turn_ended", "a")) + 1)
        assert [e.epoch for e in events.of("panel_started", "a")] == [1, 2]  # a new life
        # 100 tokens before the failure and 100 after it: the limit of 150 is reached.
        (halt,) = await events.wait("halt", "a")
        assert host.panels["a"].spent().input_tokens == 200
        await host.dispatch(Input(panel="a", text="third"))
        assert host.panels["a"].state == "over_budget"
    assert halt.rule == "session_input_tokens"
    assert len(drivers["a"].requests) == 3  # the third input never reached the model


async def test_no_progress_across_turns_halts_a_team_panel(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    """The defect: in a team the no-progress rule never fired (the host ended each turn
    without a world). Now the guard measures it: after a first turn that polls once, five
    more that poll the same way, learn nothing and change nothing halt the panel."""
    team = make_team(tmp_path, allowed("a"))
    script = [same_calls(1) for _ in range(7)]
    async with start_host(team, {"a": script}) as (host, events, drivers):
        for n in range(1, 7):
            await host.dispatch(Input(panel="a", text=f"check {n}"))
            await events.wait("turn_ended", "a", count=n)
        (halt,) = await events.wait("halt", "a")
        await host.dispatch(Input(panel="a", text="check 7"))
    assert (halt.rule, halt.turn) == ("no_progress", 6)
    assert len(drivers["a"].requests) == 6


async def test_a_tool_cannot_write_the_teams_databases(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    """Writes to the host's own databases are denied, not asked (an approved write there
    could forge messages): the team passes its bus and host database to the policy."""
    team = make_team(tmp_path, panels("a"))
    forge = [ToolCall("w", "Write", {"file_path": str(Path(team.bus)), "content": "x"})]
    async with start_host(team, {"a": [[*forge, Usage(1, 1), Done()]]}) as (host, events, _):
        await run_turn(host, events)
    (result,) = events.of("tool_result", "a")
    assert result.error and "Permission denied" in result.content
    assert not events.of("approval_request", "a")  # denied outright, never asked
