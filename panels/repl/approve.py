"""The REPL's answer to a panel's approval request: the call shown escaped, y/n/s/a asked.

The host's asker (panels/host/control/asker.py) turns an `ask` verdict into an `ApprovalAsked`
event whose target, reason and "always" rules are already escaped for display; the face
puts it to the operator here and answers with the host's `answer` verb.
"""

from __future__ import annotations

from panels.hostdb.catalogue import ApprovalAsked
from panels.repl.terminal import Terminal
from runtime.policy.asking import ANSWER_KEYS, Answer
from runtime.policy.display import escape_command_for_display


def parse_answer(text: str, *, always_offered: bool) -> Answer | None:
    """The answer a line gives: its key (`y`) or the whole word (`yes`), in any case."""
    word = text.strip().lower()
    answer = ANSWER_KEYS.get(word) or next((a for a in Answer if a.value == word), None)
    if answer is Answer.ALWAYS and not always_offered:
        return None
    return answer


def question_text(request: ApprovalAsked) -> str:
    """The question for an approval request, as `prompt_text` words it."""
    lines = [
        f"{request.tool} wants to run:",
        f"  {escape_command_for_display(request.target)}",  # look-alikes escaped too (#16)
        f"why asked: {request.reason}",
    ]
    choices = "[y]es once / [n]o / [s]ession"
    if request.always_offered:
        lines.append("always would allow exactly:")
        lines.extend(f"  {escape_command_for_display(t)}" for t in request.remember)
        choices += " / [a]lways"
    lines.append(choices)
    return "\n".join(lines)


async def ask_operator(terminal: Terminal, request: ApprovalAsked) -> Answer:
    """Ask until a valid answer; end of input or /stop answers no."""
    always = request.always_offered
    terminal.say(question_text(request))
    while True:
        line = await terminal.ask("allow? ")
        if line is None or line.strip() == "/stop":
            return Answer.NO
        answer = parse_answer(line, always_offered=always)
        if answer is not None:
            return answer
        terminal.say(f"please answer {'y, n, s or a' if always else 'y, n or s'}")
