"""Asking the operator: the answers a question can get, their keys, and who is asked (`Asker`).

The policy's `ask` verdicts (verdict.py) go to an Asker: the solo REPL and the dashboard put
them to the operator through the host; `HeadlessAsker` answers no. Answers: yes (this call),
no, session (allow the tool until the session ends; hazards still ask) or always (store the
exact targets in permissions.json).

`Answer` is the one type of an answer from the policy to the host's control table: the
`answer` verb carries it and stores its value (panels/hostdb/verbs.py). `ANSWER_KEYS` is the
one map from a key to an answer, for every face that asks (the REPL, the dashboard).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # only for the Asker's signature: the faces read Answer and its keys alone
    from runtime.policy.verdict import Verdict
    from runtime.turn.driver import ToolCallRequest


class Answer(StrEnum):
    """An operator's answer; its value is what the control table stores."""

    YES = "yes"
    NO = "no"
    SESSION = "session"
    ALWAYS = "always"


# The key a face offers for each answer; "a" only when the question offers always.
ANSWER_KEYS: dict[str, Answer] = {
    "y": Answer.YES,
    "n": Answer.NO,
    "s": Answer.SESSION,
    "a": Answer.ALWAYS,
}


class Asker(Protocol):
    """Puts one `ask` verdict to whoever can answer it."""

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer: ...


class HeadlessAsker:
    """No operator is attached: every question is answered no."""

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer:
        return Answer.NO
