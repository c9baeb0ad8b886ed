"""Who owns an instance: the lease a running host (or a changing command) holds on it.

A lease is an exclusive `flock` on `<instance>/.lease`, taken without blocking and held on an
open descriptor for the owner's lifetime. The file's content is one JSON object naming the
owner (format 1):

    {"format": 1, "pid": 4242, "host": "box1", "team": "trio",
     "holder": "the host of team 'trio'", "since": 1767794520.5}

The kernel drops a flock when its process dies, so the lock is the truth and the content only
says who: a clean release empties the file; content found when the lock can be taken was left
by an owner that died, and is reported as a stale lease taken over (`Lease.stale_owner`).

The lock file is never deleted or replaced while held (a new inode at the same path would be
a second, independent lock); `delete_instance` renames the directory away before it lets go.

Every call is quick and never waits for a lock (no fsync either: the content is advice, the
lock is not stored), so async code calls them directly. The only pause is a retry of at most
~2 ms when the lock is contended and the content does not name an owner yet.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import secrets
import shutil
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from runtime.errors import InstanceError, InstanceNotFoundError
from runtime.instance.home import InstancePaths
from sqlitekit.jsonload import load_json

__all__ = [
    "LEASE_FILE",
    "UNKNOWN_OWNER",
    "InstanceLeasedError",
    "Lease",
    "LeaseOwner",
    "acquire_lease",
    "current_owner",
    "delete_instance",
    "lease_path",
    "parse_owner",
    "refusal",
]

LEASE_FILE = ".lease"  # starts with a dot: never an instance file anyone else reads
_FORMAT = 1
_MAX_BYTES = 4096
_ATTEMPTS = 3  # contended lock with no owner named yet: a probe, or an owner still writing


@dataclass(frozen=True)
class LeaseOwner:
    """The process that holds (or held) an instance's lease, as written in the lease file."""

    pid: int
    host: str
    team: str  # the team whose host holds it ("" when not a team's host): names `mnemara down`
    holder: str  # what holds it, for people: "the host of team 'trio'", "`mnemara clear`"
    since: float  # epoch seconds

    @classmethod
    def this_process(cls, holder: str, *, team: str = "") -> LeaseOwner:
        return cls(os.getpid(), socket.gethostname(), team, holder, time.time())

    def describe(self, now: float | None = None) -> str:
        """E.g. "the host of team 'trio' (pid 4242 on box1, since 14:02)"."""
        if self.pid <= 0:
            return f"{self.holder} (the lease file does not say which)"
        moment = time.localtime(self.since)
        today = time.localtime(time.time() if now is None else now)
        same_day = moment[:3] == today[:3]
        at = time.strftime("%H:%M" if same_day else "%Y-%m-%d %H:%M", moment)
        return f"{self.holder} (pid {self.pid} on {self.host}, since {at})"

    def next_step(self) -> str:
        """What to do before changing the instance it holds."""
        if self.team:
            return f"stop it first (`mnemara down --team {self.team}`)"
        return "wait for it to finish or stop it first"

    def to_json(self) -> str:
        record = {"format": _FORMAT, "pid": self.pid, "host": self.host, "team": self.team}
        return json.dumps({**record, "holder": self.holder, "since": self.since})


# What a locked lease file with unreadable content is reported as.
UNKNOWN_OWNER = LeaseOwner(pid=0, host="", team="", holder="another process", since=0.0)


class InstanceLeasedError(InstanceError):
    """Raised when a command would change or remove an instance whose lease another owner holds.

    `owner` is who holds it; the message names it and how to stop it. (Defined here, not in
    runtime/errors.py, so that module needs nothing of this one.)
    """

    def __init__(self, message: str, *, instance: str, owner: LeaseOwner):
        super().__init__(message, instance=instance)
        self.owner = owner


def parse_owner(raw: bytes) -> LeaseOwner | None:
    """The owner a lease file names; None for empty, partial, foreign or newer content."""
    try:
        data = load_json(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    pid, host, team = data.get("pid"), data.get("host"), data.get("team")
    holder, since = data.get("holder"), data.get("since")
    if (
        isinstance(pid, int)
        and isinstance(host, str)
        and isinstance(team, str)
        and isinstance(holder, str)
        and isinstance(since, int | float)
    ):
        return LeaseOwner(pid, host, team, holder, float(since))
    return None


def refusal(paths: InstancePaths, owner: LeaseOwner, action: str) -> InstanceLeasedError:
    """The error for `action` ("delete it") refused because `owner` holds the instance."""
    return InstanceLeasedError(
        f"instance {paths.name!r} is in use by {owner.describe()}; "
        f"{owner.next_step()} before you {action}",
        instance=paths.name,
        owner=owner,
    )


def lease_path(paths: InstancePaths) -> Path:
    return paths.root / LEASE_FILE


# The leases this process holds, by the lock file's (device, inode). The kernel already
# refuses a second flock through another descriptor on local file systems, but where flock is
# emulated with POSIX record locks (NFS) a process's second lock succeeds, and closing *any*
# descriptor of the file drops them all; so a file this process holds is never opened again,
# not even by a probe. Process-wide because the locks are.
_held: dict[tuple[int, int], LeaseOwner] = {}
_held_guard = threading.Lock()


def _identity(st: os.stat_result) -> tuple[int, int]:
    return (st.st_dev, st.st_ino)


def _held_at(path: Path) -> LeaseOwner | None:
    try:
        return _held.get(_identity(os.stat(path)))
    except FileNotFoundError:
        return None


def _read(fd: int) -> bytes:
    return os.pread(fd, _MAX_BYTES, 0)


def _try_lock(fd: int, mode: int) -> bool:
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


class Lease:
    """A held lease; `release()` (or leaving the `with` block) lets it go. Idempotent.

    A lease dropped without `release()` stays held until the process exits (the descriptor is
    not closed by a finalizer); it is never inherited by child processes (close-on-exec).
    """

    def __init__(
        self,
        paths: InstancePaths,
        owner: LeaseOwner,
        stale_owner: LeaseOwner | None,
        fd: int,
        identity: tuple[int, int],
    ) -> None:
        self.paths = paths
        self.owner = owner
        # The owner whose lease was found left behind (its process died) and taken over.
        self.stale_owner = stale_owner
        self._fd: int | None = fd
        self._identity = identity

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        with _held_guard:
            if self._fd is None:
                return
            fd, self._fd = self._fd, None
            _held.pop(self._identity, None)
            try:
                # Emptied while still locked: a clean release leaves nothing to report as stale.
                os.ftruncate(fd, 0)
            finally:
                os.close(fd)  # drops the flock

    def __enter__(self) -> Lease:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def acquire_lease(paths: InstancePaths, owner: LeaseOwner, *, action: str = "use it") -> Lease:
    """Lease the instance for `owner`, or raise InstanceLeasedError naming who holds it.

    `action` completes the refusal ("... before you {action}"). A lease left by a dead owner
    is taken over and returned in `Lease.stale_owner`, for the caller to log.
    """
    paths.require()
    path = lease_path(paths)
    with _held_guard:
        mine = _held_at(path)
        if mine is not None:
            raise refusal(paths, mine, action)
        fd = _open_locked(paths, path, action)
        try:
            identity = _identity(os.fstat(fd))
            left = _read(fd)
            stale = (parse_owner(left) or UNKNOWN_OWNER) if left.strip() else None
            data = owner.to_json().encode("utf-8")
            # Written in place, never renamed over: the lock lives on this inode.
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))
        except BaseException:
            os.close(fd)
            raise
        _held[identity] = owner
        return Lease(paths, owner, stale, fd, identity)


def _open_locked(paths: InstancePaths, path: Path, action: str) -> int:
    """A descriptor of `path` holding its exclusive flock, or raise."""
    for attempt in range(_ATTEMPTS):
        fd = _open_for_lease(paths, path)
        keep = False
        try:
            if _try_lock(fd, fcntl.LOCK_EX):
                # Locked; but the path may have been renamed away (`delete_instance`) or
                # replaced between open and flock: a lock nobody finds by that name is no lease.
                keep = _still_at(path, fd)
                if keep:
                    return fd
                continue
            holder = parse_owner(_read(fd))
            if holder is not None or attempt == _ATTEMPTS - 1:
                raise refusal(paths, holder or UNKNOWN_OWNER, action)
        finally:
            if not keep:
                os.close(fd)
        time.sleep(0.001)  # a probe's shared lock, or an owner between its lock and its write
    raise _gone(paths)


def _open_for_lease(paths: InstancePaths, path: Path) -> int:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except FileNotFoundError:
        raise _gone(paths) from None
    except OSError as exc:
        raise InstanceError(
            f"cannot open the lease file {path}: {exc.strerror}; check its permissions",
            instance=paths.name,
        ) from None


def _still_at(path: Path, fd: int) -> bool:
    try:
        return _identity(os.stat(path)) == _identity(os.fstat(fd))
    except FileNotFoundError:
        return False  # the next open says whether the instance is gone or was made anew


def _gone(paths: InstancePaths) -> InstanceNotFoundError:
    return InstanceNotFoundError(
        f"instance {paths.name!r} was deleted or moved from {paths.root}", instance=paths.name
    )


def current_owner(paths: InstancePaths) -> LeaseOwner | None:
    """Who holds the instance's lease now; None when it is free or only stale.

    Probes with a shared, non-blocking flock that is let go at once; never creates the file.
    """
    path = lease_path(paths)
    with _held_guard:
        mine = _held_at(path)
        if mine is not None:
            return mine
        for attempt in range(_ATTEMPTS):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return None
            try:
                if _try_lock(fd, fcntl.LOCK_SH):
                    return None  # closing the descriptor below lets the probe's lock go
                holder = parse_owner(_read(fd))
            finally:
                os.close(fd)
            if holder is not None or attempt == _ATTEMPTS - 1:
                return holder or UNKNOWN_OWNER
            time.sleep(0.001)  # an owner between its lock and its write
    return UNKNOWN_OWNER


def delete_instance(lease: Lease) -> None:
    """Delete the leased instance's directory and everything in it; the lease is released.

    The directory is first renamed to a dot-name (never an instance name) while the lease is
    held, so nobody can lease the instance by its path again; only then is the lock let go and
    the renamed tree removed: the lock file is not deleted while held.
    """
    if not lease.held:
        raise ValueError("delete_instance needs a held lease")
    root = lease.paths.root
    doomed = root.with_name(f".{root.name}.deleting-{secrets.token_hex(4)}")
    try:
        os.rename(root, doomed)
    except OSError as exc:
        raise InstanceError(
            f"cannot delete instance {lease.paths.name!r}: renaming {root} failed: {exc.strerror}",
            instance=lease.paths.name,
        ) from None
    lease.release()
    try:
        shutil.rmtree(doomed)
    except OSError as exc:
        raise InstanceError(
            f"instance {lease.paths.name!r} is gone from {root}, but its files could not all be "
            f"removed ({exc}); remove {doomed} by hand",
            instance=lease.paths.name,
        ) from None
