"""Checklist rows #14 and #42: bad patterns and bad JSON end in a clean error, never a crash.

Each input is tried for real: a bus row through the real host with a scripted driver, and
config.json, permissions.json, rehearsal scripts, team files and import files through the
real `mnemara` entry point in a subprocess (so an ExceptionGroup or a RecursionError would
show as it would to a user). The bounded parsers themselves: tests/sqlitekit/test_jsonload.py.
"""

from __future__ import annotations

import json
import os
import resource
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from panels.host.delivery.feed import OPERATOR, operator_route
from panels.hostdb import read_events
from panels.hostdb.catalogue import UnknownEvent
from panels.hostdb.control import pending_commands
from panels.hostdb.schema import connect
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from tests.panels.host.conftest import make_team, panels, reply, start_host

__all__ = ["start_host"]  # the host fixture, imported so pytest finds it here

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = ("Traceback", "ExceptionGroup", "RecursionError")
DEEP = "[" * 100_000
SOLO = ROOT / "examples" / "rehearsal" / "solo.toml"
NOT_RE2 = r"^(a)\1$"  # a back-reference: no linear-time engine runs it


def _limit_memory() -> None:
    # A parser that blows up (tomllib's dotted keys are quadratic) fails the test, not the box.
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))


def mnemara(
    *args: str, home: Path, stdin: str = "", timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", *args],
        cwd=ROOT, input=stdin, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "MNEMARA_HOME": str(home), "MNEMARA_NO_TUI": "1"},
        preexec_fn=_limit_memory,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert not any(word in output for word in FORBIDDEN), output
    return done


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The command's only stderr line, which must be ours."""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mnemara: "), done.stderr
    return lines[0]


def make_instance(home: Path, name: str) -> InstancePaths:
    paths = InstancePaths.for_name(name, home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    return paths


# -- a bus row through the real host ----------------------------------------------------------


@pytest.mark.anyio
async def test_42_deep_or_malformed_bus_rows_are_dead_lettered_and_the_rest_delivered(
    anyio_backend: str, tmp_path: Path, start_host: Callable[..., Any]
) -> None:
    """#42: rows whose payload is `[` x 100,000 or broken JSON, written straight into the bus
    file, are dead-lettered with a reason; the messages around them reach the panel and the
    panel is never given up."""
    team = make_team(tmp_path, panels("engineer"))
    script = {"engineer": [reply("ok") for _ in range(6)]}
    async with start_host(team, script) as (host, events, drivers):
        bus = host.services.bus
        first = await bus.submit(OPERATOR, operator_route("engineer"), {"text": "first"})
        raw = sqlite3.connect(Path(team.bus))
        with raw:  # another writer, as a panel's Bash with `sqlite3` would be
            bad = [
                raw.execute(
                    "INSERT INTO returns (agent_role, recipient_role, task_id, payload_json,"
                    " status, submitted_at) VALUES ('producer', ?, NULL, ?, 'pending', '')",
                    (operator_route("engineer"), payload),
                ).lastrowid
                or 0
                for payload in (DEEP, '{"text": "cut off')
            ]
        raw.close()
        last = await bus.submit(OPERATOR, operator_route("engineer"), {"text": "last"})
        dead = await events.wait("dead_letter", count=2, within=60)
        with anyio.fail_after(60):
            while True:
                seen = len(events.of("settled"))  # counted first: a settle cannot slip by
                if {first, last} <= await bus.settled(operator_route("engineer"), {first, last}):
                    break
                await events.wait("settled", count=seen + 1, within=60)
        letters = {d.id: d.reason for d in await bus.dead_letters()}
    assert sorted(e.id for e in dead) == sorted(bad)
    assert "nests too deep (deeper than 64 levels)" in letters[bad[0]]
    assert "not valid JSON" in letters[bad[1]]
    texts = " ".join(str(r.blocks) for r in drivers["engineer"].requests)
    assert "first" in texts and "last" in texts
    assert not events.of("panel_given_up")


# -- host.sqlite: events and control verbs written by another process ------------------------


def test_42_deep_event_data_and_verb_args_in_host_sqlite_are_read_without_crashing(
    tmp_path: Path,
) -> None:
    """#42: host.sqlite rows with deep JSON read as an unknown event and a refused verb."""
    path = tmp_path / "host.sqlite"
    conn = connect(path)
    try:
        conn.execute(
            "INSERT INTO events (ts, panel, kind, data) VALUES (1, 'p', 'turn_ended', ?)", (DEEP,)
        )
        conn.execute(
            "INSERT INTO commands (ts, panel, verb, args, by) VALUES (1, 'p', 'pause', ?, 'x')",
            (DEEP,),
        )
        conn.commit()
        (logged,) = read_events(conn)
        (command,) = pending_commands(conn)
    finally:
        conn.close()
    assert isinstance(logged.event, UnknownEvent) and logged.event.why == "data not JSON"
    assert command.args is None  # parse_verb refuses it with the reason


# -- files through the real CLI ---------------------------------------------------------------


def test_42_deep_config_json_names_the_file_in_list_show_run_and_rehearse(
    mnemara_home: Path,
) -> None:
    """#42: a config.json of `[` x 100,000: one clean line naming it, exit 3; `list` still
    lists the good instance, marks the broken one, and exits 3."""
    make_instance(mnemara_home, "good")
    broken = make_instance(mnemara_home, "broken")
    broken.config.write_text(DEEP, encoding="utf-8")
    listed = mnemara("list", home=mnemara_home)
    assert listed.returncode == 3
    lines = dict(line.split("\t", 1) for line in listed.stdout.splitlines())
    assert lines["good"].startswith("model=")
    assert "config problem" in lines["broken"] and str(broken.config) in lines["broken"]
    for args in (
        ["show", "-i", "broken"],
        ["run", "-i", "broken", "--no-tui"],
        ["rehearse", "-i", "broken", "--script", str(SOLO)],
        ["rehearse", "-i", "broken", "--script", str(SOLO), "--prompt", "hello"],
    ):
        done = mnemara(*args, home=mnemara_home)
        assert done.returncode == 3, (args, done.stderr)
        line = one_error(done)
        assert str(broken.config) in line and "nests deeper than 64 levels" in line


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"Bash": ' + DEEP, "nests deeper than 64 levels"),
        (json.dumps({"Bash": [NOT_RE2]}), NOT_RE2.replace("\\", "\\\\")),
    ],
    ids=["deep", "not-re2"],
)
def test_14_42_a_bad_permissions_json_stops_run_and_rehearse_with_one_line(
    content: str, says: str, mnemara_home: Path
) -> None:
    """#14, #42: permissions.json nested `[` x 100,000, or holding a pattern RE2 cannot run
    (a back-reference), stops `run` and `rehearse` (REPL and --prompt) before anything runs:
    one line naming the file (and the pattern), exit 8, no ExceptionGroup traceback. (#14's
    `^(a+)+$` itself loads: RE2 evaluates it in linear time, tests/runtime/policy.)"""
    paths = make_instance(mnemara_home, "p")
    paths.permissions.write_text(content, encoding="utf-8")
    for args in (
        ["run", "-i", "p", "--no-tui"],
        ["rehearse", "-i", "p", "--script", str(SOLO)],
        ["rehearse", "-i", "p", "--script", str(SOLO), "--prompt", "hello"],
    ):
        done = mnemara(*args, home=mnemara_home, stdin="hello\n")
        assert done.returncode == 8, (args, done.stdout, done.stderr)
        line = one_error(done)
        assert str(paths.permissions) in line and says in line


def test_42_bus_send_of_deep_or_broken_json_is_a_usage_error(
    mnemara_home: Path, tmp_path: Path
) -> None:
    """#42: `mnemara bus send` with `[` x 100,000 or broken JSON on stdin exits 2, cleanly,
    and writes nothing."""
    db = tmp_path / "bus.sqlite"
    for payload, says in ((DEEP, "send a flatter JSON object"), ('{"text": "cut', "not JSON")):
        done = mnemara("bus", "send", "--db", str(db), "--to", "x", "-", home=mnemara_home,
                       stdin=payload)  # fmt: skip
        assert done.returncode == 2
        assert says in one_error(done)
    if db.exists():
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT count(*) FROM returns").fetchone() == (0,)


@pytest.mark.parametrize(
    "script",
    ["a = " + "[" * 100_000, "a" + ".a" * 100_000 + " = 1"],
    ids=["brackets", "dotted-key"],
)
def test_42_a_deep_rehearsal_script_is_refused_naming_it(
    script: str, mnemara_home: Path, tmp_path: Path
) -> None:
    """#42: a rehearsal script nested 100,000 deep (brackets, or a dotted key that would take
    tomllib tens of gigabytes) is refused naming the file, exit 3."""
    make_instance(mnemara_home, "r")
    path = tmp_path / "deep.toml"
    path.write_text(script, encoding="utf-8")
    done = mnemara("rehearse", "-i", "r", "--script", str(path), "--prompt", "x",
                   home=mnemara_home)  # fmt: skip
    assert done.returncode == 3
    line = one_error(done)
    assert str(path) in line and "nests deeper than 32 levels" in line


def test_42_a_deep_team_file_is_refused_naming_it(mnemara_home: Path, tmp_path: Path) -> None:
    """#42: a team file with `[` x 100,000 stops `up` with exit 3, naming file and line."""
    team = tmp_path / "team.toml"
    team.write_text('[team]\nname = "deep"\n\nx = ' + "[" * 100_000 + "\n", encoding="utf-8")
    done = mnemara("up", str(team), "--headless", home=mnemara_home)
    assert done.returncode == 3
    assert f"{team}:4" in done.stderr and "nests deeper than 32 levels" in done.stderr


def test_42_a_deep_line_in_an_import_file_names_the_file_and_line(
    mnemara_home: Path, tmp_path: Path
) -> None:
    """#42: `mnemara import` of a file whose line is `[` x 100,000: exit 5 naming it."""
    make_instance(mnemara_home, "i")
    dump = tmp_path / "dump.jsonl"
    assert mnemara("export", "-i", "i", "-o", str(dump), home=mnemara_home).returncode == 0
    lines = dump.read_text(encoding="utf-8").splitlines()
    dump.write_text("\n".join([lines[0], DEEP, *lines[1:]]) + "\n", encoding="utf-8")
    done = mnemara("import", "-i", "i", str(dump), "--replace", home=mnemara_home)
    assert done.returncode == 5
    line = one_error(done)
    assert str(dump) in line and "nests deeper" in line
