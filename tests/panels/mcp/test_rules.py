"""What an external agent may send, and who may reach a server: pure decisions, no bus."""

from __future__ import annotations

from pathlib import Path

import pytest

from panels.access import MIN_TOKEN, listen_refusal, request_refusal
from panels.mcp.rules import (
    Admission,
    ToolRefused,
    admit,
    dead_letter_item,
    ids_of,
    message_item,
    number,
    plan_send,
)
from panels.team import parse_team
from peerbus import BusOptions, DeadLetter, Message

TEAM = """
[team]
name = "t"
[team.external.cc]
writes_to = ["a", "b"]
max_chars = 40
[[panels]]
name = "a"
[[panels]]
name = "b"
listens_to = ["a"]
[[panels]]
name = "c"
"""


@pytest.fixture
def admission(tmp_path: Path) -> Admission:
    team = parse_team(TEAM, source=tmp_path / "team.toml", home=tmp_path / "home")
    return admit(team.external["cc"], team.panels, BusOptions(max_payload_bytes=120))


def refused(admission: Admission, **call: object) -> str:
    with pytest.raises(ToolRefused) as caught:
        plan_send(admission, **{"to": "a", "text": "hi", "key": "k1", **call})
    return str(caught.value)


def test_the_team_file_decides_where_the_agent_writes(admission: Admission) -> None:
    # b is in writes_to but listens to a only; c is not in writes_to at all.
    assert admission.writes_to == ("a",)
    assert "listens_to" in admission.why_not["b"] and "writes_to" in admission.why_not["c"]


def test_a_send_is_keyed_per_agent_and_a_broadcast_per_panel(admission: Admission) -> None:
    (one,) = plan_send(admission, to="a", text="hi", key="k1", topic="t-1")
    assert (one.recipient, one.key, one.topic) == ("a", "mcp:cc:k1", "t-1")
    assert one.payload == {"type": "message", "text": "hi"}
    every = plan_send(admission, to=" * ", text="hi", key="k2")
    assert [(m.recipient, m.key) for m in every] == [("a", "mcp:cc:k2:a")]


@pytest.mark.parametrize(
    ("call", "says"),
    [
        ({"to": "ghost"}, "no panel 'ghost' in this team; its panels are a, b, c"),
        ({"to": "c"}, "writes_to does not name it; you may write to: a"),
        ({"to": "b"}, "'b' does not hear 'cc'"),
        ({"to": "a@operator"}, "only the operator writes there"),
        ({"to": "operator"}, "only the operator writes there"),
        ({"to": "cc"}, "that is you"),
        ({"to": ""}, "give `to`"),
        ({"to": 3}, "give `to`"),
        ({"text": " "}, "give `text`"),
        ({"text": "x" * 41}, "the text has 41 characters; the team admits at most 40"),
        ({"key": ""}, "give `key`"),
        ({"key": "k" * 101}, "give `key`"),
        ({"key": None}, "give `key`"),
        ({"topic": 5}, "`topic` is a short string"),
    ],
)
def test_bad_sends_are_refused_with_what_to_do(
    admission: Admission, call: dict[str, object], says: str
) -> None:
    assert says in refused(admission, **call)


def test_the_buss_payload_cap_holds_under_max_chars(admission: Admission) -> None:
    roomy = Admission(**{**admission.__dict__, "max_chars": 10_000})
    assert "shorten the text" in refused(roomy, text="é" * 100)  # 200 bytes > the bus's 120


def test_no_broadcast_for_an_agent_that_may_write_nowhere(admission: Admission) -> None:
    nowhere = Admission(**{**admission.__dict__, "writes_to": ()})
    assert "may write to no panel" in refused(nowhere, to="*")


def test_numbers_and_ids_are_checked() -> None:
    assert number({}, "limit", 20, 1, 100) == 20
    assert number({"limit": 5}, "limit", 20, 1, 100) == 5
    for bad in (0, 101, "5", True, float("nan")):
        with pytest.raises(ToolRefused, match="`limit`"):
            number({"limit": bad}, "limit", 20, 1, 100)
    assert ids_of({"ids": [3, 1, 3]}) == (3, 1)
    for bad_ids in ([], None, ["1"], [True], 4):
        with pytest.raises(ToolRefused, match="give `ids`"):
            ids_of({"ids": bad_ids})


def test_what_the_agent_reads_is_stripped_of_control_characters() -> None:
    message = Message(
        7, "a\x1b[2J", "cc", "t\x07", {"type": "message", "text": "hi\x1b[31m"}, "now"
    )
    item = message_item(message)
    assert (item["from"], item["topic"], item["text"]) == ("a[2J", "t", "hi[31m")
    other = message_item(Message(8, "a", "cc", None, {"type": "report", "n": 1}, "now", attempt=2))
    assert other["text"] == '{"n": 1, "type": "report"}' and other["type"] == "report"
    assert other["attempt"] == 2
    letter = DeadLetter(9, "cc", "a", None, "too deep", 0, None, "[1, 2]")
    assert dead_letter_item(letter)["text"] == "[1, 2]"
    assert (
        dead_letter_item(DeadLetter(9, "cc", "a", None, "x", 0, None, "{oops"))["text"] == "{oops"
    )


def test_who_may_listen_where_and_which_requests_pass() -> None:
    good = "t" * MIN_TOKEN
    flags = {"address_flag": "--bind", "token_env": "T"}
    assert listen_refusal("127.0.0.1", None, **flags) is None
    assert listen_refusal("::1", None, **flags) is None
    assert "add --token" in (listen_refusal("0.0.0.0", None, **flags) or "")
    assert "drop --bind" in (listen_refusal("10.0.0.1", None, **flags) or "")
    assert "too short" in (listen_refusal("127.0.0.1", "short", **flags) or "")
    assert listen_refusal("0.0.0.0", good, **flags) is None

    def refuse(
        host: str,
        *,
        loopback: bool = True,
        token: str | None = None,
        origin: str | None = None,
        given: str | None = None,
    ) -> str:
        said = request_refusal(
            loopback=loopback, token=token, host=host, origin=origin, given=given, needs_token="NT"
        )
        return said or ""

    assert refuse("127.0.0.1:80") == ""
    assert "loopback names only" in refuse("evil.example:80")
    assert "another site" in refuse("127.0.0.1:80", origin="http://evil.example")
    assert refuse("box:80", loopback=False, token=good) == "NT"
    assert refuse("box:80", loopback=False, token=good, given=good + "x") == "NT"
    assert refuse("box:80", loopback=False, token=good, given=good) == ""
