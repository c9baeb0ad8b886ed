"""The status row's figures from a real host (window against its cap, spend against the budget,
the inbox count, dead letters), the team budget in meta, and the `retry` verb."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host import RestartPolicy
from panels.hostdb import connect, get_meta, read_panels
from panels.hostdb.verbs import Input, Pause, Retry
from runtime.turn.driver import ErrorEvent
from tests.panels.host.conftest import make_team, panels, reply

pytestmark = pytest.mark.anyio
PATIENT = RestartPolicy(base_delay=0.01, max_delay=0.02, max_failures=20, window=60)
BUDGETED_A = '[[panels]]\nname = "a"\nkind = "worker"\n[panels.budget]\nmax_session_usd = 2.0\n'
TEAM_BUDGET = "[team.budget]\nmax_usd = 5.0\nmax_tokens = 1000000\n"


async def holds(check: Callable[[], bool], within: float = 30.0) -> None:
    """Wait until `check()` holds (figures counted by a task of the host); fail past `within`."""
    with anyio.fail_after(within):
        # The counts are plain attributes a host task sets: there is no event to wait on.
        while not check():  # noqa: ASYNC110
            await anyio.sleep(0.01)


async def test_a_status_row_has_the_window_the_budget_and_the_inbox(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, BUDGETED_A + panels("b"), extra=TEAM_BUDGET)
    async with start_host(team, {"a": [reply("a fairly long answer " * 20)], "b": []}) as (
        host,
        events,
        _,
    ):
        runner = host.panels["a"]
        outcome = await host.dispatch(Input(panel="a", text="hello"))
        assert outcome.ok
        await events.wait("turn_ended", "a")
        await holds(lambda: runner.window_tokens > 0)
        assert runner.session is not None
        stored = sum(r.tokens for r in await runner.session.store.rows())
        row = runner.status_row()
        assert row.window_tokens == stored
        assert row.token_cap == runner.session.config.max_window_tokens > 0
        assert row.budget_usd == 2.0 and host.panels["b"].status_row().budget_usd == 0.0
        # Three messages wait for a paused panel: its inbox count says so.
        await host.dispatch(Pause(panel="a"))
        for n in range(3):
            await host.services.bus.submit("b", "a", {"type": "message", "text": f"m{n}"})
        await holds(lambda: runner.status_row().waiting == 3)
        await host.services.log.flush()
        conn = connect(team.hostdb_path, create=False)
        try:
            written = {r.name: r for r in read_panels(conn)}
            meta = get_meta(conn)
        finally:
            conn.close()
        assert written["a"].waiting == 3 and written["a"].window_tokens == stored
        assert written["a"].budget_usd == 2.0
    assert (meta["budget_usd"], meta["budget_tokens"]) == ("5.0", "1000000")


async def test_retry_puts_a_dead_letter_back_and_the_panel_takes_it(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    boom = [ErrorEvent("other", "the model service broke")]
    script = {"a": [boom] * 5 + [reply("fine")], "b": []}
    async with start_host(team, script, policy=PATIENT) as (host, events, _):
        bus, runner = host.services.bus, host.panels["a"]
        ident = await bus.submit("b", "a", {"type": "message", "text": "poison"})
        await events.wait("dead_letter", "a")
        await holds(lambda: runner.status_row().dead_letters == 1)
        refused = await host.dispatch(Retry(id=ident), by="b")
        assert not refused.ok and "operator" in refused.text
        retried = await host.dispatch(Retry(id=ident))
        assert retried.ok and f"message {ident} is back in the queue" in retried.text
        assert await bus.dead_letters() == []
        await events.wait("turn_ended", "a", count=6)
        await holds(lambda: runner.status_row().dead_letters == 0)
        again = await host.dispatch(Retry(id=ident))
        assert not again.ok and "not a dead letter" in again.text
    assert [e.outcome for e in events.of("turn_ended", "a")] == ["failed"] * 5 + ["done"]
    assert events.of("delivery", "a")[-1].ids == (ident,)
    applied = [(e.verb, e.ok) for e in events.of("command") if e.verb == "retry"]
    assert applied == [("retry", False), ("retry", True), ("retry", False)]
