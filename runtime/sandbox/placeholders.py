"""Empty stand-ins for names that run code later and do not exist yet in a writable root.

A bind needs something to cover, so `.envrc` (direnv runs it on `cd`) and `.git` (a repository
made there runs its own config and hooks on the operator's next `git status`) get an empty
file and an empty directory while turns run; guards.py binds them read-only like the real
ones. A `.git` placeholder also stops `git init` at the root of a working directory, which
the operator does once instead (the error names the read-only `.git`).

One host's turns share the stand-ins: they are made when the first turn starts and removed
when the last one ends, if still empty. Removing one sooner would lift the bind inside a
sandbox still running (the kernel detaches mounts on a removed path). A host killed in a turn
leaves them; the next turn adopts them and removes them when it ends.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

FILES = (".envrc",)
DIRS = (".git",)


class Placeholders:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns = 0
        self._made: set[Path] = set()

    @contextlib.contextmanager
    def held(self, roots: Sequence[Path]) -> Iterator[None]:
        """Stand-ins in each of `roots` for the length of one turn."""
        with self._lock:
            self._turns += 1
            for root in roots:
                self._made.update(_make(root))
        try:
            yield
        finally:
            with self._lock:
                self._turns -= 1
                if self._turns == 0:
                    for path in self._made:
                        _remove_if_empty(path)
                    self._made.clear()


def _make(root: Path) -> list[Path]:
    made: list[Path] = []
    for name, is_dir in [*((f, False) for f in FILES), *((d, True) for d in DIRS)]:
        path = root / name
        try:
            if is_dir:
                path.mkdir()
            else:
                path.touch(exist_ok=False)
        except FileExistsError:
            if _is_empty(path):
                made.append(path)  # one left by a host that died in a turn
        except OSError:
            continue  # a root this user cannot write: nor can the panel
        else:
            made.append(path)
    return made


def _is_empty(path: Path) -> bool:
    try:
        if path.is_symlink():
            return False
        if path.is_dir():
            return not any(path.iterdir())
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _remove_if_empty(path: Path) -> None:
    if not _is_empty(path):
        return
    with contextlib.suppress(OSError):
        if path.is_dir():
            path.rmdir()
        else:
            path.unlink()
