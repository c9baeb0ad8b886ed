"""What a panel's sandbox allows: the switch, the network, and the extra areas.

- `mode`: "auto" confines tools when bubblewrap works here and says once that they run
  unconfined when it does not; "required" refuses to start without it; "off" never confines.
- `network`: "off" (commands get no network; only the CLI process itself reaches the model
  endpoint), "model" (commands may reach the model endpoint too), or a list of hosts
  (`host` or `host:port`, HTTPS through the sandbox's proxy) on top of the model endpoint.
- `readable` / `writable`: directories beyond the panel's working directory.
- `read_only` / `masked`: files the host protects inside those areas: bound read-only (the
  team file, git hooks and config), or hidden behind an empty file (bus databases).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from runtime.policy.stores import DATABASE_SIBLINGS

Mode = Literal["auto", "required", "off"]
MODES: tuple[Mode, ...] = ("auto", "required", "off")
NetworkMode = Literal["off", "model"]


@dataclass(frozen=True)
class SandboxSettings:
    mode: Mode = "auto"
    network: NetworkMode | tuple[str, ...] = "off"
    readable: tuple[Path, ...] = ()
    writable: tuple[Path, ...] = ()
    read_only: tuple[Path, ...] = ()
    masked: tuple[Path, ...] = ()

    @property
    def allow_list(self) -> tuple[str, ...]:
        return self.network if isinstance(self.network, tuple) else ()

    def describe_network(self) -> str:
        if self.network == "off":
            return "no network for commands"
        if self.network == "model":
            return "the model endpoint only"
        return "the model endpoint and " + ", ".join(self.allow_list)


def foreign_bus_files(bus: str | Path | None) -> tuple[Path, ...]:
    """A bus file outside mnemara's state and its SQLite and peerbus siblings (to mask)."""
    if not bus:
        return ()
    path = Path(bus).expanduser()
    return tuple(Path(f"{path}{suffix}") for suffix in DATABASE_SIBLINGS)
