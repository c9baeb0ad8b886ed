"""Approvals without a terminal: a question becomes an event, an answer a verb.

`HostAsker.ask` writes an `ApprovalAsked` event (with the request id, the tool, what it would
do and why it asks), then waits for the `answer` verb from the operator (`mnemara approve` /
`deny`, the REPL, the dashboard). No answer within the timeout is a no; the model reads why.
Shutdown answers no to every question still open.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio

from panels.host.control.eventlog import EventLog
from panels.hostdb.catalogue import ApprovalAnswered, ApprovalAsked
from runtime.policy.asking import Answer
from runtime.policy.display import escape_command_for_display
from runtime.policy.verdict import Verdict
from runtime.turn.driver import ToolCallRequest


@dataclass
class _Open:
    panel: str
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Answer = Answer.NO


class Approvals:
    """The open questions of every panel of a host, by request id."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._open: dict[int, _Open] = {}

    def open(self, panel: str) -> tuple[int, _Open]:
        ident = next(self._ids)
        entry = _Open(panel)
        self._open[ident] = entry
        return ident, entry

    def close(self, ident: int) -> None:
        self._open.pop(ident, None)

    def pending(self, panel: str | None = None) -> list[int]:
        return sorted(i for i, e in self._open.items() if panel is None or e.panel == panel)

    def answer(self, ident: int, answer: Answer, *, panel: str | None = None) -> bool:
        """Answer an open question (of `panel`, when given); False when there is none."""
        entry = self._open.get(ident)
        if entry is None or (panel is not None and entry.panel != panel):
            return False
        entry.answer = answer
        entry.answered.set()
        return True

    def deny_all(self) -> None:
        for ident in list(self._open):
            self.answer(ident, Answer.NO)


class HostAsker:
    """The `Asker` of one panel in a host."""

    def __init__(
        self,
        panel: str,
        approvals: Approvals,
        log: EventLog,
        *,
        timeout: float,
        on_state: Callable[[str], None] | None = None,
    ) -> None:
        self.panel = panel
        self.approvals = approvals
        self.log = log
        self.timeout = timeout
        self._on_state = on_state or (lambda signal: None)

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer:
        ident, entry = self.approvals.open(self.panel)
        self.log.emit(
            ApprovalAsked(
                panel=self.panel,
                request=ident,
                tool=verdict.tool,
                target=escape_command_for_display(verdict.target, max_chars=2_000),
                # The reason quotes the command's segments: look-alikes escaped there too.
                reason=escape_command_for_display(verdict.reason, max_chars=500),
                always_offered=bool(verdict.remember),
                remember=tuple(
                    escape_command_for_display(t, max_chars=2_000) for t in verdict.remember
                ),
                timeout=self.timeout,
            )
        )
        self._on_state("approval_request")
        answer = Answer.NO
        try:
            with anyio.move_on_after(self.timeout) as scope:
                await entry.answered.wait()
            answer = entry.answer
            how = "timed out (denied)" if scope.cancelled_caught else answer.value
        finally:
            self.approvals.close(ident)
        self.log.emit(ApprovalAnswered(panel=self.panel, request=ident, answer=how))
        self._on_state("approval_answer")
        return answer
