"""`ApprovalQueue`: the open questions folded from the event log. Pure."""

from __future__ import annotations

from panels.hostdb import catalogue as ev
from panels.ui.approvals import ApprovalQueue


def asked(panel: str, request: int, *, always: bool = False) -> ev.ApprovalAsked:
    return ev.ApprovalAsked(panel=panel, request=request, tool="mcp__mnemara__Bash",
                            target="rm -rf \x1b[2J /tmp/x\nsecond line", reason="asks",
                            always_offered=always, remember=(), timeout=60.0)  # fmt: skip


def test_questions_open_in_order_and_close_when_answered_or_a_new_host_starts() -> None:
    queue = ApprovalQueue()
    queue.take([asked("a", 1), asked("b", 2, always=True), asked("a", 3)])
    assert [q.request for q in queue.waiting()] == [1, 2, 3]
    assert [q.request for q in queue.waiting("a")] == [1, 3]
    assert queue.next(skip=[1]) == queue.waiting()[1]
    queue.take([ev.ApprovalAnswered(panel="a", request=1, answer="timed out (denied)")])
    assert not queue.is_open(1) and queue.is_open(3)
    first = queue.waiting()[0]
    assert first.tool == "Bash" and "\x1b" not in first.target and "\n" not in first.target
    assert first.answers() == {"y": "yes", "n": "no", "s": "session", "a": "always"}
    assert "a" not in queue.waiting()[1].answers()
    queue.take([ev.HostStarted(team="t", bus="b", pid=1)])  # request ids count again from 1
    assert queue.waiting() == [] and queue.next() is None
