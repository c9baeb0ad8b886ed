"""The approvals a viewer has seen asked and not yet answered, in the order they were asked. Pure.

The host writes `ApprovalAsked` when a tool call waits for the operator and `ApprovalAnswered`
when it stops waiting (answered here, by another viewer, by `mnemara approve`, or timed out).
Folding the event log through `ApprovalQueue.take` gives the questions still open. Request ids
count from 1 again in each host process, so a `HostStarted` forgets every earlier question:
a new host has none open.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from panels.hostdb import catalogue as ev
from panels.text import clean
from runtime.policy.asking import ANSWER_KEYS, Answer
from runtime.policy.display import escape_command_for_display

TARGET_WIDTH = 2_000  # characters of a command shown in the answer modal


@dataclass(frozen=True)
class Question:
    """One open approval, its untrusted parts already cleaned for display."""

    panel: str
    request: int
    tool: str
    target: str
    reason: str
    always_offered: bool

    @classmethod
    def of(cls, event: ev.ApprovalAsked) -> Question:
        return cls(
            panel=event.panel or "",
            request=event.request,
            tool=clean(event.tool.removeprefix("mcp__mnemara__"), 60),
            # A command or path: look-alike letters escaped as well (#16).
            target=clean(escape_command_for_display(event.target), TARGET_WIDTH),
            reason=clean(event.reason, 500),
            always_offered=event.always_offered,
        )

    def answers(self) -> dict[str, Answer]:
        """Key to answer, for the answers this question accepts."""
        offered = self.always_offered
        return {k: a for k, a in ANSWER_KEYS.items() if a is not Answer.ALWAYS or offered}


class ApprovalQueue:
    """Open questions by request id, oldest first."""

    def __init__(self) -> None:
        self._open: dict[int, Question] = {}

    def take(self, events: Iterable[ev.HostEvent]) -> None:
        for event in events:
            match event:
                case ev.HostStarted():
                    self._open.clear()
                case ev.ApprovalAsked(panel=str()):
                    self._open[event.request] = Question.of(event)
                case ev.ApprovalAnswered():
                    self._open.pop(event.request, None)

    def waiting(self, panel: str | None = None) -> list[Question]:
        return [q for q in self._open.values() if panel is None or q.panel == panel]

    def is_open(self, request: int) -> bool:
        return request in self._open

    def next(self, *, skip: Iterable[int] = ()) -> Question | None:
        """The oldest open question not in `skip` (those answered here, not yet confirmed)."""
        skipped = set(skip)
        return next((q for q in self._open.values() if q.request not in skipped), None)
