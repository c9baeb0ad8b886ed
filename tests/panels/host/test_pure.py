"""The host's pure cores: restart policy, state machine, coalescing, turn input, slope, digest."""

from __future__ import annotations

import pytest

from panels.host.control.coalesce import Coalescer
from panels.host.delivery.feed import PEER_ONLY_INSTRUCTION, claim_limits, compose_turn
from panels.host.turns.restart import Failure, GiveUp, Restart, RestartPolicy, decide
from panels.host.turns.states import PanelState, next_state
from panels.hostdb.catalogue import Said, ToolCalled
from panels.team import BatchSettings
from panels.watchdog import (
    Activity,
    DigestSettings,
    SlopeSettings,
    TurnSpend,
    budget_slope,
    build_digest,
    digest_key,
)
from peerbus import Message

POLICY = RestartPolicy(base_delay=1, factor=2, max_delay=5, max_failures=3, window=100,
                       healthy_after=50)  # fmt: skip


def fail(at: float, ran_for: float = 1.0) -> Failure:
    return Failure(at, ran_for, "boom")


def test_back_off_doubles_and_is_capped() -> None:
    assert decide(POLICY, [fail(0)], 0) == Restart(1, 1)
    assert decide(POLICY, [fail(0), fail(2)], 2) == Restart(2, 2)
    assert decide(POLICY, [fail(0), fail(2), fail(5)], 5) == Restart(4, 3)


def test_gives_up_after_too_many_failures_in_the_window() -> None:
    verdict = decide(POLICY, [fail(0), fail(2), fail(5), fail(10)], 10)
    assert isinstance(verdict, GiveUp) and "4 times" in verdict.reason
    # The same count spread beyond the window is not a reason to give up.
    assert isinstance(decide(POLICY, [fail(0), fail(200), fail(400), fail(600)], 600), Restart)


def test_a_healthy_life_resets_the_streak() -> None:
    assert decide(POLICY, [fail(0), fail(2), fail(80, ran_for=60)], 80) == Restart(0.0, 1)
    assert decide(POLICY, [fail(0), fail(80, ran_for=60), fail(82)], 82) == Restart(2, 2)


def test_the_policy_checks_its_numbers() -> None:
    with pytest.raises(ValueError):
        RestartPolicy(base_delay=10, max_delay=1)
    with pytest.raises(ValueError):
        decide(POLICY, [], 0)


def test_stream_signals_move_the_state_but_not_out_of_a_stop() -> None:
    state = PanelState.IDLE
    for signal, expected in [("turn_started", "thinking"), ("tool_call", "tool"),
                             ("approval_request", "approval"), ("approval_answer", "tool"),
                             ("tool_result", "thinking"), ("turn_ended", "idle")]:  # fmt: skip
        state = next_state(state, signal)
        assert state == expected
    assert next_state(PanelState.HALTED, "tool_call") is PanelState.HALTED
    assert next_state(PanelState.IDLE, "nonsense") is PanelState.IDLE


def test_text_deltas_coalesce_and_keep_order_with_other_events() -> None:
    c = Coalescer(max_chars=10, max_age=1.0)
    assert c.text("a", "hel", 0.0) == [] and c.text("a", "lo ", 0.1) == []
    call = ToolCalled(panel="a", id="t1", tool="Bash", input="ls")
    out = c.event(0.2, call)
    assert out == [(0.2, Said(panel="a", text="hello ")), (0.2, call)]
    assert c.text("b", "0123456789", 0.3)[0][1] == Said(panel="b", text="0123456789")  # full
    c.text("a", "x", 1.0)
    assert c.due(1.5) == [] and [e for _, e in c.due(2.0)] == [Said(panel="a", text="x")]
    c.text("a", "y", 3.0)
    assert [e for _, e in c.drain(3.0)] == [Said(panel="a", text="y")]


def msg(ident: int, sender: str, text: str = "x", *, stale: bool = False) -> Message:
    return Message(ident, sender, "p", None, {"type": "message", "text": text}, "t",
                   recipient_epoch=1 if stale else None, stale_epoch=stale)  # fmt: skip


def test_operator_input_goes_first_and_peers_are_fenced() -> None:
    turn = compose_turn([msg(9, "operator", "do the thing")], [msg(3, "eng", "done")])
    assert turn is not None
    assert turn.text.startswith("do the thing\n\nMessages from other panels")
    assert 'from="eng"' in turn.text and "<<<payload" in turn.text
    assert PEER_ONLY_INSTRUCTION not in turn.text
    assert turn.consumed_ids == (3, 9) and turn.senders == ("eng", "operator")
    assert compose_turn([], []) is None


def test_stale_epoch_messages_are_flagged_twice() -> None:
    turn = compose_turn([], [msg(4, "eng", stale=True), msg(5, "eng")])
    assert turn is not None and turn.stale_ids == (4,)
    assert "stale_epoch=true" in turn.text and "message(s) 4 were addressed" in turn.text
    assert turn.text.endswith(PEER_ONLY_INSTRUCTION)


def test_batch_off_is_one_message_a_turn() -> None:
    assert claim_limits(BatchSettings(enabled=False), 10).max_messages == 1
    assert claim_limits(BatchSettings(max_messages=7), 10).max_messages == 7


def test_a_turn_takes_no_more_than_it_may_send_operator_input_included() -> None:
    limits = claim_limits(BatchSettings(max_messages=10), 4)
    assert (limits.max_messages, limits.operator) == (4, 4)
    assert [limits.peers(n) for n in (0, 3, 4)] == [4, 1, 0]


def spend(tokens: int, *, calls: int = 3, progress: bool = False) -> TurnSpend:
    return TurnSpend(tokens, 0.0, calls, progress)


def test_slope_fires_on_rising_spend_without_progress() -> None:
    settings = SlopeSettings(turns=3, growth=1.5)
    assert budget_slope([spend(100), spend(160), spend(250)], settings) is not None
    assert budget_slope([spend(100), spend(160)], settings) is None
    assert budget_slope([spend(100), spend(160, progress=True), spend(250)], settings) is None
    assert budget_slope([spend(100), spend(120), spend(250)], settings) is None  # slow growth
    assert budget_slope([spend(100), spend(160, calls=0), spend(250)], settings) is None


def activity(name: str, **kw: object) -> Activity:
    base = dict(kind="worker", state="idle", turns=1, tokens=10, usd=0.0, turn_calls=0,
                turn_seconds=0.0, recent_calls=(), halt=None)  # fmt: skip
    base.update(kw)
    return Activity(name=name, **base)  # type: ignore[arg-type]


def test_digest_alerts_on_runaways_and_halts() -> None:
    settings = DigestSettings(runaway_calls=5, long_turn_seconds=60)
    panels = [
        activity("eng", state="tool", turn_calls=6, turn_seconds=12, recent_calls=("Bash a",)),
        activity("prod", state="halted", halt="[SENTINEL HALT] repeat: ..."),
        activity("slow", state="thinking", turn_calls=1, turn_seconds=90),
    ]
    digest = build_digest(panels, settings)
    assert digest["type"] == "digest"
    assert [a.split(":")[0] for a in digest["alerts"]] == ["runaway", "halted", "long turn"]
    assert digest["panels"][0]["recent_tool_calls"] == ["Bash a"]
    moved = [activity("eng", state="tool", turn_calls=6, turn_seconds=99), *panels[1:]]
    assert digest_key(moved, settings) == digest_key(panels, settings)  # ages are no news
    one_more = [activity("eng", state="tool", turn_calls=7, turn_seconds=15), *panels[1:]]
    assert digest_key(one_more, settings) == digest_key(panels, settings)  # nor each call
    quiet = [activity("eng", state="tool", turn_calls=2, turn_seconds=15), *panels[1:]]
    assert digest_key(quiet, settings) != digest_key(panels, settings)  # the alert went


def test_a_poison_messages_failures_are_forgiven_by_the_restart_policy() -> None:
    poison = [Failure(t, 1.0, "boom", messages=frozenset({7})) for t in (0, 2, 5)]
    other = Failure(6, 1.0, "boom", messages=frozenset({8}))
    assert isinstance(decide(POLICY, [*poison, other], 6), GiveUp)
    assert decide(POLICY, [*poison, other], 6, {7}) == Restart(1, 1)
    assert decide(POLICY, [*poison, other, fail(7)], 7, {7}) == Restart(2, 2)
    assert decide(POLICY, poison, 5, {7}) == Restart(0.0, 0)  # the last one is forgiven


def _m(ident: int, attempt: int = 1) -> Message:
    return Message(ident, "b", "a", None, {"text": "x"}, "now", attempt=attempt)


def test_poison_is_judged_alone_and_a_panel_fault_never_counts() -> None:
    from panels.host.delivery.poison import FailureBook, Verdict, judge
    from runtime.errors import DriverError, ServiceBusyError

    book = FailureBook()
    boom = DriverError("boom")
    assert judge(book, ServiceBusyError("busy"), 1, [_m(1, 3)]) == Verdict(uncounted=(1,))
    # A batch: only first failures count (they isolate the message), nobody is judged.
    assert judge(book, boom, 3, [_m(1), _m(2, 2), _m(3)]) == Verdict(counted=(1, 3), uncounted=(2,))
    assert judge(book, boom, 1, [_m(2, 2)]) == Verdict(counted=(2,))
    assert judge(book, boom, 1, [_m(2, 3)]) == Verdict(poison=(2,))
    # Another message fails alone with no good turn since: the panel looks broken.
    assert judge(book, boom, 1, [_m(3, 3)]) == Verdict(kept=(3,))
    book.turn_done()
    assert judge(book, boom, 1, [_m(3, 3)]) == Verdict(poison=(3,))


def test_the_send_limiter_refuses_forwards_copies_and_bursts() -> None:
    from panels.host.delivery.sendlimit import SendLimiter, SendLimits, SendRefused

    now = [0.0]
    limiter = SendLimiter(SendLimits(per_turn=3, per_window=4, window=10), clock=lambda: now[0])
    with pytest.raises(SendRefused, match="forwarded as it is"):
        limiter.check(turn=1, recipient="c", text="PASS  it on", delivered=[("b", "pass it on")])
    limiter.check(turn=1, recipient="c", text="hello")
    limiter.check(turn=1, recipient="d", text="Hello ")
    with pytest.raises(SendRefused, match="2 times"):
        limiter.check(turn=1, recipient="e", text="hello")
    limiter.check(turn=1, recipient="e", text=None)
    with pytest.raises(SendRefused, match="one turn"):
        limiter.check(turn=1, recipient="e", text=None)
    limiter.check(turn=2, recipient="e", text=None)
    with pytest.raises(SendRefused, match="last 10s"):
        limiter.check(turn=3, recipient="e", text=None)
    limiter.forget_turn(2)
    limiter.check(turn=3, recipient="e", text=None)
    now[0] = 11.0  # the window has passed: the copies and the counts are forgotten
    limiter.check(turn=4, recipient="e", text="hello")


def test_forgetting_a_failed_turn_keeps_what_the_other_turns_sent() -> None:
    from panels.host.delivery.sendlimit import SendLimiter, SendLimits, SendRefused

    limits = SendLimits(per_turn=3, per_window=4, window=10, max_copies=1)
    limiter = SendLimiter(limits, clock=lambda: 0.0)
    limiter.check(turn=1, recipient="b", text="kept")
    limiter.check(turn=1, recipient="b", text=None)
    limiter.check(turn=2, recipient="c", text="dropped")
    limiter.forget_turn(2)
    # Turn 2's send never went out: its text is no copy, and it holds no place in the window.
    limiter.check(turn=3, recipient="c", text="dropped")
    # Turn 1's sends did: its text is still a copy, and they still count in the window.
    with pytest.raises(SendRefused) as copy:
        limiter.check(turn=3, recipient="d", text="kept")
    assert str(copy.value).startswith("you already sent this exact text 1 times in the last "
                                      "10s (to b); the host refuses more copies")  # fmt: skip
    limiter.check(turn=4, recipient="d", text=None)
    with pytest.raises(SendRefused) as full:
        limiter.check(turn=4, recipient="d", text=None)
    assert str(full.value).startswith("this panel sent 4 messages in the last 10s")


def test_a_bus_file_gone_or_read_only_is_not_retried() -> None:
    """Restarting cannot bring a deleted or read-only bus file back: the panel stops once."""
    from panels.host.turns.supervisor import is_permanent
    from peerbus import BusGoneError

    gone = BusGoneError(path="/team/returns.sqlite", gone=True)
    assert is_permanent(gone)
    assert is_permanent(ExceptionGroup("a life", [RuntimeError("x"), gone]))
    assert not is_permanent(RuntimeError("a driver that failed once"))
