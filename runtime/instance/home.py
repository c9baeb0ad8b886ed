"""Where state lives: MNEMARA_HOME, instance names, and the file layout of one instance."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runtime.errors import InstanceNotFoundError, InvalidInstanceNameError

# Letters, digits, dot, dash, underscore; must start with a letter or digit so names like
# "_teams" (reserved for team state), ".", ".." and "-rf" can never be an instance.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def mnemara_home(env: Mapping[str, str] | None = None) -> Path:
    """The state root: $MNEMARA_HOME, or ~/.mnemara."""
    env = os.environ if env is None else env
    raw = env.get("MNEMARA_HOME", "").strip()
    return Path(raw).expanduser() if raw else Path.home() / ".mnemara"


def validate_instance_name(name: str) -> str:
    """Return `name` if it is a safe instance name, else raise InvalidInstanceNameError."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise InvalidInstanceNameError(
            f"invalid instance name {name!r}: use 1-64 letters, digits, '.', '-' or '_', "
            "starting with a letter or digit (no '/' or '..')",
            instance=name,
        )
    return name


@dataclass(frozen=True)
class InstancePaths:
    """The files of one instance, as laid out by the original mnemara."""

    name: str
    root: Path

    @classmethod
    def for_name(cls, name: str, home: Path | None = None) -> InstancePaths:
        validate_instance_name(name)
        base = home if home is not None else mnemara_home()
        return cls(name=name, root=base / name)

    def require(self) -> InstancePaths:
        if not self.config.is_file():
            raise InstanceNotFoundError(
                f"no instance {self.name!r} at {self.root}; create it with "
                f"`mnemara init --instance {self.name}`",
                instance=self.name,
            )
        return self

    @property
    def config(self) -> Path:
        return self.root / "config.json"

    @property
    def turns(self) -> Path:
        return self.root / "turns.sqlite"

    @property
    def permissions(self) -> Path:
        return self.root / "permissions.json"

    @property
    def role(self) -> Path:
        return self.root / "role.md"

    @property
    def memory(self) -> Path:
        return self.root / "memory"

    @property
    def wiki(self) -> Path:
        return self.root / "wiki"

    @property
    def index(self) -> Path:
        return self.root / "index"

    @property
    def graph(self) -> Path:
        return self.root / "graph"

    @property
    def wiki_proposals(self) -> Path:
        return self.root / "wiki_proposals"

    @property
    def role_proposals(self) -> Path:
        return self.root / "role_proposals"

    @property
    def sleep(self) -> Path:
        return self.root / "sleep"

    @property
    def debug_log(self) -> Path:
        return self.root / "debug.log"

    @property
    def prompt_history(self) -> Path:
        return self.root / ".prompt_history"


def list_instances(home: Path | None = None) -> list[str]:
    """Names of the instances under the home, sorted; team state (`_teams`) is skipped."""
    base = home if home is not None else mnemara_home()
    if not base.is_dir():
        return []
    return sorted(
        p.name for p in base.iterdir() if _NAME.fullmatch(p.name) and (p / "config.json").is_file()
    )
