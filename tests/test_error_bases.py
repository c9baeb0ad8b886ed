"""Errors raised outside a package's errors.py still sit in its tree, and are caught there."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from panels.cli.errors import EXIT_BUS, EXIT_FAILURE, report
from panels.errors import PanelsError
from panels.host.control.dispatch import Dispatcher, VerbRefusedError
from panels.host.delivery.tickets import Tickets
from panels.hostdb import verbs
from peerbus.errors import PeerbusError
from peerbus.sqlite.gate import GateTimeout, WriterGate
from runtime.errors import MnemaraError
from runtime.sandbox import SandboxUnavailable


def test_a_missing_sandbox_is_the_runtimes_error_and_the_cli_says_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert issubclass(SandboxUnavailable, MnemaraError)
    error = SandboxUnavailable("the sandbox is required, but bubblewrap is not installed")
    assert report(error) == EXIT_FAILURE  # not 70, "unexpected error, this is a bug"
    assert capsys.readouterr().err == f"mnemara: {error}\n"


def test_a_gate_timeout_is_the_buss_error(tmp_path: Path) -> None:
    assert issubclass(GateTimeout, PeerbusError)
    holder, waiter = WriterGate(tmp_path / "bus.writers"), WriterGate(tmp_path / "bus.writers")
    holder.acquire(timeout=0)
    try:
        with pytest.raises(PeerbusError) as caught:
            waiter.acquire(timeout=0.01)
        assert type(caught.value) is GateTimeout
        assert report(caught.value) == EXIT_BUS
    finally:
        holder.release()
        holder.close()
        waiter.close()


class _Log:
    """The dispatcher's event log, keeping what it would write."""

    def __init__(self) -> None:
        self.written: list[Any] = []

    async def commit(self, *events: Any, answer: Any = None) -> None:
        self.written.extend(events)


@pytest.mark.anyio
async def test_a_refused_verb_is_a_failed_outcome_caught_as_a_panels_error() -> None:
    assert issubclass(VerbRefusedError, PanelsError)
    log = _Log()
    services: Any = SimpleNamespace(log=log)
    dispatcher = Dispatcher(services, {}, Tickets(), lambda: None)
    outcome = await dispatcher.apply(verbs.Pause(panel="ghost"))
    assert not outcome.ok
    assert outcome.text == "no panel 'ghost' in this team (panels: none)"
    refused = await dispatcher.apply(verbs.Shutdown(), by="watchdog")
    assert (refused.ok, refused.text) == (False, "only the operator stops the host")
    assert [(e.verb, e.ok) for e in log.written] == [("pause", False), ("shutdown", False)]
