"""The MCP tools an external agent calls: names, descriptions, input schemas and handlers.

`TOOLS` is the list the server advertises; `Toolbox.call` runs one by name and always
returns an `Answer`: the result as JSON text (or lines, for status and events), or an error
whose text says what to do next (a `ToolRefused`, a bus error, an unreadable host.sqlite).
Nothing raised here reaches the client as a traceback; an unexpected error is logged on the
server's stderr and answered in one line. No tool answers approvals or writes on an
operator route: those are the operator's (`mnemara approve`, `mnemara send`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from panels.errors import PanelsError
from panels.mcp.participant import LEASE, MAX_LEASE, MAX_WAIT, Participant
from panels.mcp.rules import MAX_KEY, ToolRefused, number
from panels.mcp.views import MAX_EVENTS, TeamPlace, event_lines, status_lines
from peerbus import PeerbusError

log = logging.getLogger("mnemara.mcp")


@dataclass(frozen=True)
class ToolDef:
    name: str
    description: str
    schema: dict[str, Any]


@dataclass(frozen=True)
class Answer:
    text: str
    error: bool = False


def _object(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


_LIMIT = {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}

TOOLS: tuple[ToolDef, ...] = (
    ToolDef(
        "send",
        "Send a message to a panel of the team (`to`: its name) or to every panel you may "
        "write to (`to`: '*'). `key` names this message: use a fresh one per message, and the "
        "same one when you retry a send whose answer you did not see (it is then not sent "
        "twice). Replies come to your inbox.",
        _object(
            {
                "to": {"type": "string", "description": "a panel's name, or '*'"},
                "text": {"type": "string", "description": "the message"},
                "key": {"type": "string", "minLength": 1, "maxLength": MAX_KEY},
                "topic": {"type": "string", "description": "optional: what it is about"},
            },
            ("to", "text", "key"),
        ),
    ),
    ToolDef(
        "inbox",
        "Take the messages waiting for you, with their ids. Acknowledge each one you have "
        "read with `ack`; those you do not come back after the lease (default "
        f"{LEASE:g} s), so nothing is lost if you stop midway.",
        _object(
            {
                "limit": _LIMIT,
                "lease_seconds": {"type": "number", "minimum": 5, "maximum": MAX_LEASE},
            }
        ),
    ),
    ToolDef(
        "ack",
        "Acknowledge messages `inbox` gave you, by id: they are done and never come back.",
        _object({"ids": {"type": "array", "items": {"type": "integer"}, "minItems": 1}}, ("ids",)),
    ),
    ToolDef(
        "wait",
        "Wait until a message for you arrives, or the timeout passes (at most "
        f"{MAX_WAIT:g} s); says how many wait. Then call `inbox`.",
        _object({"timeout_seconds": {"type": "number", "minimum": 0, "maximum": MAX_WAIT}}),
    ),
    ToolDef(
        "status",
        "The team's panels as `mnemara ps` shows them: state, turns, tokens, spend, inbox, "
        "and whether the host runs.",
        _object({}),
    ),
    ToolDef(
        "events",
        "The team's last events as `mnemara logs` prints them.",
        _object({"count": {"type": "integer", "minimum": 1, "maximum": MAX_EVENTS}}),
    ),
    ToolDef(
        "dead_letters",
        "Messages addressed to you that the bus gave up on, with the reason.",
        _object({"limit": _LIMIT}),
    ),
)

SCHEMAS = {tool.name: tool.schema for tool in TOOLS}
Handler = Callable[[Mapping[str, Any]], Awaitable[Answer]]


class Toolbox:
    """The tools of one server: the participant's bus calls and the team's host.sqlite."""

    def __init__(self, participant: Participant, place: TeamPlace) -> None:
        self.participant = participant
        self.place = place
        self.handlers: dict[str, Handler] = {
            "send": self._json(participant.send),
            "inbox": self._json(participant.inbox),
            "ack": self._json(participant.ack),
            "wait": self._json(participant.wait),
            "dead_letters": self._json(participant.dead_letters),
            "status": self._status,
            "events": self._events,
        }

    async def call(self, name: str, args: Mapping[str, Any] | None) -> Answer:
        handler = self.handlers.get(name)
        if handler is None:
            return Answer(f"no tool {name!r}; the tools are {', '.join(self.handlers)}", True)
        if args is not None and not isinstance(args, Mapping):
            return Answer("give the arguments as an object", True)
        takes = SCHEMAS[name]["properties"]
        unknown = sorted(set(args or {}) - set(takes))
        if unknown:
            said = ", ".join(takes) or "none"
            return Answer(f"{name} takes no {', '.join(unknown)}; its arguments: {said}", True)
        try:
            return await handler(args or {})
        except ToolRefused as exc:
            return Answer(str(exc), True)
        except (PeerbusError, PanelsError, OSError) as exc:
            # The bus or host.sqlite said no (busy, gone, unreadable): its message says why.
            return Answer(f"{name} failed: {exc}", True)
        except Exception:
            log.exception("tool %s failed", name)
            return Answer(f"{name} failed unexpectedly; the server's log (stderr) has why", True)

    @staticmethod
    def _json(work: Callable[[Mapping[str, Any]], Awaitable[dict[str, Any]]]) -> Handler:
        async def run(args: Mapping[str, Any]) -> Answer:
            return Answer(json.dumps(await work(args), ensure_ascii=False))

        return run

    async def _status(self, args: Mapping[str, Any]) -> Answer:
        lines = await anyio.to_thread.run_sync(status_lines, self.place)
        return Answer("\n".join(lines))

    async def _events(self, args: Mapping[str, Any]) -> Answer:
        count = int(number(args, "count", 20, 1, MAX_EVENTS))
        lines = await anyio.to_thread.run_sync(event_lines, self.place, count)
        return Answer("\n".join(lines) or "(no events yet: the host has not run)")
