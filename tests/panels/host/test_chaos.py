"""Failures: a panel that fails is restarted or given up on; nothing is lost or applied twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from panels.hostdb.verbs import Input
from peerbus import Outgoing
from runtime.store import TurnStore
from runtime.turn.driver import ErrorEvent, TextDelta
from runtime.turn.scripted import ScriptedDriver
from runtime.window.rows import Consumed, NewRow
from tests.panels.host.conftest import BlockingDriver, make_team, panels, reply

pytestmark = pytest.mark.anyio
ROOT = Path(__file__).resolve().parents[3]
HOST_CHILD = "tests/panels/host/host_child.py"


def store_of(team: Any, instance: str) -> TurnStore:
    return TurnStore.open(team.state_dir.parents[1] / instance / "turns.sqlite")


async def _owed(team: Any, panel: str) -> list[Any]:
    from peerbus import open_bus

    async with open_bus(Path(team.bus), inspect_only=True) as bus:
        return await bus.inbox(operator_route(panel), senders=())


async def leased(host: Any) -> int:
    stats = await host.services.bus.stats()
    return sum(r.leased for r in stats.recipients)


async def test_a_turn_that_dies_is_redelivered_to_the_next_life_and_applied_once(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    died = [TextDelta("half"), ErrorEvent("cli", "the CLI process was killed")]
    async with start_host(team, {"a": [died, reply("whole")], "b": []}) as (host, events, drv):
        ident = await host.services.bus.submit("b", "a", {"type": "message", "text": "job"})
        await events.wait("turn_ended", "a", count=2)
        assert await leased(host) == 0
    assert [e.outcome for e in events.of("turn_ended", "a")] == ["failed", "done"]
    assert [e.epoch for e in events.of("panel_started", "a")] == [1, 2]
    assert [e.ids for e in events.of("delivery", "a")] == [(ident,), (ident,)]
    # The second life sees the message as addressed to its previous epoch, and says so.
    assert [e.stale_ids for e in events.of("delivery", "a")] == [(), (ident,)]
    assert "stale_epoch=true" in str(drv["a"].requests[1].blocks[-1]["text"])
    with store_of(team, "a") as store:
        rows = store.rows()
        assert store.consumed_ids() == {ident}
    # The failed try left no interrupted copy of the input: the message came again, so the
    # window holds it once, in the turn that answered it.
    assert [r.status for r in rows if r.role == "user"] == ["complete"]


async def test_a_message_stored_but_not_acked_is_acked_without_a_second_turn(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # A host died between the turn's commit and its ack: the store has the id, the bus does
    # not know. The next host must ack it and run no turn on it.
    team = make_team(tmp_path, panels("a", "b"))
    async with start_host(team, {"a": [], "b": []}) as (host, events, _):
        host.panels["a"].pause()
        ident = await host.services.bus.submit("b", "a", {"type": "message", "text": "done once"})
        source = host.services.bus.identity
    with store_of(team, "a") as store:
        row = store.begin_turn(
            NewRow("user", ({"type": "text", "text": "x"},), 1, consumed_ids=(ident,))
        )
        store.commit_turn(row, [], consumed=Consumed(source, (ident,)))
    async with start_host(team, {"a": [], "b": []}) as (host, events, drivers):
        (skipped,) = await events.wait("redelivery_skipped", "a")
        assert skipped.ids == (ident,) and skipped.turns == (row,)
        assert drivers["a"].requests == []
        assert await host.services.bus.inbox("a") == [] and await leased(host) == 0


async def test_a_panel_that_fails_every_turn_is_given_up_while_the_others_go_on(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    # Two inputs: with one alone, a panel that fails every turn cannot be told from a poison
    # message (poison.py); the first is then dead-lettered, and the second fails too.
    team = make_team(tmp_path, panels("bad", "good"))
    broken = [ErrorEvent("other", "always broken")]
    scripts = {"bad": [broken] * 20, "good": [reply("fine")] * 3}
    async with start_host(team, scripts) as (host, events, _):
        bus = host.services.bus
        await bus.submit_many(
            OPERATOR, [Outgoing(operator_route("bad"), {"text": t}) for t in ("try", "again")]
        )
        (given_up,) = await events.wait("panel_given_up", "bad")
        for i in range(3):
            await bus.submit(OPERATOR, operator_route("good"), {"text": f"work {i}"})
            await events.wait("turn_ended", "good", count=i + 1)
        assert host.panels["bad"].state == "failed"
        assert host.panels["good"].state == "idle"
    assert "failed 4 times" in given_up.reason
    # The batch and "try" alone (dead-lettered, so forgiven), then "again" four times.
    assert len(events.of("panel_failed", "bad")) == 3 + 4
    assert [d.id for d in events.of("dead_letter", "bad")] == [1]
    assert [p.id for p in await _owed(team, "bad")] == [2]
    assert [e.outcome for e in events.of("turn_ended", "good")] == ["done"] * 3


async def test_shutdown_releases_the_turn_in_flight_and_leaves_nothing_claimed(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    blocking = BlockingDriver()
    async with start_host(team, {"a": blocking, "b": []}, grace=0.2) as (host, events, _):
        ident = await host.services.bus.submit("b", "a", {"type": "message", "text": "long"})
        await blocking.started.wait()
        host.request_stop()
        await host.stopped()
    (ended,) = events.of("turn_ended", "a")
    assert ended.outcome == "stopped"
    # The stopped turn was stored (marked), so its message counts as consumed and was acked.
    (settled,) = events.of("settled", "a")
    assert (settled.acked, settled.released) == ((ident,), ())
    from peerbus import open_bus

    async with open_bus(Path(team.bus)) as bus:
        stats = await bus.stats()
    assert sum(r.leased for r in stats.recipients) == 0


async def test_shutdown_lets_a_turn_finish_within_the_grace_period(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    team = make_team(tmp_path, panels("a", "b"))
    blocking = BlockingDriver()
    async with start_host(team, {"a": blocking, "b": []}, grace=30) as (host, events, _):
        await host.services.bus.submit("b", "a", {"type": "message", "text": "long"})
        await blocking.started.wait()
        host.request_stop()
        await events.wait("host_stopping")
        blocking.release.set()
        with anyio.fail_after(10):
            await host.stopped()
    assert events.of("turn_ended", "a")[0].outcome == "done"


@pytest.mark.slow
async def test_a_host_killed_mid_turn_loses_no_message(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    import os
    import signal
    import subprocess
    import sys

    team = make_team(tmp_path, panels("a", "b"))
    (tmp_path / "team.toml").write_text(
        f'[team]\nname = "t"\nworkdir = "{tmp_path / "work"}"\n' + panels("a", "b")
    )
    from peerbus import open_bus

    team.state_dir.mkdir(parents=True)
    async with open_bus(Path(team.bus)) as bus:
        ident = await bus.submit("b", "a", {"type": "message", "text": "survive me"})
    root = ROOT
    child = await anyio.open_process(
        [
            sys.executable,
            str(root / "tests/panels/host/host_child.py"),
            str(tmp_path / "team.toml"),
        ],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        stderr=subprocess.DEVNULL,
    )
    try:
        assert child.stdout is not None
        with anyio.fail_after(30):
            line = await child.stdout.receive()
        assert b"STARTED" in line
    finally:
        child.send_signal(signal.SIGKILL)
        await child.wait()
    async with start_host(team, {"a": [reply("now")], "b": []}) as (host, events, drivers):
        await events.wait("turn_ended", "a")
        assert await leased(host) == 0
    assert events.of("delivery", "a")[0].ids == (ident,)
    assert "survive me" in str(drivers["a"].requests[0].blocks[-1]["text"])
    with store_of(team, "a") as store:
        assert store.consumed_ids() == {ident}
        statuses = [r.status for r in store.rows() if r.role == "user"]
    # The killed turn's input, marked interrupted as the store opened, was replaced by the
    # turn that ran its message again: the window holds it once (issue 30).
    assert statuses == ["complete"]


@pytest.mark.slow
async def test_delete_and_clear_refuse_a_leased_instance_and_the_next_turn_commits(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    """The defect: `delete --force` removed the directory of an instance a running host used,
    and its next turn was lost. Now the host leases it: the commands refuse, naming it."""
    import os
    import subprocess
    import sys

    team = make_team(tmp_path, panels("a"), name="crew")
    home = team.state_dir.parents[1]
    env = {**os.environ, "MNEMARA_HOME": str(home), "PYTHONPATH": str(ROOT)}

    def mnemara(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "panels.cli.main", *args]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL, cwd=ROOT)  # fmt: skip

    async with start_host(team, {"a": [reply("still here")]}) as (host, events, _):
        for args in (("delete", "-i", "a", "--force"), ("clear", "-i", "a", "--all")):
            refused = await anyio.to_thread.run_sync(lambda args=args: mnemara(*args))
            assert refused.returncode == 4, refused.stderr
            assert "in use by the host of team 'crew'" in refused.stderr
            assert f"pid {os.getpid()}" in refused.stderr
        await host.dispatch(Input(panel="a", text="after the refusals"))
        (stored,) = await events.wait("turn_committed", "a")
    with store_of(team, "a") as store:
        assert [r.id for r in store.rows()] == [stored.user_row, *stored.rows]
    assert (home / "a" / "config.json").is_file()


async def test_a_second_host_on_a_leased_instance_refuses_to_start(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    from panels.host import Host
    from runtime.instance.lease import InstanceLeasedError

    team = make_team(tmp_path, panels("a"), name="first")
    other = make_team(tmp_path, panels("a"), name="second")
    async with start_host(team, {"a": []}):
        second = Host(
            other, drivers=lambda spec: ScriptedDriver([]), home=team.state_dir.parents[1]
        )
        with pytest.raises(InstanceLeasedError, match="in use by the host of team 'first'"):
            await second.serve()
    assert not other.hostdb_path.exists()  # nothing of the second host was started


async def test_a_corrupt_policy_file_fails_the_panel_once_and_for_good(
    anyio_backend: str, tmp_path: Path, start_host: Any
) -> None:
    """A restart cannot repair a corrupt permissions.json (or turns.sqlite): the panel fails
    once, named by the file, and is given up at once instead of retried every few seconds."""
    from runtime.instance.config import InstanceConfig, save_config
    from runtime.instance.home import InstancePaths

    team = make_team(tmp_path, panels("broken", "fine"))
    paths = InstancePaths.for_name("broken", team.state_dir.parents[1])
    paths.root.mkdir(parents=True)
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    paths.permissions.write_text("{not json")
    async with start_host(team, {"broken": [], "fine": [reply("ok")]}) as (host, events, _):
        (given_up,) = await events.wait("panel_given_up", "broken")
        await host.dispatch(Input(panel="fine", text="still working?"))
        await events.wait("turn_ended", "fine")
    (failed,) = events.of("panel_failed", "broken")
    assert failed.permanent and str(paths.permissions) in failed.error
    assert "a restart cannot fix this" in given_up.reason
    assert not events.of("panel_restarting", "broken")
