"""Who a panel's call sends to, as the host tells the guard (panels/host/delivery/recipients.py)."""

from __future__ import annotations

from types import SimpleNamespace

from panels.host.delivery.recipients import recipients_of
from runtime.turn.driver import ToolCallRequest


def call(tool: str, **args: object) -> ToolCallRequest:
    return ToolCallRequest("t", f"mcp__mnemara__{tool}", dict(args))


def test_sends_acks_and_nudges_name_their_recipients() -> None:
    seen = {7: SimpleNamespace(sender="b"), 8: SimpleNamespace(sender="operator")}
    named = recipients_of(seen)  # type: ignore[arg-type]
    assert named(call("send_message", to="b", text="x")) == ("b",)
    assert named(call("send_message", to="*", text="x")) == ("*",)
    assert named(call("send_message", text="x")) == ("?",)  # unreadable: no lane lists it
    assert named(call("nudge_panel", name="c", text="x")) == ("c",)
    assert named(call("ack_message", id=7)) == ("b",)
    assert named(call("ack_message", id=8)) is None  # the operator needs no ack: no send
    assert named(call("list_inbox")) is None
    assert named(ToolCallRequest("t", "send_message", {"to": "b"})) is None  # not ours
