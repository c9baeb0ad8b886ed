"""Opening a file that someone else named: regular files only, never blocking, never unbounded.

A path from the model or the operator can name a FIFO (a plain `open()` waits for a writer
that never comes: the `read_skeleton` hang of issue 16), a device (`/dev/zero` never ends,
`/dev/tty` takes the terminal), a socket, a directory, or a sparse 10 GB file. So (#24):

- the path is `stat`ed first, and anything but a regular file is refused without being
  opened (opening some devices has effects of its own);
- it is opened with `O_NONBLOCK | O_NOCTTY`, so a FIFO swapped in after the `stat` cannot make
  the open wait, then checked again on the open descriptor (`fstat`, `S_ISREG`, and the same
  device and inode as the `stat` saw);
- at most `max_bytes` are read, in chunks, checking for cancellation between them, so a
  worker thread doing the read gives up soon after its caller is cancelled.

The refusals are `OSError`s (with `errno`, `strerror` and `filename`), so every caller that
already reports an unreadable file reports these the same way, and the CLI prints them as one
clean line.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

CHUNK_BYTES = 256 * 1024
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class NotRegularFileError(OSError):
    """Raised for a FIFO, device, socket, directory or anything else that is not a plain file."""


class FileTooLargeError(OSError):
    """Raised when a file is (or turns out, while read, to be) larger than the caller's cap."""


def kind_of(mode: int) -> str:
    """What a file of this mode is, in words for an error message."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


def _refuse_irregular(path: str | Path, mode: int) -> NotRegularFileError:
    code = errno.EISDIR if stat.S_ISDIR(mode) else errno.EINVAL
    return NotRegularFileError(
        code, f"is {kind_of(mode)}, not a regular file; only regular files are read", str(path)
    )


def _too_large(path: str | Path, max_bytes: int) -> FileTooLargeError:
    return FileTooLargeError(errno.EFBIG, f"is larger than {describe_size(max_bytes)}", str(path))


def describe_size(n: int) -> str:
    if n % (1024 * 1024) == 0:
        return f"{n // (1024 * 1024)} MiB"
    if n % 1024 == 0:
        return f"{n // 1024} KiB"
    return f"{n} bytes"


@contextmanager
def open_regular_file(
    path: str | Path, *, follow_symlinks: bool = True
) -> Iterator[tuple[int, os.stat_result]]:
    """A read-only descriptor on `path` and its `fstat`, or NotRegularFileError; closed on exit.

    With `follow_symlinks=False` a symlink as the last component is refused (`O_NOFOLLOW`).
    """
    before = os.stat(path, follow_symlinks=follow_symlinks)
    if not stat.S_ISREG(before.st_mode):
        raise _refuse_irregular(path, before.st_mode)
    flags = _OPEN_FLAGS if follow_symlinks else _OPEN_FLAGS | os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        now = os.fstat(fd)
        if not stat.S_ISREG(now.st_mode):
            raise _refuse_irregular(path, now.st_mode)
        if (now.st_dev, now.st_ino) != (before.st_dev, before.st_ino):
            raise OSError(errno.EAGAIN, "was replaced while being opened; try again", str(path))
        yield fd, now
    finally:
        os.close(fd)


def read_regular_file(
    path: str | Path,
    max_bytes: int,
    *,
    follow_symlinks: bool = True,
    check_cancelled: Callable[[], None] | None = None,
) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; OSError (see above) otherwise.

    `check_cancelled` is called before every chunk; a worker thread passes
    `anyio.from_thread.check_cancelled`, which raises once its caller is cancelled.
    """
    with open_regular_file(path, follow_symlinks=follow_symlinks) as (fd, st):
        if st.st_size > max_bytes:  # a sparse 10 GB file is refused here, unread
            raise _too_large(path, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while True:
            if check_cancelled is not None:
                check_cancelled()
            # One byte past the cap is enough to know the file grew beyond it (or that its
            # size lied, as /proc files do).
            chunk = os.read(fd, min(CHUNK_BYTES, max_bytes + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:
                raise _too_large(path, max_bytes)
