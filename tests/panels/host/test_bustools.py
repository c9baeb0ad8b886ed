"""The bus tools through their one seam: the host's PanelPort over a real SQLite bus, with the
real TurnOutbox of a turn in flight (or none), and what each tool says back to the model."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from panels.host.delivery.bustools import PanelPort, bus_tools
from panels.host.delivery.outbox import TurnOutbox
from panels.host.delivery.sendlimit import SendLimiter
from panels.host.services import TurnContext
from peerbus import BusBackend, Message, open_bus
from runtime.turn.driver import ToolOutput
from runtime.turn.sends import TurnSends

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"  # the tools' logic is the same on either backend


@pytest.fixture
async def bus(tmp_path: Path) -> AsyncIterator[BusBackend]:
    async with open_bus(tmp_path / "bus.sqlite") as opened:
        yield opened


class Session:
    """Where the turn's sends wait: the real TurnSends, open for the turn whose input is row 7."""

    def __init__(self) -> None:
        self.sends = TurnSends()
        self.sends.open(7)

    def queue_send(
        self, recipient: str | None, payload: dict[str, Any], topic: str | None = None
    ) -> str:
        return self.sends.queue(recipient, payload, topic)

    def note_commit(self, key: str, value: str) -> None:
        self.sends.note(key, value)


class Panel:
    """The panel "writer" of a team with "reader", as the host wires its bus tools."""

    def __init__(self, bus: BusBackend, *, in_turn: bool = True) -> None:
        self.session = Session()
        self.seen: OrderedDict[int, Message] = OrderedDict()
        self.outbox: TurnOutbox | None = None
        if in_turn:
            turn = TurnContext(number=1, delivered={}, started_at=0.0)
            limiter = SendLimiter(clock=lambda: 0.0)
            self.outbox = TurnOutbox("writer", turn, self.session, limiter, bus.options,
                                     self.seen, lambda event: None)  # fmt: skip
        port = PanelPort("writer", bus, {"writer", "reader"}, None, self.seen, lambda: self.outbox)
        self.tools = {spec.name: spec for spec in bus_tools(port)}

    def given(self, ident: int, sender: str, payload: dict[str, Any]) -> None:
        self.seen[ident] = Message(ident, sender, "writer", None, payload, "now")

    async def call(self, tool: str, **args: Any) -> ToolOutput:
        return await self.tools[tool].handler(args)

    def queued(self) -> list[tuple[str | None, dict[str, Any]]]:
        return [(d.recipient, d.payload) for d in self.session.sends.close()]


async def test_a_send_outside_a_turn_is_refused(bus: BusBackend) -> None:
    panel = Panel(bus, in_turn=False)
    said = await panel.call("send_message", to="reader", text="hi")
    assert said == ToolOutput("not sent: no turn is running: messages are sent from a turn",
                              is_error=True)  # fmt: skip
    said = await panel.call("ack_message", id=1)
    assert said.is_error and said.text == "message 1 was not delivered to you"


async def test_a_send_names_its_outbox_entry_and_what_the_model_should_know(
    bus: BusBackend,
) -> None:
    panel = Panel(bus)
    said = await panel.call("send_message", to="reader", text="plan", topic="t")
    assert said == ToolOutput(
        "Queued for reader as outbox entry 7.0; it is sent when this turn ends."
    )
    said = await panel.call("send_message", to="ghost", text="anyone?", terminal=True)
    assert said.text == (
        "Queued for ghost as outbox entry 7.1; it is sent when this turn ends. (No panel named "
        "'ghost' runs in this team; it waits on the bus.) That was your terminal action: end "
        "your turn now; replies come later."
    )
    assert (await panel.call("send_message", to="writer", text="me")).text == (
        "that is you; send to another panel"
    )
    assert panel.outbox is not None and panel.outbox.turn.terminal
    assert panel.queued() == [
        ("reader", {"type": "message", "text": "plan"}),
        ("ghost", {"type": "message", "text": "anyone?"}),
    ]


async def test_an_ack_answers_a_peer_but_never_an_ack_or_the_operator(bus: BusBackend) -> None:
    panel = Panel(bus)
    panel.given(3, "reader", {"type": "message", "text": "done"})
    panel.given(4, "reader", {"type": "ack", "ack_of": 1})
    panel.given(5, "operator", {"type": "input", "text": "go"})
    said = await panel.call("ack_message", id=4)
    assert said == ToolOutput("message 4 is itself an acknowledgement (ack); do not acknowledge "
                              "acknowledgements", is_error=True)  # fmt: skip
    said = await panel.call("ack_message", id=5)
    assert said == ToolOutput("message 5 is from the operator; no ack needed")
    said = await panel.call("ack_message", id=3, note="thanks")
    assert said == ToolOutput("Acknowledged message 3 to reader (sent when this turn ends).")
    assert panel.queued() == [("reader", {"type": "ack", "ack_of": 3, "note": "thanks"})]


async def test_the_inbox_lists_what_waits_on_the_bus(bus: BusBackend) -> None:
    panel = Panel(bus)
    assert (await panel.call("list_inbox")).text == "Nothing is waiting."
    await bus.register("writer")
    first = await bus.submit("reader", "writer", {"text": "one"}, topic="plan")
    await bus.submit("reader", "writer", {"text": "two"})
    lines = (await panel.call("list_inbox", limit=1)).text.splitlines()
    assert lines == [
        "1 waiting (delivered to you after this turn):",
        f"- id={first} from='reader' topic='plan' new: {{\"text\":\"one\"}}",
    ]
