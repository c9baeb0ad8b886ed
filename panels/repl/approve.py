"""The REPL's answer to an `ask` verdict: show the call with hidden characters escaped."""

from __future__ import annotations

from panels.repl.terminal import Terminal
from runtime.driver import ToolCallRequest
from runtime.policy.approver import Answer, prompt_text
from runtime.policy.policy import Verdict

_ANSWERS = {
    "y": Answer.YES,
    "yes": Answer.YES,
    "n": Answer.NO,
    "no": Answer.NO,
    "s": Answer.SESSION,
    "session": Answer.SESSION,
    "a": Answer.ALWAYS,
    "always": Answer.ALWAYS,
}


def parse_answer(text: str, *, always_offered: bool) -> Answer | None:
    answer = _ANSWERS.get(text.strip().lower())
    if answer is Answer.ALWAYS and not always_offered:
        return None
    return answer


class ReplAsker:
    """Asks on the terminal during a turn; end of input or /stop answers no."""

    def __init__(self, terminal: Terminal) -> None:
        self.terminal = terminal

    async def ask(self, call: ToolCallRequest, verdict: Verdict) -> Answer:
        self.terminal.write("\n" + prompt_text(verdict) + "\n")
        while True:
            line = await self.terminal.ask("allow? ")
            if line is None or line.strip() == "/stop":
                return Answer.NO
            answer = parse_answer(line, always_offered=bool(verdict.remember))
            if answer is not None:
                return answer
            offered = "y, n, s or a" if verdict.remember else "y, n or s"
            self.terminal.write(f"please answer {offered}\n")
