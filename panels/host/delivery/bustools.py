"""The bus tools a panel's model calls: `send_message`, `ack_message`, `list_inbox`.

Registered into the panel's in-process tool server (the model sees `mcp__mnemara__<name>`).
The sender of every message is the panel's name, set here by the host; nothing in the
arguments can change it. The original README's discipline is built in:
- `send_message(..., terminal=true)` is the last action of a turn: the host refuses every
  tool call after it in the same turn, so the panel yields and waits for the reply;
- `ack_message` answers a delivered message with an `ack`, a protocol-noise type that the
  bus settles without a turn at the other end, and refuses to acknowledge an acknowledgement.
What the tools send goes to the panel's outbox (outbox.py) and out when the turn is stored, so
a turn cut off by a crash sends nothing twice. Messages the panel is given are acked by the
host when its turn is stored; the tools never settle a delivery themselves.

The tools ask one narrow seam for all they need, `BusPort` (sendport.py); the host's is
`PanelPort`, built with the panel's tools, whose sends go to the outbox of the turn in flight
(outbox.py's `TurnOutbox`, which run_turn builds once per turn). Who each of these tools
sends to is told to the panel's guard by recipients.py, for the lane's `recipients`: a send
outside the lane is refused before the tool runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any

from panels.host.delivery.feed import HOST, OPERATOR
from panels.host.delivery.outbox import BROADCAST, PREVIEW_CHARS, NotQueuedError
from panels.host.delivery.sendport import BusPort, Outbox
from peerbus import BusBackend, Message, Pending
from peerbus.render import strip_controls
from runtime.turn.driver import ToolOutput, ToolSpec

Handler = Callable[[dict[str, Any]], Awaitable[ToolOutput]]


@dataclass
class PanelPort:
    """The host's `BusPort` for one panel: its team's bus, the names of the team's panels,
    what it was given lately, and (through `outbox`) the turn in flight's outbox, if any."""

    name: str
    bus: BusBackend
    team: Collection[str]
    listens_to: Collection[str] | None
    seen: Mapping[int, Message]
    outbox: Callable[[], Outbox | None]

    def queue(
        self,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        terminal: bool = False,
    ) -> str:
        outbox = self.outbox()
        if outbox is None:
            raise NotQueuedError("no turn is running: messages are sent from a turn")
        return outbox.queue(recipient, payload, topic=topic, terminal=terminal)

    def given(self, ident: int) -> Message | None:
        return self.seen.get(ident)

    def silent(self, kind: str | None) -> bool:
        return kind in self.bus.options.silent_types

    def in_team(self, name: str) -> bool:
        return name in self.team

    async def waiting(self, limit: int) -> list[Pending]:
        return await self.bus.inbox(self.name, senders=self.listens_to, limit=limit)


def bus_tools(port: BusPort) -> list[ToolSpec]:
    return [
        ToolSpec(
            "send_message",
            "Send a message to another panel (`to`: its name, or '*' for a broadcast). "
            "Set terminal=true on the last send of your turn: it ends the turn.",
            {
                "type": "object",
                "properties": {
                    "to": {"type": "string"},
                    "text": {"type": "string"},
                    "topic": {"type": "string"},
                    "terminal": {"type": "boolean"},
                },
                "required": ["to", "text"],
            },
            _send(port),
        ),
        ToolSpec(
            "ack_message",
            "Acknowledge a message you were given (by id) to its sender, without starting a "
            "turn there. Never acknowledge an acknowledgement.",
            {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "note": {"type": "string"}},
                "required": ["id"],
            },
            _ack(port),
        ),
        ToolSpec(
            "list_inbox",
            "List the messages waiting for you (not yet delivered), newest last.",
            {"type": "object", "properties": {"limit": {"type": "integer"}}},
            _list(port),
        ),
    ]


def _send(port: BusPort) -> Handler:
    async def send(args: dict[str, Any]) -> ToolOutput:
        to, text = args.get("to"), args.get("text")
        topic = args.get("topic")
        if not isinstance(to, str) or not to.strip():
            return ToolOutput("give `to`: a panel name, or '*' for everyone", is_error=True)
        if not isinstance(text, str) or not text.strip():
            return ToolOutput("give `text`: the message", is_error=True)
        if to == port.name:
            return ToolOutput("that is you; send to another panel", is_error=True)
        recipient = None if to == BROADCAST else to
        terminal = bool(args.get("terminal", False))
        try:
            subject = topic if isinstance(topic, str) else None
            payload = {"type": "message", "text": text}
            label = port.queue(recipient, payload, topic=subject, terminal=terminal)
        except NotQueuedError as exc:
            return ToolOutput(f"not sent: {exc}", is_error=True)
        said = f"Queued for {to} as outbox entry {label}; it is sent when this turn ends."
        if recipient is not None and not port.in_team(recipient):
            said += f" (No panel named {to!r} runs in this team; it waits on the bus.)"
        if terminal:
            said += " That was your terminal action: end your turn now; replies come later."
        return ToolOutput(said)

    return send


def _ack(port: BusPort) -> Handler:
    async def ack(args: dict[str, Any]) -> ToolOutput:
        ident = args.get("id")
        if not isinstance(ident, int):
            return ToolOutput("give `id`: the message's id", is_error=True)
        message = port.given(ident)
        if message is None:
            return ToolOutput(f"message {ident} was not delivered to you", is_error=True)
        if port.silent(message.type):
            return ToolOutput(
                f"message {ident} is itself an acknowledgement ({message.type}); "
                "do not acknowledge acknowledgements",
                is_error=True,
            )
        if message.sender in (OPERATOR, HOST):
            return ToolOutput(f"message {ident} is from the {message.sender}; no ack needed")
        note = args.get("note")
        payload: dict[str, Any] = {"type": "ack", "ack_of": ident}
        if isinstance(note, str) and note.strip():
            payload["note"] = note
        try:
            port.queue(message.sender, payload)
        except NotQueuedError as exc:
            return ToolOutput(f"not acknowledged: {exc}", is_error=True)
        return ToolOutput(f"Acknowledged message {ident} to {message.sender} (sent when this turn "
                          "ends).")  # fmt: skip

    return ack


def _list(port: BusPort) -> Handler:
    async def list_inbox(args: dict[str, Any]) -> ToolOutput:
        limit = args.get("limit", 20)
        limit = max(1, min(limit if isinstance(limit, int) else 20, 100))
        pending = await port.waiting(limit)
        if not pending:
            return ToolOutput("Nothing is waiting.")
        lines = [f"{len(pending)} waiting (delivered to you after this turn):"]
        for p in pending:
            body = " ".join(strip_controls(p.payload_json).split())[:PREVIEW_CHARS]
            topic = f" topic={strip_controls(p.topic or '')[:60]!r}" if p.topic else ""
            lines.append(f"- id={p.id} from={strip_controls(p.sender)!r}{topic} {p.state}: {body}")
        return ToolOutput("\n".join(lines))

    return list_inbox
