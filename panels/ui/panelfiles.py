"""Where a panel's files are, as the viewer finds them: its turn store, config and role doc.

The host records each panel's instance directory (`instance:<panel>`) and the team's role doc
for it (`role:<panel>`, empty for the instance's own) in host.sqlite's meta when it starts, so
a viewer needs neither the team file nor the host's MNEMARA_HOME. The instance's layout is
runtime/instance/home.py's; an empty team role doc falls back to the instance's config.json, as the
host's own `prepare_panel` does. Blocking (config.json is read): call it from a thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from panels.errors import HostDbError
from runtime.errors import ConfigError
from runtime.instance.config import InstanceConfig, load_config
from runtime.instance.home import InstancePaths


@dataclass(frozen=True)
class PanelFiles:
    """One panel's files. `role` is None when the panel has no role doc file."""

    panel: str
    paths: InstancePaths
    role: Path | None
    config: InstanceConfig

    @property
    def store(self) -> Path:
        return self.paths.turns


def instance_paths(meta: dict[str, str], panel: str) -> InstancePaths | None:
    """Where `panel`'s instance lives, as the host recorded it; None when it did not. Pure."""
    root = meta.get(f"instance:{panel}")
    return InstancePaths(name=Path(root).name, root=Path(root)) if root else None


def find_panel_files(meta: dict[str, str], panel: str, *, hostdb: Path) -> PanelFiles:
    """The files of `panel` as the host recorded them; `HostDbError` when it did not record
    them (a host from before this version), naming what to do."""
    paths = instance_paths(meta, panel)
    if paths is None:
        raise HostDbError(
            f"the host did not record where panel {panel!r} keeps its files; "
            "restart the team's host with this version of mnemara",
            path=hostdb,
        )
    try:
        config = load_config(paths.config)
    except ConfigError:
        config = InstanceConfig()  # the limits shown are then the defaults; the store still reads
        own_role = ""
    else:
        own_role = config.role_doc_path
    role = meta.get(f"role:{panel}") or own_role
    return PanelFiles(panel, paths, Path(role) if role else None, config)


def latest_replay(meta: dict[str, str]) -> str | None:
    """The most recent replay of any panel, as the header shows it ("eng 2026-12-01 09:14, 3
    patterns"); None when no panel's instance has one. Blocking (reads sleep/)."""
    from runtime.instance.replay_record import last_replay

    found = []
    for key in meta:
        panel = key.removeprefix("instance:")
        paths = instance_paths(meta, panel) if key.startswith("instance:") else None
        replayed = last_replay(paths) if paths is not None else None
        if replayed is not None:
            found.append((replayed.at, panel, replayed.patterns))
    if not found:
        return None
    at, panel, patterns = max(found)
    return f"{panel} {at[:16].replace('T', ' ')}, {patterns} pattern(s)"
