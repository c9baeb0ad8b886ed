"""NOTIFY channel names: one per recipient, one for broadcasts, one for any change.

A recipient name can be up to 64 characters of [A-Za-z0-9._:@-], but an identifier is at
most 63 bytes and a channel name would need quoting; a hash makes every name a short
plain identifier. Different recipients colliding would only cost a spurious wake-up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

# A broadcast concerns every recipient; every write also notifies ANY (for `bus tail`).
BROADCAST = "peerbus_all"
ANY = "peerbus_any"


def channel(recipient: str | None) -> str:
    """The channel a change concerning `recipient` (None: a broadcast) is announced on."""
    if recipient is None:
        return BROADCAST
    return "peerbus_r_" + hashlib.sha256(recipient.encode("utf-8")).hexdigest()[:32]


def channels_for(recipients: Iterable[str | None]) -> list[str]:
    """The channels to notify for a write concerning `recipients` (None: a broadcast),
    ANY included, without repeats."""
    out = {ANY}
    for who in recipients:
        out.add(channel(who))
    return sorted(out)
