"""The original mnemara's per-panel watermark file, read when a host takes a panel over from
its poll on a shared table (see peerbus.sqlite.receipts.start_route)."""

from __future__ import annotations

from pathlib import Path

from peerbus.errors import BusOpenError


def read_original_watermark(path: Path) -> int | None:
    """The id in the original mnemara's `<instance>/peer_poll_watermark`, or None when the
    file is absent. Raises BusOpenError (naming the file) when it holds anything else."""
    try:
        text = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BusOpenError(f"cannot read it ({exc}); check its permissions", path=path) from exc
    if not text.isdigit():
        raise BusOpenError(
            f"holds {text[:40]!r}, not a message id; fix it or delete it to start after the "
            "highest id in the table",
            path=path,
        )
    return int(text)
