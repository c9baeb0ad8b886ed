"""Errors raised outside a package's errors.py still sit in its tree, and are caught there."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.cli.errors import EXIT_BUS, EXIT_FAILURE, report
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
