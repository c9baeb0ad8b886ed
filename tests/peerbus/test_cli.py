"""`mnemara bus ...` through typer's CliRunner, on an owned bus, on a hand-made table and
(`--db postgresql://...`) on PostgreSQL."""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from panels.cli.bus import bus_app
from peerbus.sqlite import close_bus, connect_bus, submit

runner = CliRunner()


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = runner.invoke(bus_app, list(args), input=stdin)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception  # errors are reported, never raised as tracebacks
    return result.exit_code, result.stdout, result.stderr


def test_send_then_inbox_stats_and_tail(bus_location: str, backend_flavour: str) -> None:
    db = bus_location
    code, out, err = run("send", "--db", db, "--to", "b", "--topic", "t1", '{"text": "hi"}')
    assert code == 0 and out.strip() == "sent message 1"
    assert ("compatibility mode" in err) == (backend_flavour == "compat")
    code, out, _ = run("send", "--db", db, "--from", "a", "--json", "-", stdin='{"n": 2}')
    assert code == 0 and json.loads(out) == {"id": 2}

    code, out, _ = run("inbox", "b", "--db", db, "--json")
    items = json.loads(out)
    assert code == 0 and [(i["id"], i["sender"], i["state"]) for i in items] == [
        (1, "operator", "new"),
        (2, "a", "new"),
    ]
    code, out, _ = run("inbox", "b", "--db", db, "--senders", "z")
    assert code == 0 and "operator" in out and " a:" not in out  # a's broadcast filtered out

    code, out, _ = run("stats", "--db", db, "--json")
    assert code == 0 and json.loads(out)["rows_by_status"] == {"pending": 2}
    code, out, _ = run("tail", "--db", db, "--limit", "1")
    assert code == 0 and out.count("\n") == 1 and '{"n":2}' in out


def test_team_resolves_under_mnemara_home(mnemara_home: Path) -> None:
    (mnemara_home / "_teams" / "alpha").mkdir(parents=True)
    assert run("send", "--team", "alpha", "--to", "b", "{}")[0] == 0
    assert (mnemara_home / "_teams" / "alpha" / "bus.sqlite").is_file()
    code, out, _ = run("tail", "--team", "alpha", "--json")
    assert code == 0 and json.loads(out)["recipient"] == "b"


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["stats"], 2, "exactly one of --db"),
        (["stats", "--team", "../x"], 2, "invalid team name"),
        (["send", "--db", "{db}", "{not json"], 2, "not JSON"),
        (["send", "--db", "{db}", "[1, 2]"], 9, "must be JSON objects"),
        (["send", "--db", "{db}", "--from", "bad role", "{}"], 9, "not a role name"),
        (["stats", "--db", "{db}.missing"], 9, "no bus at"),
        (["retry", "--db", "{db}"], 2, "--all"),
        (["prune", "--db", "{db}", "--older-than", "soon"], 2, "cannot read duration"),
    ],
)
def test_errors_are_one_line_on_stderr(
    bus_path: Path, args: list[str], code: int, words: str
) -> None:
    close_bus(connect_bus(bus_path))
    got, out, err = run(*[a.replace("{db}", str(bus_path)) for a in args])
    assert got == code and words in err and out == "" and "Traceback" not in err


def test_dead_retry_and_prune(bus_path: Path, insert_raw: object) -> None:
    db = str(bus_path)
    bus = connect_bus(bus_path)
    try:
        assert callable(insert_raw)
        broken = insert_raw("b", "{broken")
        from peerbus.sqlite import claim_batch

        assert claim_batch(bus, "b").failed == 1
    finally:
        close_bus(bus)
    code, out, _ = run("dead", "--db", db, "--json")
    assert code == 0 and [d["id"] for d in json.loads(out)] == [broken]
    code, out, _ = run("retry", str(broken), "--db", db, "--json")
    assert code == 0 and json.loads(out) == {"retried": 1}
    code, out, _ = run("prune", "--db", db, "--older-than", "0s", "--json")
    assert code == 0 and json.loads(out) == {"deleted": 0}


def test_control_characters_never_reach_the_terminal(bus_path: Path) -> None:
    bus = connect_bus(bus_path)
    try:
        submit(bus, "a", "b", {"text": "\x1b]0;pwned\x07 red \x1b[31m"}, topic="t\x1b[2J")
    finally:
        close_bus(bus)
    for command in (["tail"], ["inbox", "b"]):
        _, out, _ = run(*command, "--db", str(bus_path))
        assert "\x1b" not in out and "\x07" not in out


def test_tail_follow_prints_rows_as_they_arrive(bus_path: Path) -> None:
    close_bus(connect_bus(bus_path))

    def produce() -> None:
        bus = connect_bus(bus_path)
        try:
            for n in range(3):
                submit(bus, "a", "b", {"n": n})
        finally:
            close_bus(bus)

    writer = threading.Thread(target=produce)
    writer.start()
    code, out, _ = run(
        "tail", "--db", str(bus_path), "--after", "0", "--follow", "--count", "3",
        "--timeout", "30", "--json",
    )  # fmt: skip
    writer.join()
    assert code == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1, 2, 3]


def test_a_hand_made_table_works_with_every_command(tmp_path: Path) -> None:
    db = tmp_path / "peer.db"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE returns (id INTEGER PRIMARY KEY AUTOINCREMENT, agent_role TEXT,"
        " recipient_role TEXT, task_id TEXT, payload_json TEXT, status TEXT, submitted_at TEXT)"
    )
    conn.close()
    assert run("send", "--db", str(db), "--to", "b", '{"type": "ack"}')[0] == 0
    assert run("send", "--db", str(db), "--to", "b", '{"type": "work"}')[0] == 0
    for command in (["inbox", "b"], ["tail"], ["stats"], ["dead"], ["prune"]):
        code, _, err = run(*command, "--db", str(db))
        assert code == 0 and "compatibility mode" in err
