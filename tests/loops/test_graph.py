"""The team graph beyond the corpus: what reads as an acknowledgement, bounded memory, a flag
given once per crossing, a resume that forgives, and the loop watch's halts and flags."""

from __future__ import annotations

import pytest

from panels.host.control.account import line
from panels.host.delivery.sendlimit import SendLimiter, SendLimits, SendRefused
from panels.host.loops.graph import Sent, TeamGraph, TurnEnd
from panels.host.loops.rules import LoopSettings, LoopVerdict, is_ack
from panels.host.loops.watch import LoopWatch
from panels.host.loops.world import NO_CHANGE
from panels.hostdb.catalogue import HostEvent, LoopFlagged
from peerbus import Message

DEFAULTS = LoopSettings()


@pytest.mark.parametrize(
    "text",
    ["Thanks!", "thank you so much", "Got it, thanks.", "OK, will do", "Received.",
     "You're welcome!", "No problem, cheers", "Thanks, looks good.", "Noted 👍"],
)  # fmt: skip
def test_short_acknowledgements_read_as_acks(text: str) -> None:
    assert is_ack("message", text, DEFAULTS)


@pytest.mark.parametrize(
    "text",
    ["Thanks! Fixed the null check in parser.py; tests pass now.",
     "Got it. Which branch should the release notes go to?",
     "The build is green on main.", "Build is green.", "",
     "thanks " * 20],
)  # fmt: skip
def test_text_with_content_is_not_an_ack(text: str) -> None:
    assert not is_ack("message", text, DEFAULTS)


def test_an_ack_payload_type_is_an_ack_whatever_its_text() -> None:
    assert is_ack("ack", "", DEFAULTS) and not is_ack("message", "", DEFAULTS)


def exchange(graph: TeamGraph, rounds: int, start: int = 1) -> list[list[LoopVerdict]]:
    """`rounds` idle turns alternating a and b, each consuming the last message and replying;
    what each turn's events returned."""
    found: list[list[LoopVerdict]] = []
    for n in range(start, start + rounds):
        me, other = ("a", "b") if n % 2 else ("b", "a")
        got = graph.turn_ended(TurnEnd(me, n, (n - 1,), NO_CHANGE, float(n)))
        got += graph.sent(Sent(n, me, other, f"over to you {n}", turn=n, at=float(n)))
        found.append(got)
    return found


def test_memory_is_bounded_whatever_the_traffic() -> None:
    settings = LoopSettings(memory=100, ping_pong_exchanges=10**6, rate_messages=5)
    graph = TeamGraph(settings)
    exchange(graph, 1000)
    assert len(graph.nodes) == 100 and len(graph.turns) == 100
    assert all(len(w.sends) <= settings.rate_halt + 1 for w in graph.edges.values())
    assert all(len(node.idle) <= graph.keep for node in graph.nodes.values())


def test_a_rate_flag_and_a_rate_halt_are_given_once_per_crossing() -> None:
    graph = TeamGraph(LoopSettings(rate_messages=3, rate_halt_ratio=2.0, rate_window=10.0))
    found = []
    for n, at in enumerate([0, 1, 2, 3, 4, 5, 6, 7, 8, 100, 101, 102, 103], 1):
        found += [(n, v.halt) for v in graph.sent(Sent(n, "a", "b", f"item {n}", at=float(at)))]
    # The 4th within 10 s is flagged, the 7th halts; again only after the edge came back under.
    assert found == [(4, False), (7, True), (13, False)]


def test_a_resume_forgives_what_went_before() -> None:
    graph = TeamGraph(LoopSettings(ping_pong_exchanges=4))
    found = exchange(graph, 5)
    assert [v.rule for got in found for v in got] == ["ping_pong"]
    graph.forgive("a")
    # The exchange goes on: it takes a whole new run of idle messages to trip again.
    again = exchange(graph, 4, start=6)
    assert not any(again)
    assert any(exchange(graph, 2, start=10))


def test_the_watch_owes_a_halt_to_every_panel_on_the_loop_and_logs_a_flag() -> None:
    emitted: list[HostEvent] = []
    woken: list[str] = []
    watch = LoopWatch(TeamGraph(LoopSettings(ping_pong_exchanges=4, rate_messages=2)),
                      emit=emitted.append, clock=lambda: 0.0, wake=woken.append)  # fmt: skip
    for n in range(1, 4):
        watch.published("a", n, "b", {"type": "message", "text": f"item {n}"}, None)
    (flag,) = emitted
    assert isinstance(flag, LoopFlagged) and (flag.edge, flag.ids) == ("a -> b", (1, 2, 3))
    assert line(flag) == f"a LOOP FLAG edge_rate: {flag.message}"  # shown without --verbose
    assert "a -> b" in flag.message and "messages 1, 2, 3" in flag.message
    assert watch.owed == {} and woken == []
    for n in range(1, 5):  # c, d, c, d: each turn consumes the message before and replies
        me, other = ("c", "d") if n % 2 else ("d", "c")
        before = [message(100 + n - 1, other, me)] if n > 1 else []
        assert watch.turn_ended(me, n, (100 + n, before), False) is None
        watch.published(me, 100 + n, other, {"type": "message", "text": f"to you {n}"}, 100 + n)
    # `c` consumes the fourth idle message in a turn that changes nothing: the loop closes.
    owed = watch.turn_ended("c", 5, (200, [message(104, "d", "c")]), False)
    assert owed is not None and (owed.source, owed.rule) == ("team", "ping_pong")
    assert owed.turn == 5 and sorted(woken) == ["c", "d"]
    theirs = watch.owed_to("d")  # stopped before its next turn: no turn of its own is named
    assert theirs is not None and (theirs.rule, theirs.message, theirs.turn) == (
        owed.rule, owed.message, 0)  # fmt: skip
    assert "c -> d -> c" in owed.message and "(messages 101, 102, 103, 104)" in owed.message
    assert any(a.startswith("team loop, ping_pong (halted)") for a in watch.alerts())
    watch.forgive("d")
    assert watch.owed_to("d") is None and watch.owed_to("c") is owed
    assert watch.alerts() == ("team loop, edge_rate (flagged): " + flag.message,)


def message(ident: int, sender: str, recipient: str) -> Message:
    return Message(ident, sender, recipient, None, {"type": "message", "text": "x"}, "")


def test_the_rate_halt_is_reached_under_the_default_send_limits() -> None:
    """A panel sending one recipient distinct messages as fast as the host's send limiter
    lets it (10 a turn, a turn every 10 s) is halted before the limiter refuses anything."""
    now = 0.0
    limiter = SendLimiter(clock=lambda: now)
    graph = TeamGraph()
    halted_at = refused_at = None
    for n in range(1, 200):
        now = 10.0 * ((n - 1) // 10)
        try:
            limiter.check(turn=(n - 1) // 10, recipient="b", text=f"task {n}: port module {n}")
        except SendRefused:
            refused_at = n
            break
        halts = [v for v in graph.sent(Sent(n, "a", "b", f"task {n}", at=now)) if v.halt]
        if halts and halted_at is None:
            halted_at = n
            assert halts[0].panels == ("a",)
    assert halted_at == DEFAULTS.rate_halt + 1 == 46
    assert refused_at == SendLimits().per_window + 1 == 61  # the old bound (above 60) never is
