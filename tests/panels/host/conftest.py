"""Host test kit: a team built in code, scripted drivers, and waiting on events (no polling)."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host import Host, RestartPolicy
from panels.hostdb import HostEvent, Logged
from panels.team import TeamSpec, parse_team
from runtime.turn.driver import AgentDriver, Done, DriverEvent, TextDelta, TurnRequest, Usage
from runtime.turn.scripted import ScriptedDriver

FAST = RestartPolicy(base_delay=0.01, max_delay=0.05, max_failures=3, window=60)


def reply(text: str = "ok", *events: DriverEvent) -> list[DriverEvent]:
    return [TextDelta(text), *events, Usage(100, 10), Done()]


def make_team(tmp_path: Path, body: str, *, name: str = "t", extra: str = "") -> TeamSpec:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    text = f'[team]\nname = "{name}"\nworkdir = "{work}"\n{extra}\n{body}'
    return parse_team(text, source=tmp_path / "team.toml", home=tmp_path / "mnemara-home")


def panels(*names: str, **kinds: str) -> str:
    out = []
    for n in names:
        out.append(f'[[panels]]\nname = "{n}"\nkind = "{kinds.get(n, "worker")}"\n')
    return "\n".join(out)


@dataclass
class Events:
    """Every event the host writes (typed, from the catalogue), and a way to wait for one
    without polling."""

    seen: list[HostEvent] = field(default_factory=list)
    _changed: anyio.Event = field(default_factory=anyio.Event)

    def __call__(self, logged: Logged) -> None:
        self.seen.append(logged.event)
        changed, self._changed = self._changed, anyio.Event()
        changed.set()

    def of(self, kind: str, panel: str | None = None) -> list[Any]:
        return [e for e in self.seen if e.kind == kind and (panel is None or e.panel == panel)]

    async def wait(
        self,
        kind: str,
        panel: str | None = None,
        *,
        count: int = 1,
        where: Callable[[Any], bool] = lambda e: True,
        within: float = 30.0,
    ) -> list[Any]:
        # A deadline only for what never comes: far above what a busy machine takes.
        with anyio.fail_after(within):
            while True:
                changed = self._changed
                found = [e for e in self.of(kind, panel) if where(e)]
                if len(found) >= count:
                    return found
                await changed.wait()


class BlockingDriver:
    """A turn that says something, then blocks until `release` is set (or is cancelled)."""

    def __init__(self) -> None:
        self.release = anyio.Event()
        self.started = anyio.Event()
        self.requests: list[TurnRequest] = []

    async def run_turn(self, request: TurnRequest) -> AsyncGenerator[DriverEvent, None]:
        self.requests.append(request)
        yield TextDelta("working")
        self.started.set()
        await self.release.wait()
        yield Usage(10, 1)
        yield Done()


@pytest.fixture
def start_host() -> Callable[..., Any]:
    """`async with start_host(team, drivers) as (host, events)`."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def run(
        team: TeamSpec, drivers: dict[str, AgentDriver | Sequence[Any]], **options: Any
    ) -> Any:
        made = {
            k: v if hasattr(v, "run_turn") else ScriptedDriver(v)  # type: ignore[arg-type]
            for k, v in drivers.items()
        }
        events = Events()
        options.setdefault("policy", FAST)
        home = team.state_dir.parents[1]
        host = Host(team, drivers=lambda spec: made[spec.name], home=home, listeners=[events],
                    log_interval=0.01, **options)  # fmt: skip
        async with anyio.create_task_group() as tg:
            await tg.start(host.serve)
            try:
                yield host, events, made
            finally:
                host.request_stop()
                await host.stopped()

    return run
