"""Where a decision is made: the working directory, the allowed roots and the files to guard.

Built once per session by the wiring (and again if the working directory changes) and passed
to every decision. All paths are resolved here, once, so symlinked homes and temp directories
compare equal to the resolved paths that the checks produce.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.instance.home import InstancePaths


def real(path: Path) -> Path:
    """`path` made absolute with symlinks and `..` resolved (missing tails kept as written)."""
    return Path(os.path.realpath(path))


def is_under(path: Path, root: Path) -> bool:
    """`path.is_relative_to(root)` for normalised absolute paths, without building new paths.

    A decision makes thousands of these comparisons, and pathlib's own re-parses both paths
    every time (most of a large command's cost before this).
    """
    return path.parts[: len(root.parts)] == root.parts


@dataclass(frozen=True)
class Containment:
    """What the panel's sandbox lets its tools do, as the policy needs to know it.

    writable: directories a write may land in and persist (the working directory, the
              team's `writable` areas), resolved
    readable: directories shown read-only (the team's `readable` areas), resolved
    scratch:  the sandbox's own empty directories (`/tmp`, `/var/tmp`, the home directory
              outside the areas above): writable, gone when the turn ends
    hosts:    hosts commands may reach besides the model endpoint (`[team] network` as a
              list); empty for "off" and "model", where nothing leaves the machine
    """

    writable: tuple[Path, ...]
    readable: tuple[Path, ...] = ()
    scratch: tuple[Path, ...] = ()
    hosts: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        *,
        writable: tuple[Path, ...],
        readable: tuple[Path, ...] = (),
        scratch: tuple[Path, ...] = (),
        hosts: tuple[str, ...] = (),
    ) -> Containment:
        resolved = (tuple(real(p) for p in paths) for paths in (writable, readable, scratch))
        w, r, s = resolved
        return cls(w, r, s, tuple(h.lower() for h in hosts))

    def may_write(self, path: Path) -> bool:
        """Does a write to (resolved) `path` land somewhere the sandbox lets it write?"""
        if any(is_under(path, root) for root in self.writable):
            return True
        shown = any(is_under(path, root) for root in self.readable)
        return not shown and any(is_under(path, root) for root in self.scratch)

    def reaches(self, host: str) -> bool:
        """Is `host` (or `host:port`) on the team's network list?"""
        host = host.lower()
        bare = host.rsplit(":", 1)[0] if host.count(":") == 1 else host
        return any(entry in (host, bare) or entry.rsplit(":", 1)[0] == bare for entry in self.hosts)


@dataclass(frozen=True)
class PolicyContext:
    """The facts about the machine a decision needs, all resolved.

    home:            the user's home; `~` in paths and commands expands to it
    roots:           where file tools may go when `home_only` (default: just `home`)
    policy_files:    the policy's own files; no tool may ever write them
    state_roots:     mnemara's state (MNEMARA_HOME, the instance's directory); writes ask,
                     and writes to the databases and stores in it are denied (stores.py)
    extra_protected: further files or directories whose writes always ask
    role_docs:       the role docs the panel reads every turn (its team's, and the instance's
                     own role.md); no tool may write them: a panel that rewrote its own
                     instructions would steer itself, and role changes go through proposals
    denied_writes:   further databases no tool may write, with their SQLite and peerbus
                     siblings (a foreign bus database the team names, the host database)
    team_file:       the team file the host was started from; no tool may write it, since
                     its `[[panels.policy]]` entries widen permissions on the next `up`
    exec_dirs:       `~/.local/bin` and the absolute directories on PATH; no tool may put a
                     file in one, since a file there runs whenever its name is typed
    containment:     what the panel's sandbox contains when its tools run confined; None when
                     they run unconfined (containment.py)
    cli_scratch:     where the Claude Code CLI keeps its background tasks' output
                     (`<tmp>/claude-<uid>`), which it reads back itself: readable, never a root
    """

    cwd: Path
    home: Path
    roots: tuple[Path, ...]
    home_only: bool = True
    policy_files: tuple[Path, ...] = ()
    state_roots: tuple[Path, ...] = ()
    extra_protected: tuple[Path, ...] = ()
    role_docs: tuple[Path, ...] = ()
    denied_writes: tuple[Path, ...] = ()
    team_file: Path | None = None
    exec_dirs: tuple[Path, ...] = ()
    containment: Containment | None = None
    cli_scratch: Path | None = None

    @classmethod
    def build(
        cls,
        *,
        cwd: Path,
        home: Path,
        home_only: bool = True,
        roots: Sequence[Path] = (),
        instance: InstancePaths | None = None,
        state_root: Path | None = None,
        extra_protected: Sequence[Path] = (),
        role_docs: Sequence[Path] = (),
        denied_writes: Sequence[Path] = (),
        team_file: Path | None = None,
        search_path: str | None = None,
        containment: Containment | None = None,
    ) -> PolicyContext:
        """Resolve everything once. `search_path` is PATH as the tools will see it; None
        reads this process's PATH, so a caller that forgets it still guards the real one."""
        policy_files: tuple[Path, ...] = ()
        if instance is not None:
            policy_files = (real(instance.permissions), real(instance.config))
        own_role = (instance.role,) if instance is not None else ()
        states = tuple(real(p) for p in (state_root, instance.root if instance else None) if p)
        return cls(
            cwd=real(cwd),
            home=real(home),
            roots=tuple(real(r) for r in roots) or (real(home),),
            home_only=home_only,
            policy_files=policy_files,
            state_roots=states,
            extra_protected=tuple(real(p) for p in extra_protected),
            role_docs=tuple(dict.fromkeys(real(p) for p in (*role_docs, *own_role))),
            denied_writes=tuple(real(p) for p in denied_writes),
            team_file=real(team_file) if team_file is not None else None,
            exec_dirs=search_dirs(
                home, os.environ.get("PATH", "") if search_path is None else search_path
            ),
            containment=containment,
            cli_scratch=real(Path(tempfile.gettempdir()) / f"claude-{os.getuid()}"),
        )


def search_dirs(home: Path, search_path: str) -> tuple[Path, ...]:
    """`~/.local/bin` and every absolute directory on `search_path`, resolved, once each.

    Relative entries (`.`, an empty entry) are left out: they mean whatever directory a
    command runs in, and guarding them would forbid every write in the working directory.
    That hole is the OS sandbox's to close, not the path policy's.
    """
    entries = [home / ".local" / "bin"]
    entries += [Path(e) for e in search_path.split(os.pathsep) if e and os.path.isabs(e)]
    return tuple(dict.fromkeys(real(e) for e in entries))
