"""Bus locations: which backend a path or URL names, and how one is printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from peerbus import BusLocationError, parse_location, redact


@pytest.mark.parametrize(
    ("given", "scheme", "target"),
    [
        ("bus.sqlite", "sqlite", "bus.sqlite"),
        ("/srv/team/bus.sqlite", "sqlite", "/srv/team/bus.sqlite"),
        ("sqlite:///rel/bus.sqlite", "sqlite", "rel/bus.sqlite"),
        ("sqlite:////abs/bus.sqlite", "sqlite", "/abs/bus.sqlite"),
        ("SQLITE:///x.db", "sqlite", "x.db"),
        ("dir/with://inside/bus.db", "sqlite", "dir/with://inside/bus.db"),
        ("postgresql://u:p@h:5432/db", "postgresql", "postgresql://u:p@h:5432/db"),
        ("postgres://h/db", "postgresql", "postgres://h/db"),
    ],
)
def test_the_scheme_picks_the_backend(given: str, scheme: str, target: str) -> None:
    where = parse_location(given)
    assert (where.scheme, where.target) == (scheme, target)


def test_a_path_object_is_a_sqlite_file(tmp_path: Path) -> None:
    assert parse_location(tmp_path / "b.sqlite").path == tmp_path / "b.sqlite"


@pytest.mark.parametrize(
    ("given", "words"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("mysql://u:hunter2@h/db", "unknown kind of bus (mysql://)"),
        ("sqlite://bus.db", "sqlite:///relative/path"),
        ("sqlite:///", "sqlite:///relative/path"),
    ],
)
def test_what_is_not_a_bus_is_refused_with_what_to_write(given: str, words: str) -> None:
    with pytest.raises(BusLocationError) as caught:
        parse_location(given)
    assert words in str(caught.value) and "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://u:secret@h:5/db", "postgresql://u@h:5/db"),
        (
            "postgresql://u:s%40c@h/db?password=x&sslmode=require",
            "postgresql://u@h/db?sslmode=require",
        ),
        ("postgresql://h/db?PASSWORD=x", "postgresql://h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:///b.sqlite", "sqlite:///b.sqlite"),
        ("/x/y.sqlite", "/x/y.sqlite"),
    ],
)
def test_a_location_is_shown_without_its_password(given: str, shown: str) -> None:
    assert redact(given) == shown
