"""Who a panel's tool call sends to: what the guard needs for the lane's `recipients`.

The lane (runtime/guard/lane.py) refuses a send to a panel its role doc does not list, before
the tool runs, so nothing reaches the outbox. Only the host knows its send tools' names and
inputs, so it hands the guard this function (panel.py):

- `send_message` sends to `to` (`*` is a broadcast, allowed only by `*` in the list);
- `ack_message` sends to the sender of the message it acknowledges (none to the operator or
  the host: the tool sends nothing then);
- the watchdog's `nudge_panel` (panels/watchdog/tools.py) sends to `name`.

Kept apart from bustools.py: panel.py builds the guard with this, and needs nothing of the
tools, their port or the outbox (tests/test_structure.py keeps the host's modules acyclic).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from panels.host.delivery.feed import HOST, OPERATOR
from peerbus import Message
from runtime.turn.driver import ToolCallRequest

OWN_TOOLS = "mcp__mnemara__"
# The tools that send, and the input field naming the recipient.
SEND_FIELDS = {"send_message": "to", "nudge_panel": "name"}
UNREADABLE = "?"  # a send whose recipient cannot be read: no lane lists it, so it is refused


def recipients_of(
    seen: Mapping[int, Message],
) -> Callable[[ToolCallRequest], tuple[str, ...] | None]:
    """Who a call sends to (`*`: everyone), or None when it sends nothing. `seen` is the
    panel's delivered messages by id (`PanelRunner.seen`), which names an ack's recipient."""

    def named(call: ToolCallRequest) -> tuple[str, ...] | None:
        if not call.name.startswith(OWN_TOOLS):
            return None
        tool = call.name.removeprefix(OWN_TOOLS)
        if tool in SEND_FIELDS:
            to = call.input.get(SEND_FIELDS[tool])
            return (to.strip(),) if isinstance(to, str) and to.strip() else (UNREADABLE,)
        if tool == "ack_message":
            ident = call.input.get("id")
            message = seen.get(ident) if isinstance(ident, int) else None
            if message is None or message.sender in (OPERATOR, HOST):
                return None
            return (message.sender,)
        return None

    return named
