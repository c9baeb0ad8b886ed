"""The per-turn directories of sandboxes whose host is gone, found and removed.

Each sandboxed turn, and each warm spare, has a private directory in the temporary folder
(launch.py): its launcher, its gateway's sockets and a copy of the relay. A host that ends
removes its own. A host killed with -9 cannot: its sandboxes stop by themselves (the relay's
tie to the gateway ends with the host, gateway.py), but their directories stay. The next
host to start removes them (`sweep_leftovers`), whatever team they were for.

A directory is a leftover when it is this user's, was made more than `SETTLE_S` ago (a
younger one may be a launcher whose gateway is still being opened), and nothing answers on
its life socket: a live gateway always listens there, and a dead process's listener is gone
with it. The test is a connection, not a process id, so it holds across pid namespaces and
pid reuse; a live gateway holds the probe's connection like a relay's until its turn ends.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

from runtime.sandbox.gateway import LIFE_SOCKET

WORK_PREFIX = "mnemara-sandbox-"
GATEWAY_DIR = "gw"
SETTLE_S = 60.0


def sweep_leftovers(*, older_than: float = SETTLE_S, root: Path | None = None) -> list[Path]:
    """Remove the leftover directories in `root` (the temporary folder); return them."""
    folder = Path(tempfile.gettempdir()) if root is None else root
    try:
        names = [n for n in os.listdir(folder) if n.startswith(WORK_PREFIX)]
    except OSError:
        return []
    removed: list[Path] = []
    now = time.time()
    for name in sorted(names):
        work = folder / name
        try:
            info = work.lstat()
        except OSError:
            continue
        if not work.is_dir() or work.is_symlink() or info.st_uid != os.getuid():
            continue
        if now - info.st_mtime < older_than or _served(work / GATEWAY_DIR / LIFE_SOCKET):
            continue
        shutil.rmtree(work, ignore_errors=True)
        if not work.exists():
            removed.append(work)
    return removed


def _served(path: Path) -> bool:
    """Whether a live gateway listens on `path`; True when that cannot be told."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(str(path))
    except (FileNotFoundError, ConnectionRefusedError):
        return False
    except OSError:
        return True  # a path too long, a permission, a timeout: not provably dead
    finally:
        probe.close()
    return True
