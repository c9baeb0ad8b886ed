"""Untrusted text as one line a face shows: `clean`. Pure.

Text from models, peers and files reaches every face (`logs`, `ps`, the REPL, the dashboard):
control characters are stripped and whitespace runs become one space, so nothing a panel
writes can move the cursor or forge another line; the line is cut to a width.
"""

from __future__ import annotations

from typing import Any

from peerbus.render import strip_controls


def clean(value: Any, limit: int = 160) -> str:
    text = " ".join(strip_controls(str(value)).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
