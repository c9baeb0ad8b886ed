"""Where a decision is made: the working directory, the allowed roots and the files to guard.

Built once per session by the wiring (and again if the working directory changes) and passed
to every decision. All paths are resolved here, once, so symlinked homes and temp directories
compare equal to the resolved paths that the checks produce.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.home import InstancePaths


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
class PolicyContext:
    """The facts about the machine a decision needs, all resolved.

    home:            the user's home; `~` in paths and commands expands to it
    roots:           where file tools may go when `home_only` (default: just `home`)
    policy_files:    the policy's own files; no tool may ever write them
    state_roots:     mnemara's state (MNEMARA_HOME, the instance's directory); writes ask,
                     and writes to the databases and stores in it are denied (stores.py)
    extra_protected: further files or directories whose writes always ask (the role doc)
    denied_writes:   further databases no tool may write, with their SQLite and peerbus
                     siblings (a foreign bus database the team names, the host database)
    """

    cwd: Path
    home: Path
    roots: tuple[Path, ...]
    home_only: bool = True
    policy_files: tuple[Path, ...] = ()
    state_roots: tuple[Path, ...] = ()
    extra_protected: tuple[Path, ...] = ()
    denied_writes: tuple[Path, ...] = ()

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
        denied_writes: Sequence[Path] = (),
    ) -> PolicyContext:
        policy_files: tuple[Path, ...] = ()
        if instance is not None:
            policy_files = (real(instance.permissions), real(instance.config))
        states = tuple(real(p) for p in (state_root, instance.root if instance else None) if p)
        return cls(
            cwd=real(cwd),
            home=real(home),
            roots=tuple(real(r) for r in roots) or (real(home),),
            home_only=home_only,
            policy_files=policy_files,
            state_roots=states,
            extra_protected=tuple(real(p) for p in extra_protected),
            denied_writes=tuple(real(p) for p in denied_writes),
        )
