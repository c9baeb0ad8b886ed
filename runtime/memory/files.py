"""Reading and appending memory's own files without ever blocking on one that is not a file.

Memory files live under the instance (notes, wiki pages, ledgers). Should one be replaced by
a FIFO or a device, a plain `read_text` or an `O_APPEND` open would wait forever (#24): both
go through `runtime.instance.regular_file` here, and the refusal is a MemoryStoreError naming
the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from runtime.errors import MemoryStoreError
from runtime.instance.regular_file import FileTooLargeError, NotRegularFileError, read_regular_file

READ_LIMIT = 64 * 1024 * 1024  # far above any page (1 MB) or day of notes


def read_memory_text(path: Path, limit: int = READ_LIMIT) -> str:
    """The text of memory file `path` (undecodable bytes replaced). FileNotFoundError when it
    is missing; MemoryStoreError when it is not a regular file or is over `limit`."""
    try:
        raw = read_regular_file(path, limit)
    except (NotRegularFileError, FileTooLargeError) as exc:
        raise MemoryStoreError(f"{path}: {exc.strerror}; move it out of the way") from None
    return raw.decode("utf-8", errors="replace")


def append_bytes(path: Path, data: bytes) -> None:
    """One write on an O_APPEND descriptor: concurrent writers never interleave inside it.

    Opened non-blocking, then checked: a FIFO with no reader fails at once instead of
    waiting, and anything but a regular file is refused before a byte is written.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if path.exists() and not path.is_file():
            raise MemoryStoreError(f"{path}: not a regular file; move it out of the way") from None
        raise exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MemoryStoreError(f"{path}: not a regular file; move it out of the way")
        os.write(fd, data)
    finally:
        os.close(fd)
