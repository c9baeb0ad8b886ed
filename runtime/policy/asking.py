"""Asking the operator: the answers a question can get, and who is asked (`Asker`).

The policy's `ask` verdicts (verdict.py) go to an Asker: the solo REPL and the dashboard put
them to the operator through the host; `HeadlessAsker` answers no. Answers: yes (this call),
no, always (store the exact targets in permissions.json), or session (allow the tool until
the session ends; hazards still ask).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Protocol

from runtime.driver import ToolCallRequest
from runtime.policy.verdict import Verdict


class Answer(StrEnum):
    YES = "yes"
    NO = "no"
    ALWAYS = "always"
    SESSION = "session"


class Asker(Protocol):
    """Puts one `ask` verdict to whoever can answer it."""

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer: ...


class HeadlessAsker:
    """No operator is attached: every question is answered no."""

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer:
        return Answer.NO
