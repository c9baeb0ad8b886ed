"""Waking only the addressee: a commit for R wakes R's waiter and no other (issue 12).

Writers run in other processes (`python -c` submitting through peerbus), as on a real
team. The backstop (data_version) is pushed out to a minute in these tests unless it is
what a test is about, so a wake can only come from the signals.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

from peerbus import BusOptions, open_bus
from peerbus.sqlite import Bus
from tests.peerbus.conftest import in_another_process, raw_insert

pytestmark = pytest.mark.anyio
# Owned and one compatibility shape: each test starts interpreters, which is slow.
BOTH = pytest.mark.parametrize("flavour", ["owned", "compat"])

Options = Callable[..., BusOptions]
NO_BACKSTOP = 60.0  # longer than any wait below: only a signal can wake
NOT_WOKEN = 1.5  # how long a waiter must stay asleep
WOKEN = 30.0  # a generous bound for a wake that must come


async def send_from_another_process(bus_path: Path, recipient: str | None) -> None:
    await anyio.to_thread.run_sync(
        in_another_process, bus_path, f"submit(bus, 'a', {recipient!r}, {{'n': 1}})"
    )


@BOTH
async def test_a_message_to_another_recipient_does_not_wake_the_waiter(
    bus_path: Path, options: Options
) -> None:
    async with open_bus(bus_path, options=options(backstop_interval=NO_BACKSTOP)) as bus:
        claim = await bus.claim("r")
        await send_from_another_process(bus_path, "s")
        await bus.submit("a", "s", {"n": 2})  # in this process too
        assert not await bus.wait_for_change(NOT_WOKEN, recipient="r", since=claim.generation)
        # ...and its own message, from another process, does wake it.
        async with anyio.create_task_group() as tg:
            tg.start_soon(send_from_another_process, bus_path, "r")
            assert await bus.wait_for_change(WOKEN, recipient="r", since=claim.generation)
        assert len((await bus.claim("r")).ids) == 1


@BOTH
async def test_a_message_sent_before_the_wait_began_still_wakes_it(
    bus_path: Path, options: Options
) -> None:
    async with open_bus(bus_path, options=options(backstop_interval=NO_BACKSTOP)) as bus:
        claim = await bus.claim("r")
        await send_from_another_process(bus_path, "r")  # after the claim, before the wait
        assert await bus.wait_for_change(WOKEN, recipient="r", since=claim.generation)


@BOTH
async def test_a_broadcast_wakes_every_recipient(bus_path: Path, options: Options) -> None:
    opts = options(backstop_interval=NO_BACKSTOP)
    async with open_bus(bus_path, options=opts) as r_bus, open_bus(bus_path, options=opts) as s_bus:
        r_claim, s_claim = await r_bus.claim("r"), await s_bus.claim("s")
        woken: dict[str, bool] = {}

        async def wait(bus: Bus, name: str, since: int) -> None:
            woken[name] = await bus.wait_for_change(WOKEN, recipient=name, since=since)

        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, r_bus, "r", r_claim.generation)
            tg.start_soon(wait, s_bus, "s", s_claim.generation)
            await send_from_another_process(bus_path, None)
    assert woken == {"r": True, "s": True}


@BOTH
async def test_retrying_a_dead_letter_wakes_its_recipient_only(
    bus_path: Path, options: Options
) -> None:
    async with open_bus(bus_path, options=options(backstop_interval=NO_BACKSTOP)) as bus:
        await bus.submit("a", "r", {"n": 1})
        await bus.fail(await bus.claim("r"), reason="cannot be handled")
        claim, other = await bus.claim("r"), await bus.claim("s")
        assert claim.messages == ()
        await anyio.to_thread.run_sync(
            in_another_process, bus_path, "assert retry(bus, recipient='r') == 1"
        )
        assert not await bus.wait_for_change(NOT_WOKEN, recipient="s", since=other.generation)
        assert await bus.wait_for_change(WOKEN, recipient="r", since=claim.generation)
        assert len((await bus.claim("r")).ids) == 1


@BOTH
async def test_a_nack_from_another_process_wakes_the_recipient(
    bus_path: Path, options: Options
) -> None:
    # The other process claims and gives the message back at once (a lease released).
    async with open_bus(bus_path, options=options(backstop_interval=NO_BACKSTOP)) as bus:
        await bus.submit("a", "r", {"n": 1})
        since = await bus.generation(recipient="r")  # watched from here, nothing claimed
        code = "nack(bus, claim_batch(bus, 'r'), count=False)"
        await anyio.to_thread.run_sync(in_another_process, bus_path, code)
        assert await bus.wait_for_change(WOKEN, recipient="r", since=since)
        assert len((await bus.claim("r")).ids) == 1


@pytest.mark.parametrize("flavour", ["compat"])
async def test_the_backstop_notices_a_foreign_commit_that_touches_no_signal(
    bus_path: Path, options: Options
) -> None:
    # The original mnemara (or any tool) writes the shared table and knows no signals.
    async with open_bus(bus_path, options=options(backstop_interval=0.2)) as bus:
        claim = await bus.claim("r")
        await anyio.to_thread.run_sync(raw_insert, bus_path, "r", '{"n": 1}')
        assert await bus.wait_for_change(WOKEN, recipient="r", since=claim.generation)
        assert len((await bus.claim("r")).ids) == 1


@BOTH
async def test_a_reader_without_recipient_wakes_on_every_commit(
    bus_path: Path, options: Options
) -> None:
    # `bus tail` and the dashboard: any commit counts, a claim's or an ack's too.
    async with open_bus(bus_path, options=options(backstop_interval=NO_BACKSTOP)) as bus:
        since = await bus.generation()
        await send_from_another_process(bus_path, "s")
        assert await bus.wait_for_change(WOKEN, since=since)


@BOTH
async def test_signal_files_get_the_bus_files_permissions(
    bus_path: Path, options: Options, flavour: str
) -> None:
    async with open_bus(bus_path, options=options()):
        pass
    # The state file: the bus itself, or in compatibility mode its sidecar.
    state = bus_path.with_name(bus_path.name + ".peerbus") if flavour == "compat" else bus_path
    os.chmod(state, 0o660)  # group-writable: a umask of 022 would take that away
    umask = os.umask(0o022)
    try:
        async with open_bus(bus_path, options=options()) as bus:
            await bus.submit("a", "r", {"n": 1})
            signals = bus.file.signals
            assert signals is not None
            assert stat.S_IMODE(signals.path("r").stat().st_mode) == 0o660
            assert stat.S_IMODE(signals.directory.stat().st_mode) == 0o770
    finally:
        os.umask(umask)
