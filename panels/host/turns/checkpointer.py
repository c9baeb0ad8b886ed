"""One panel's checkpointer: which areas it checkpoints, what it leaves out, when a turn
needs one, and what the event log should say about one (panels/host/turns/checkpoints.py has the
host's side: before a turn, and the rewind verb).

The areas are the team's working directory and its `writable` directories: what the panel's
tools may write, in the sandbox or not (a writable directory inside another area is covered
by it). Left out of every checkpoint, so a rewind never puts an old one back: MNEMARA_HOME
(the checkpoints live there), the team's state directory, the bus file with its siblings, the
files the sandbox masks, the secret folders and files at an area's top (`.ssh`, `.aws`,
`.netrc`, ...), which a sandboxed panel cannot see anyway, and the names the sandbox holds an
empty stand-in for at an area's top (`.envrc`, runtime/sandbox/placeholders.py): a confined
panel can neither make nor change one, and a checkpoint that held the stand-in put it back as
a file of the user's when a rewind ran with no host.

A turn may write unless its panel's config denies Bash, Edit and Write alike and it has no
MCP servers of its own; only such a turn goes without a checkpoint.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from panels.team import PanelSpec, TeamSpec
from runtime.checkpoint import (
    CheckpointSettings,
    CheckpointStore,
    RewindReport,
    Taken,
    open_store,
    rewind,
    take_and_prune,
)
from runtime.checkpoint.model import TOO_MANY
from runtime.errors import CheckpointError
from runtime.instance.config import InstanceConfig
from runtime.instance.home import InstancePaths, mnemara_home
from runtime.policy.paths import SECRET_DIRS, SECRET_FILES
from runtime.policy.stores import DATABASE_SIBLINGS, TEAM_DATABASES
from runtime.sandbox.placeholders import FILES as STAND_INS

# The native tools a panel gets that write (runtime/turn/driver.py `native_tools`); the policy
# counts MultiEdit and NotebookEdit as Edit.
WRITING_TOOLS = ("Bash", "Edit", "Write")


def areas_of(team: TeamSpec) -> list[Path]:
    """The directories a panel of `team` may write: the working directory first, then each
    `writable` directory not inside an earlier one."""
    found: list[Path] = []
    for path in (team.workdir, *team.sandbox.writable):
        area = Path(path).expanduser().resolve()
        if not any(area == a or area.is_relative_to(a) for a in found):
            found = [a for a in found if not a.is_relative_to(area)] + [area]
    return found


def exclusions(team: TeamSpec, home: Path | None, areas: list[Path]) -> list[Path]:
    """What no checkpoint of the team's panels holds (see the module's docstring)."""
    left_out = [(home or mnemara_home()).expanduser(), team.state_dir, *team.sandbox.masked]
    if team.bus_file is not None:
        left_out += [Path(f"{team.bus_file}{s}") for s in DATABASE_SIBLINGS]
    for area in areas:
        left_out += [area / name for name in (*SECRET_DIRS, *SECRET_FILES, *STAND_INS)]
        left_out += [area / f"{db}{s}" for db in TEAM_DATABASES for s in DATABASE_SIBLINGS]
    resolved = []
    for path in left_out:
        try:
            resolved.append(Path(path).resolve())
        except OSError:
            resolved.append(Path(path))
    return resolved


def may_write(config: InstanceConfig) -> bool:
    """False only when the config denies every tool that writes and adds no MCP server."""
    if config.mcp_servers:
        return True
    modes = {p.tool: p.mode for p in config.allowed_tools}
    return any(modes.get(tool, "ask") != "deny" for tool in WRITING_TOOLS)


@dataclass
class Checkpointer:
    """One panel's checkpoints, for the life of the host. Its blocking methods run in a
    worker thread; the store is opened there on first use."""

    panel: str
    paths: InstancePaths
    settings: CheckpointSettings
    areas: list[Path]
    exclude: list[Path]
    _store: CheckpointStore | None = None
    failing: bool = False  # the last attempt failed (said once)
    _said: set[str] = field(default_factory=set)  # capped files and skipped areas, said once
    # Areas skipped for holding too many files: not walked again in this host run (a home
    # directory taken for a working directory would cost seconds before every turn).
    too_big: set[str] = field(default_factory=set)

    def store(self) -> CheckpointStore:
        if self._store is None:
            self._store = open_store(self.paths.root)
        return self._store

    def take(self, turn: int, note: str) -> Taken:
        areas = [a for a in self.areas if str(a) not in self.too_big]
        if not areas:
            raise CheckpointError(
                "every area holds more than max_files files; checkpoints are off for this "
                "host run (raise [team.checkpoints] max_files, or fix the working directory)"
            )
        taken = take_and_prune(self.store(), areas, settings=self.settings,
                               exclude=self.exclude, turn=turn, note=note)  # fmt: skip
        self.too_big.update(a.path for a in taken.checkpoint.areas if a.skipped.startswith(
            TOO_MANY))  # fmt: skip
        return taken

    def rewind(self, number: int | None) -> RewindReport:
        return rewind(self.store(), number, settings=self.settings, exclude=self.exclude)

    def news(self, taken: Taken) -> list[str]:
        """What the event log should say about a checkpoint, each thing once a host run."""
        said: list[str] = []
        number = taken.checkpoint.number
        for area in taken.checkpoint.areas:
            if area.skipped and f"skip:{area.path}" not in self._said:
                self._said.add(f"skip:{area.path}")
                said.append(f"checkpoint {number} left out {area.path}: {area.skipped}; a rewind "
                            "will not restore it")  # fmt: skip
            new = [p for p in area.capped if f"cap:{area.path}/{p}" not in self._said]
            if new:
                self._said.update(f"cap:{area.path}/{p}" for p in new)
                shown = ", ".join(new[:5]) + (f" and {len(new) - 5} more" if len(new) > 5 else "")
                said.append(f"checkpoint {number} left out {len(new)} file(s) over max_file_mb "
                            f"({self.settings.max_file_mb:g} MB): {shown}; a rewind leaves "
                            "them as they are")  # fmt: skip
        return said


def make_checkpointer(team: TeamSpec, spec: PanelSpec, home: Path | None) -> Checkpointer:
    areas = areas_of(team)
    return Checkpointer(
        panel=spec.name,
        paths=InstancePaths.for_name(spec.instance, home),
        settings=team.checkpoints,
        areas=areas,
        exclude=exclusions(team, home, areas),
    )
