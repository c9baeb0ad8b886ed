"""The alert rules (panels/host/alerts/rules.py), pure: once per event, the rate limit, quiet."""

from __future__ import annotations

from panels.host.alerts.desktop import command, find_notifier
from panels.host.alerts.rules import AlertRules
from panels.host.alerts.service import QUEUE, Sink
from panels.host.alerts.webhook import payload, shown
from panels.hostdb import HostEvent, Logged
from panels.hostdb import catalogue as ev


def asked(panel: str = "a", request: int = 1) -> ev.ApprovalAsked:
    return ev.ApprovalAsked(
        panel=panel, request=request, tool="Bash", target="make deploy", reason="asks",
        always_offered=True, remember=(), timeout=0.0,
    )  # fmt: skip


def halted(panel: str = "a", by: str = "dog") -> ev.Halted:
    return ev.Halted(panel=panel, by=by, source=by, rule="operator", message="runaway", turn=3)


def turn(panel: str, n: int, *, end: bool) -> HostEvent:
    if end:
        return ev.TurnEnded(panel=panel, turn=n, outcome="done", error=None, tool_calls=0,
                            input_tokens=1, output_tokens=1, usd=0.0)  # fmt: skip
    return ev.TurnStarted(panel=panel, turn=n, input="hi")


class Feed:
    def __init__(self, rules: AlertRules) -> None:
        self.rules = rules
        self.ident = 0

    def __call__(self, event: HostEvent, now: float) -> list[tuple[str | None, str]]:
        self.ident += 1
        return [(a.panel, a.kind) for a in self.rules.see(Logged(self.ident, 0.0, event), now)]


def test_each_event_alerts_once_and_says_what_to_do() -> None:
    rules = AlertRules(quiet_seconds=60, min_interval=0)
    logged = Logged(7, 0.0, asked())
    (alert,) = rules.see(logged, 0.0)
    assert (alert.panel, alert.kind, alert.cause) == ("a", "approval", 7)
    assert "make deploy" in alert.text and "mnemara approve" in alert.text
    assert rules.see(logged, 1.0) == []  # the same event again: no second alert
    given_up = rules.see(Logged(8, 0.0, ev.PanelGivenUp(panel="b", reason="3 failures")), 1.0)
    assert [(a.panel, a.kind) for a in given_up] == [("b", "failed")]


def test_halts_alert_unless_the_operator_gave_them_and_other_events_do_not() -> None:
    feed = Feed(AlertRules(quiet_seconds=60, min_interval=0))
    assert feed(halted(by="dog"), 0.0) == [("a", "halted")]
    assert feed(halted(by="operator"), 1.0) == []
    assert feed(ev.Said(panel="a", text="hi"), 1.0) == []
    assert feed(ev.PanelFailed(panel="a", error="x", ran_for=1.0, failures=1), 1.0) == []


def test_the_rate_limit_is_per_panel_and_kind() -> None:
    rules = AlertRules(quiet_seconds=60, min_interval=30)
    feed = Feed(rules)
    assert feed(asked("a", 1), 0.0) == [("a", "approval")]
    assert feed(asked("a", 2), 10.0) == []  # held back: "a" was alerted 10 s ago
    assert feed(asked("b", 3), 10.0) == [("b", "approval")]  # another panel
    assert feed(halted("a"), 10.0) == [("a", "halted")]  # another kind
    assert feed(asked("a", 4), 30.0) == [("a", "approval")]  # the interval has passed
    assert rules.held_back == 1


def test_quiet_after_quiet_seconds_with_a_turn_done_and_nothing_pending() -> None:
    rules = AlertRules(quiet_seconds=60, min_interval=0)
    feed = Feed(rules)
    assert rules.quiet_at() is None  # no turn yet: nothing done, no alert
    feed(turn("a", 1, end=False), 0.0)
    feed(turn("b", 1, end=False), 1.0)
    feed(turn("a", 1, end=True), 5.0)
    assert rules.quiet_at() is None  # b still runs
    feed(turn("b", 1, end=True), 10.0)
    assert rules.quiet_at() == 70.0
    assert rules.quiet_checked(69.0, quiet=True) == []  # too early
    assert rules.quiet_checked(70.0, quiet=False) == []  # something is pending: wait again
    assert rules.quiet_at() == 130.0
    (alert,) = rules.quiet_checked(130.0, quiet=True)
    assert (alert.panel, alert.kind) == (None, "quiet") and "2 turn(s)" in alert.text
    assert rules.quiet_at() is None  # no turn since: no second quiet alert
    feed(turn("a", 2, end=False), 200.0)
    feed(turn("a", 2, end=True), 210.0)
    assert rules.quiet_at() == 270.0
    assert [a.kind for a in rules.quiet_checked(270.0, quiet=True)] == ["quiet"]


def test_alert_text_is_one_clean_line() -> None:
    rules = AlertRules(quiet_seconds=60, min_interval=0)
    nasty = ev.ApprovalAsked(panel="a", request=1, tool="Bash", target="rm\n\x1b[2J" + "x" * 500,
                             reason="", always_offered=False, remember=(), timeout=0)  # fmt: skip
    (alert,) = rules.see(Logged(1, 0.0, nasty), 0.0)
    assert "\n" not in alert.text and "\x1b" not in alert.text and len(alert.text) <= 200


def test_the_webhook_body_the_desktop_command_and_where_a_desktop_is() -> None:
    event = ev.AlertRaised(panel=None, alert="quiet", text="the team is quiet", cause=0)
    body = payload("trio", Logged(42, 0.0, event))
    assert body == {"team": "trio", "panel": None, "kind": "quiet", "text": "the team is quiet",
                    "time": "1970-01-01T00:00:00+00:00", "event": 42, "cause": 0}  # fmt: skip
    assert shown("https://hooks.example/T0/secret?token=x") == "https://hooks.example"
    assert command("/bin/notify-send", "t", "-x")[-3:] == ["--", "t", "-x"]

    def which(name: str) -> str:
        return f"/usr/bin/{name}"

    assert find_notifier({}, which) is None  # no desktop session
    assert find_notifier({"WAYLAND_DISPLAY": "wayland-0"}, which) == "/usr/bin/notify-send"
    assert find_notifier({"DISPLAY": ":0"}, lambda name: None) is None  # not installed


def test_a_full_sink_queue_drops_its_oldest_alert_and_counts_it() -> None:
    async def never(logged: Logged) -> str | None:
        raise AssertionError("not sent here")

    sink = Sink("webhook", never)
    alerts = [Logged(n, 0.0, ev.AlertRaised(alert="quiet", text=str(n))) for n in range(QUEUE + 2)]
    assert all(sink.put(a) for a in alerts[:QUEUE])
    assert not sink.put(alerts[QUEUE]) and not sink.put(alerts[QUEUE + 1])
    assert sink.dropped == 2 and [a.id for a in sink.queue][:1] == [2] and len(sink.queue) == QUEUE
