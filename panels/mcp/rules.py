"""What an external agent may do on the team's bus, decided before the bus is touched. Pure.

The team file admits the agent (`[team.external.<name>]`, panels/team): it may write to the
panels named in `writes_to` that hear it (a panel whose `listens_to` is set must name it),
never on an operator route (`<panel>@operator`, where only the operator writes) and never to
itself. Its text is capped twice: at the team's `max_chars` for it, then at the bus's payload
cap. Every send carries the client's idempotency key, kept on the bus as `mcp:<name>:<key>`
(one per panel for a broadcast), so a client that retries a call it saw no answer to sends
nothing twice.

A refusal is a `ToolRefused` whose message says what to do; the server turns it into a tool
error result (isError), never a protocol error or a traceback.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from panels.errors import PanelsError
from panels.host.delivery.feed import HOST, OPERATOR, is_operator_route
from panels.team import PanelSpec
from panels.team.load import ExternalSpec
from peerbus import BusOptions, DeadLetter, Message, Outgoing, PayloadError
from peerbus.payload import encode_payload
from peerbus.render import strip_controls

BROADCAST = "*"
MAX_KEY = 100  # characters of a client's idempotency key
KEY_PREFIX = "mcp"


class ToolRefused(PanelsError):
    """Raised by a tool for a call it will not carry out; never leaves the MCP server: it
    becomes the call's error result, whose text is this message (what to do next)."""


@dataclass(frozen=True)
class Admission:
    """What the team file lets one external agent do."""

    name: str  # its name on the bus: the sender of what it sends, the recipient of replies
    panels: tuple[str, ...]  # every panel of the team, in file order
    writes_to: tuple[str, ...]  # the panels it may write to (and that hear it)
    why_not: Mapping[str, str]  # panel -> why it may not write there
    max_chars: int
    max_payload_bytes: int
    max_depth: int


def admit(spec: ExternalSpec, panels: Sequence[PanelSpec], options: BusOptions) -> Admission:
    """The agent `spec` names, with the team's panels and the bus's caps."""
    allowed: list[str] = []
    why_not: dict[str, str] = {}
    for panel in panels:
        if panel.name not in spec.writes_to:
            why_not[panel.name] = (
                f"{spec.name!r} may not write to {panel.name!r}: the team file's "
                f"[team.external.{spec.name}] writes_to does not name it"
            )
        elif panel.listens_to is not None and spec.name not in panel.listens_to:
            why_not[panel.name] = (
                f"{panel.name!r} does not hear {spec.name!r}: its listens_to in the team file "
                "does not name it"
            )
        else:
            allowed.append(panel.name)
    return Admission(
        name=spec.name,
        panels=tuple(p.name for p in panels),
        writes_to=tuple(allowed),
        why_not=why_not,
        max_chars=spec.max_chars,
        max_payload_bytes=options.max_payload_bytes,
        max_depth=options.max_depth,
    )


def plan_send(
    admission: Admission, *, to: object, text: object, key: object, topic: object = None
) -> tuple[Outgoing, ...]:
    """The messages one `send` call puts on the bus (one per panel for `*`), or ToolRefused."""
    target = _recipient(admission, to)
    if not isinstance(text, str) or not text.strip():
        raise ToolRefused("give `text`: the message, as a non-empty string")
    if len(text) > admission.max_chars:
        raise ToolRefused(
            f"the text has {len(text):,} characters; the team admits at most "
            f"{admission.max_chars:,} from {admission.name!r}: shorten it or split it into "
            "several sends (each with its own key)"
        )
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY or not key.strip():
        raise ToolRefused(
            f"give `key`: 1 to {MAX_KEY} characters naming this message (a fresh one per "
            "message; the same one when you retry a send whose answer you did not see)"
        )
    if topic is not None and not isinstance(topic, str):
        raise ToolRefused("`topic` is a short string (or leave it out)")
    payload = {"type": "message", "text": text}
    try:
        encode_payload(
            payload, max_bytes=admission.max_payload_bytes, max_depth=admission.max_depth
        )
    except PayloadError as exc:
        raise ToolRefused(f"not sent: {exc}; shorten the text") from None
    subject = topic or None
    bus_key = f"{KEY_PREFIX}:{admission.name}:{key}"
    if target is None:
        return tuple(
            Outgoing(panel, payload, subject, key=f"{bus_key}:{panel}")
            for panel in admission.writes_to
        )
    return (Outgoing(target, payload, subject, key=bus_key),)


def _recipient(admission: Admission, to: object) -> str | None:
    """The panel `to` names (None: every panel the agent may write to), or ToolRefused."""
    may = ", ".join(admission.writes_to) or "none"
    if not isinstance(to, str) or not to.strip():
        raise ToolRefused(f"give `to`: a panel's name ({may}) or '*' for all of them")
    to = to.strip()
    if to == BROADCAST:
        if not admission.writes_to:
            raise ToolRefused(f"{admission.name!r} may write to no panel; ask the operator")
        return None
    if is_operator_route(to) or to in (OPERATOR, HOST):
        raise ToolRefused(
            f"{to!r} is the operator's (or the host's): only the operator writes there. Send "
            f"to a panel by its name ({may})"
        )
    if to == admission.name:
        raise ToolRefused(f"that is you; send to a panel ({may})")
    if to not in admission.panels:
        raise ToolRefused(
            f"no panel {to!r} in this team; its panels are {', '.join(admission.panels)} "
            "(`status` lists them)"
        )
    if to not in admission.writes_to:
        raise ToolRefused(f"{admission.why_not[to]}; you may write to: {may}")
    return to


def number(args: Mapping[str, Any], name: str, default: float, low: float, high: float) -> float:
    """A numeric argument within [low, high] (absent: `default`), or ToolRefused."""
    value = args.get(name, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ToolRefused(f"`{name}` is a number from {low:g} to {high:g}")
    if not low <= value <= high:
        raise ToolRefused(f"`{name}` is {value:g}; give a number from {low:g} to {high:g}")
    return float(value)


def ids_of(args: Mapping[str, Any]) -> tuple[int, ...]:
    """The message ids an `ack` names, or ToolRefused."""
    ids = args.get("ids")
    if (
        not isinstance(ids, list)
        or not ids
        or not all(isinstance(i, int) and not isinstance(i, bool) for i in ids)
    ):
        raise ToolRefused("give `ids`: the ids of messages `inbox` gave you, as a list of integers")
    return tuple(dict.fromkeys(ids))


def _text(payload_json: str | None, payload: Mapping[str, Any] | None = None) -> str:
    """A message's text for the client: the payload's `text`, else the payload as JSON.
    Control characters are stripped (the payload is whatever a panel or program sent)."""
    if payload is None:
        try:
            decoded = json.loads(payload_json or "null")
        except ValueError:
            return strip_controls(payload_json or "")
        payload = decoded if isinstance(decoded, dict) else None
        if payload is None:
            return strip_controls(payload_json or "")
    said = payload.get("text")
    if isinstance(said, str):
        return strip_controls(said)
    return strip_controls(json.dumps(payload, ensure_ascii=False, sort_keys=True))


def message_item(message: Message) -> dict[str, Any]:
    """One claimed message as the `inbox` tool shows it."""
    item: dict[str, Any] = {
        "id": message.id,
        "from": strip_controls(message.sender),
        "text": _text(None, message.payload),
        "sent_at": message.submitted_at,
    }
    if message.topic:
        item["topic"] = strip_controls(message.topic)
    if message.type not in (None, "message"):
        item["type"] = strip_controls(str(message.type))
    if message.attempt > 1:
        item["attempt"] = message.attempt
    return item


def dead_letter_item(letter: DeadLetter) -> dict[str, Any]:
    """One dead letter as the `dead_letters` tool shows it."""
    return {
        "id": letter.id,
        "from": strip_controls(letter.sender),
        "reason": strip_controls(letter.reason),
        "text": _text(letter.payload_json),
        "failed_at": letter.failed_at,
    }
