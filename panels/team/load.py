"""Reading a team file: TOML -> validated `TeamModel` -> the frozen `TeamSpec` the host uses.

Relative paths (role docs, the bus, the work directory, the rehearsal script) are taken from
the team file's directory. A file is checked whole: the schema's errors and those of
`checks.py` become one `TeamFileError` listing every problem with its line and field.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from panels.team.checks import Finding, check_team, resolve_path
from panels.team.errors import Problem, TeamFileError
from panels.team.locate import Loc, dotted, line_of
from panels.team.model import (
    DUPLICATE_ERROR,
    BatchSettings,
    PanelModel,
    SendLimits,
    TeamAlerts,
    TeamBudget,
    TeamLoops,
    TeamModel,
)
from panels.team.suggest import unknown_key
from peerbus.location import parse_location, redact
from runtime.checkpoint.model import CheckpointSettings
from runtime.instance.config import ToolPolicy
from runtime.instance.home import mnemara_home
from runtime.sandbox import SandboxSettings
from runtime.sandbox.settings import foreign_bus_files
from sqlitekit.jsonload import load_toml

# Error types whose message already says what was wrong with the value.
_NO_INPUT = frozenset({"missing", "value_error", DUPLICATE_ERROR})
# Pydantic speaks of Python types; the reader of a team file knows TOML's.
_TOML_WORDS = (
    (r"a valid (tuple|list)", "an array"),
    (r"a valid dictionary( or instance of \w+)?", "a table"),
    (r"a valid string", "a string"),
    (r"a valid boolean", "true or false"),
)


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
    # Only the keys the team file set, validated one by one; `merge_limits` applies them to
    # the instance's own limits and sentinel switch (None: the instance's switch).
    budget_overrides: dict[str, Any]
    sentinel_overrides: dict[str, Any]
    runtime_sentinel: bool | None
    policy: tuple[ToolPolicy, ...]

    @property
    def is_watchdog(self) -> bool:
        return self.kind == "watchdog"


@dataclass(frozen=True)
class ExternalSpec:
    """An agent outside the team that may message it (`[team.external.<name>]`)."""

    name: str
    writes_to: tuple[str, ...]  # panel names
    max_chars: int


@dataclass(frozen=True)
class TeamSpec:
    """A loaded team: what the host runs."""

    name: str
    source: Path | None  # the team file; None for a team built in code (solo mode)
    state_dir: Path  # <home>/_teams/<name>
    # Where the bus is: a SQLite file's absolute path, or a postgresql:// URL (peerbus.location).
    bus: str
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
    shared_memory: bool = False  # `[team] memory = "shared"`
    # A solo instance switched over from the original's peer poll on a foreign table: its
    # route starts at the original's watermark (or the table's highest id), unless the
    # operator asked for the backlog (`mnemara run --replay-backlog`).
    take_over_original: bool = False
    replay_backlog: bool = False
    sandbox: SandboxSettings = field(default_factory=SandboxSettings)
    loops: TeamLoops = field(default_factory=TeamLoops)  # `[team.loops]`: the keys given
    checkpoints: CheckpointSettings = field(default_factory=CheckpointSettings)
    sends: SendLimits = field(default_factory=SendLimits)  # `[team.sends]`
    # `[team.external]`: agents outside the team, by name, and the panels each may write to
    # ("*" expanded to every panel).
    external: Mapping[str, ExternalSpec] = field(default_factory=dict)
    alerts: TeamAlerts = field(default_factory=TeamAlerts)  # `[team.alerts]`
    warm_spares: int = 1  # `[team] warm_spares`; 1 for solo mode, which builds this in code

    @property
    def bus_file(self) -> Path | None:
        """The bus's SQLite file; None when the bus is on PostgreSQL."""
        return bus_file(self.bus)

    @property
    def memory_dir(self) -> Path:
        """The team's shared wiki, graph and index (when `shared_memory`)."""
        return self.state_dir / "memory"

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
    """Validate a team file's text; `source` names the file and anchors relative paths.

    Raises one `TeamFileError` with every problem found (broken TOML is one problem: the
    parser stops there).
    """
    try:
        data = load_toml(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        raise TeamFileError.single(
            f"not valid TOML ({exc}); fix the syntax", path=source, line=line
        ) from None
    model: TeamModel | None = None
    schema: list[Finding] = []
    try:
        model = TeamModel.model_validate(data)
    except ValidationError as exc:
        schema = _schema_findings(exc)
    findings = [*schema, *check_team(data, text=text, base=source.parent)]
    if model is None and not findings:
        # Only the model's duplicate check failed, which check_team always sees too: a bug.
        findings = [((), "panel names or instances are used twice")]
    if findings or model is None:
        located = sorted(((line_of(text, loc), loc, m) for loc, m in findings), key=_file_order)
        problems = [Problem(source, line, dotted(loc) or None, m) for line, loc, m in located]
        raise TeamFileError(list(dict.fromkeys(problems)))
    return build_spec(model, base=source.parent, source=source, home=home)


def _file_order(found: tuple[int | None, Loc, str]) -> tuple[int, tuple[tuple[int, str], ...]]:
    """By line, then by location (`listens_to[2]` before `listens_to[3]` on one line)."""
    line, loc, _ = found
    return line or 0, tuple((p, "") if isinstance(p, int) else (0, p) for p in loc)


def _schema_findings(exc: ValidationError) -> list[Finding]:
    found: list[Finding] = []
    for error in exc.errors():
        if error["type"] == DUPLICATE_ERROR:
            continue  # check_team reports it, with the line of the second use
        message = str(error["msg"]).removeprefix("Value error, ")
        for python, toml in _TOML_WORDS:
            message = re.sub(python, toml, message)
        shown = _shown(error.get("input"))
        if error["type"] == "extra_forbidden":
            message = unknown_key(TeamModel, tuple(error["loc"]))
        elif error["type"] not in _NO_INPUT and shown:
            message += f" (got {shown})"
        found.append((tuple(error["loc"]), message))
    return found


def _shown(value: object) -> str | None:
    """A scalar as the file wrote it, shortened; never a table or an array."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return None


def load_team(path: Path | str, *, home: Path | None = None) -> TeamSpec:
    """Read and validate the team file at `path`."""
    source = Path(path).expanduser().resolve()
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TeamFileError.single("no such file; check the path", path=source) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TeamFileError.single(f"cannot read ({exc})", path=source) from None
    return parse_team(text, source=source, home=home)


def build_spec(
    model: TeamModel, *, base: Path, source: Path | None, home: Path | None = None
) -> TeamSpec:
    team = model.team
    state_dir = (home or mnemara_home()) / "_teams" / team.name
    bus = _bus(base, team.bus)
    return TeamSpec(
        name=team.name,
        source=source,
        state_dir=state_dir,
        bus=bus or str(state_dir / "bus.sqlite"),
        bus_is_default=bus is None,
        workdir=resolve_path(base, team.workdir) or base,
        rehearsal=resolve_path(base, team.rehearsal),
        max_concurrent_turns=team.max_concurrent_turns,
        warm_spares=team.warm_spares,
        digest_interval=team.digest_interval_seconds,
        approval_timeout=team.approval_timeout_seconds,
        runaway_tool_calls=team.runaway_tool_calls,
        budget=team.budget,
        panels=tuple(_panel(p, base) for p in model.panels),
        shared_memory=team.memory == "shared",
        sandbox=_sandbox(model, base=base, source=source, bus=bus),
        loops=team.loops,
        checkpoints=CheckpointSettings(**team.checkpoints.given()),
        sends=team.sends,
        external={
            name: ExternalSpec(
                name=name,
                writes_to=tuple(
                    p.name
                    for p in model.panels
                    if p.name in agent.writes_to or "*" in agent.writes_to
                ),
                max_chars=agent.max_chars,
            )
            for name, agent in team.external.items()
        },
        alerts=team.alerts,
    )


def recorded_bus(meta: Mapping[str, str], key: str = "bus") -> str:
    """The bus a running host uses (meta `key`: "bus" or "operator_bus"), for a viewer.

    The host records a URL without its password. When its team file (meta `source`) still
    names that bus, the team file's URL comes back whole, password included; otherwise the
    recorded one, and libpq takes the password from PGPASSWORD or ~/.pgpass."""
    recorded = meta.get(key, "")
    source = meta.get("source", "")
    if "://" not in recorded or not source:
        return recorded
    try:
        bus = load_team(source).bus
    except TeamFileError:
        return recorded
    return bus if redact(bus) == recorded else recorded


def bus_file(bus: str | None) -> Path | None:
    """The SQLite file a bus location names; None for none or a PostgreSQL URL."""
    if bus is None:
        return None
    where = parse_location(bus)
    return where.path if where.scheme == "sqlite" else None


def _bus(base: Path, text: str | None) -> str | None:
    """The team file's `bus`: a SQLite file (a path or sqlite:/// URL, relative to the team
    file) as an absolute path, or a PostgreSQL URL as given (checked by the model)."""
    if text is None:
        return None
    where = parse_location(text)
    if where.scheme == "postgresql":
        return where.target
    return str(resolve_path(base, where.target))


def _sandbox(
    model: TeamModel, *, base: Path, source: Path | None, bus: str | None
) -> SandboxSettings:
    """The team's sandbox; the team file stays read-only inside (its policy tables widen
    permissions on the next start) and a foreign bus file is hidden (a panel that could
    write it could forge a sender)."""
    team = model.team
    network = team.network if isinstance(team.network, str) else tuple(team.network)
    return SandboxSettings(
        mode=team.sandbox,
        network=network,
        readable=tuple(p for p in (resolve_path(base, r) for r in team.readable) if p),
        writable=tuple(p for p in (resolve_path(base, w) for w in team.writable) if p),
        read_only=(source,) if source is not None else (),
        masked=foreign_bus_files(bus_file(bus)),
    )


def _panel(panel: PanelModel, base: Path) -> PanelSpec:
    return PanelSpec(
        name=panel.name,
        instance=panel.instance or panel.name,
        role=resolve_path(base, panel.role),
        model=panel.model,
        kind=panel.kind,
        listens_to=None if panel.listens_to is None else tuple(panel.listens_to),
        paused=panel.paused,
        batch=panel.batch,
        budget_overrides=panel.budget.given() if panel.budget else {},
        sentinel_overrides=panel.sentinel.given() if panel.sentinel else {},
        runtime_sentinel=panel.runtime_sentinel,
        policy=tuple(panel.policy),
    )
