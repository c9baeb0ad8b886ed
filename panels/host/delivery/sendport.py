"""The seams a send goes through: what the bus tools ask of their panel (`BusPort`), and what
a send asks of the turn in flight (`Outbox`). Protocols only, importing nothing of the host,
so the runner can hold a turn's outbox and the tools can be driven by a small fake.

The host's implementations: `PanelPort` (bustools.py), built with the panel's tools, and
`TurnOutbox` (outbox.py), built once per turn by run_turn (turn.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from peerbus import Message, Pending


class Outbox(Protocol):
    """The sends of the turn in flight."""

    def queue(
        self,
        recipient: str | None,
        payload: dict[str, Any],
        *,
        topic: str | None = None,
        terminal: bool = False,
    ) -> str:
        """Queue a send of the turn (`recipient` None: everyone); its outbox id. Raises
        NotQueuedError (outbox.py) with words the model can act on."""
        ...


class BusPort(Outbox, Protocol):
    """What the bus tools ask of the panel they serve, and nothing more. Its `queue` raises
    NotQueuedError when no turn is in flight."""

    @property
    def name(self) -> str: ...

    def given(self, ident: int) -> Message | None:
        """The message `ident` delivered to this panel lately, if any."""
        ...

    def silent(self, kind: str | None) -> bool:
        """True for a message type the bus settles without a turn (an acknowledgement)."""
        ...

    def in_team(self, name: str) -> bool:
        """True when a panel of that name runs in this team."""
        ...

    async def waiting(self, limit: int) -> list[Pending]:
        """The messages waiting for this panel, newest last."""
        ...
