"""An OS sandbox for a panel's tools: bubblewrap around each turn's whole CLI process."""

from runtime.sandbox.launch import Sandbox, SandboxUnavailable, sandbox_for
from runtime.sandbox.leftovers import sweep_leftovers
from runtime.sandbox.probe import Support, probe
from runtime.sandbox.settings import MODES, Mode, SandboxSettings

__all__ = [
    "MODES",
    "Mode",
    "Sandbox",
    "SandboxSettings",
    "SandboxUnavailable",
    "Support",
    "probe",
    "sandbox_for",
    "sweep_leftovers",
]
