"""The event catalogue: every kind round-trips through a row, is read back by every reader
without a dict repr, and the verb catalogue refuses what is not a verb."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

import pytest

from panels.host.control.account import line, verbose_line
from panels.hostdb import HostEvent, UnknownEvent, VerbError, decode, parse_verb
from panels.hostdb import catalogue as ev
from panels.hostdb.verbs import verbs

SAMPLES: dict[Any, Any] = {
    str: "text {'not': 'a repr'}",
    int: 7,
    float: 1.5,
    bool: True,
}


def sample(cls: type[HostEvent]) -> HostEvent:
    """An event of `cls` with a value of the right type in every field."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        union = typing.get_origin(hint) in (typing.Union, types.UnionType)
        first = next(a for a in typing.get_args(hint) if a is not type(None)) if union else hint
        if typing.get_origin(first) is tuple:
            (item,) = typing.get_args(first)[:1]
            values[f.name] = (SAMPLES[item], SAMPLES[item])
        else:
            values[f.name] = SAMPLES[first]
    values["panel"] = "eng"
    return cls(**values)


KINDS = sorted(ev.kinds().items())


@pytest.mark.parametrize(("kind", "cls"), KINDS, ids=[k for k, _ in KINDS])
def test_every_kind_round_trips_through_a_row(kind: str, cls: type[HostEvent]) -> None:
    event = sample(cls)
    stored_kind, panel, data = event.to_row()
    assert stored_kind == kind and data["v"] == ev.EVENT_SCHEMA
    assert decode(stored_kind, panel, json.loads(json.dumps(data))) == event


@pytest.mark.parametrize(("kind", "cls"), KINDS, ids=[k for k, _ in KINDS])
def test_no_reader_shows_a_python_repr(kind: str, cls: type[HostEvent]) -> None:
    event = sample(cls)
    for shown in (line(event), verbose_line(event)):
        if shown is None:
            continue
        # The sample's own text says "{'not': 'a repr'}"; a repr of the event would add more.
        assert shown.count("{'") <= shown.count("{'not'"), shown
        assert "(7, 7)" not in shown and "[7, 7]" not in shown, shown


def test_the_inbox_switch_reads_as_words() -> None:
    assert line(ev.InboxSwitched(panel="eng", on=False)) == "eng inbox delivery off"


def test_a_row_of_another_version_is_an_unknown_event_not_a_crash() -> None:
    newer = decode("halt", "eng", {"v": ev.EVENT_SCHEMA + 1})
    assert isinstance(newer, UnknownEvent) and "version" in newer.why
    assert "not readable here" in verbose_line(newer)
    assert line(newer) is None


def test_every_verb_has_a_name_and_strict_arguments() -> None:
    names = set(verbs())
    assert {"input", "answer", "pause", "resume", "halt", "stop", "shutdown", "model", "tokens",
            "inbox", "nudge", "evict", "pin", "unpin", "compress", "clear", "slot", "export",
            "import", "role", "note"} <= names  # fmt: skip
    with pytest.raises(VerbError, match="unknown verb"):
        parse_verb("approve", "eng", {})
    with pytest.raises(VerbError, match="answer"):
        parse_verb("answer", "eng", {"answer": "ok"})
    with pytest.raises(VerbError, match="force: Extra inputs are not permitted"):
        parse_verb("pause", "eng", {"reason": "x", "force": True})
    with pytest.raises(VerbError, match="name the panel"):
        parse_verb("halt", None, {})
    with pytest.raises(VerbError):
        parse_verb("tokens", "eng", {"max_window_tokens": "500k"})  # strict: no coercion
    with pytest.raises(VerbError, match="either path or text"):
        parse_verb("role", "eng", {})
    assert parse_verb("answer", None, {"answer": "no"}).args() == {"request": None, "answer": "no"}
