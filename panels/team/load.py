"""Reading a team file: TOML -> validated `TeamModel` -> the frozen `TeamSpec` the host uses.

Relative paths (role docs, the bus, the work directory, the rehearsal script) are taken from
the team file's directory. Every problem is a `TeamFileError` naming the file, the line and
the field, and saying what to do.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from panels.team.locate import dotted, line_of
from panels.team.model import BatchSettings, PanelModel, TeamBudget, TeamModel
from runtime.config import ToolPolicy
from runtime.errors import ConfigError
from runtime.guard.settings import BudgetSettings, SentinelSettings
from runtime.home import mnemara_home


class TeamFileError(ConfigError):
    """Raised when a team file cannot be read or a value in it is invalid."""

    def __init__(self, message: str, *, path: Path, line: int | None = None, field: str = ""):
        where = f"{path}:{line}" if line else str(path)
        detail = f" field '{field}':" if field else ""
        # Not ConfigError's own format: a team file error also names the line.
        Exception.__init__(self, f"{where}:{detail} {message}")
        self.path = path
        self.line = line
        self.field = field or None


@dataclass(frozen=True)
class PanelSpec:
    """One panel of a team, with its paths resolved."""

    name: str
    instance: str
    role: Path | None
    model: str | None
    kind: str
    listens_to: tuple[str, ...] | None  # None: broadcasts from every sender
    paused: bool
    batch: BatchSettings
    budget: BudgetSettings
    sentinel: SentinelSettings
    policy: tuple[ToolPolicy, ...]

    @property
    def is_watchdog(self) -> bool:
        return self.kind == "watchdog"


@dataclass(frozen=True)
class TeamSpec:
    """A loaded team: what the host runs."""

    name: str
    source: Path | None  # the team file; None for a team built in code (solo mode)
    state_dir: Path  # <home>/_teams/<name>
    bus_path: Path
    bus_is_default: bool
    workdir: Path
    rehearsal: Path | None
    max_concurrent_turns: int
    digest_interval: float
    approval_timeout: float
    runaway_tool_calls: int
    budget: TeamBudget
    panels: tuple[PanelSpec, ...]
    # Protocol-noise types the bus acks without a turn; None: the bus's default set.
    silent_types: tuple[str, ...] | None = None

    @property
    def hostdb_path(self) -> Path:
        return self.state_dir / "host.sqlite"

    @property
    def pid_path(self) -> Path:
        return self.state_dir / "host.pid"

    @property
    def log_path(self) -> Path:
        return self.state_dir / "host.log"

    def panel(self, name: str) -> PanelSpec:
        for panel in self.panels:
            if panel.name == name:
                return panel
        raise KeyError(name)


def parse_team(text: str, *, source: Path, home: Path | None = None) -> TeamSpec:
    """Validate a team file's text; `source` names the file and anchors relative paths."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        raise TeamFileError(
            f"not valid TOML ({exc}); fix the syntax", path=source, line=line
        ) from None
    try:
        model = TeamModel.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = tuple(first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        if first.get("type") != "missing" and "input" in first:
            message += f" (got {first['input']!r})"
        more = len(exc.errors()) - 1
        if more:
            message += f"; and {more} more problem(s)"
        raise TeamFileError(
            message, path=source, line=line_of(text, loc), field=dotted(loc)
        ) from None
    return build_spec(model, base=source.parent, source=source, home=home)


def load_team(path: Path | str, *, home: Path | None = None) -> TeamSpec:
    """Read and validate the team file at `path`."""
    source = Path(path).expanduser().resolve()
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TeamFileError("no such file; check the path", path=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TeamFileError(f"cannot read ({exc})", path=source) from None
    return parse_team(text, source=source, home=home)


def _resolve(base: Path, value: str | None) -> Path | None:
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else (base / path).resolve()


def build_spec(
    model: TeamModel, *, base: Path, source: Path | None, home: Path | None = None
) -> TeamSpec:
    team = model.team
    state_dir = (home or mnemara_home()) / "_teams" / team.name
    bus = _resolve(base, team.bus)
    return TeamSpec(
        name=team.name,
        source=source,
        state_dir=state_dir,
        bus_path=bus or state_dir / "bus.sqlite",
        bus_is_default=bus is None,
        workdir=_resolve(base, team.workdir) or base,
        rehearsal=_resolve(base, team.rehearsal),
        max_concurrent_turns=team.max_concurrent_turns,
        digest_interval=team.digest_interval_seconds,
        approval_timeout=team.approval_timeout_seconds,
        runaway_tool_calls=team.runaway_tool_calls,
        budget=team.budget,
        panels=tuple(_panel(p, base) for p in model.panels),
    )


def _panel(panel: PanelModel, base: Path) -> PanelSpec:
    return PanelSpec(
        name=panel.name,
        instance=panel.instance or panel.name,
        role=_resolve(base, panel.role),
        model=panel.model,
        kind=panel.kind,
        listens_to=None if panel.listens_to is None else tuple(panel.listens_to),
        paused=panel.paused,
        batch=panel.batch,
        budget=panel.budget,
        sentinel=panel.sentinel,
        policy=tuple(panel.policy),
    )
