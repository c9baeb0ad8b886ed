"""Every command of the CLI, given bad input, ends with the documented exit code and no traceback.

The commands are enumerated from the typer app, so a new command without bad inputs here
fails `test_every_command_has_bad_inputs`. Each case runs in a process of its own (forked by
bad_input_driver.py from one `python` start, through `run_cli`, the console script's entry
point; a few run as `python -m panels.cli.main` too), with stdin on /dev/null. No case gets
as far as starting a host or the model CLI: they fail on arguments and lookups.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer

from panels.cli.main import app
from panels.hostdb import PanelRow, connect, set_meta, upsert_panels
from peerbus.sqlite import close_bus, connect_bus
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore

ROOT = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("bad_input_driver.py")
FORBIDDEN = ("Traceback", "ExceptionGroup")

USAGE, CONFIG, INSTANCE, STORE, ROLE_DOC, BUS, HOST = 2, 3, 4, 5, 7, 9, 10

# Per command: (arguments after the command's name, the exit code). In the arguments, {dir}
# is a directory, {file} a text file that is nothing in particular, {missing} a path that is
# not there, {bad_toml} a file that is not TOML, {two} a rehearsal script with panels a and
# b, {bus} the team's bus file. Instance `inst` exists; team `crew` ran once (panel `eng`).
CASES: dict[str, list[tuple[list[str], int]]] = {
    "replay": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "inst", "--days", "0"], USAGE),
        (["-i", "inst", "--threshold", "x"], USAGE),
    ],
    "memory": [([], USAGE), (["nosuch"], USAGE)],
    "memory search": [
        ([], USAGE),
        (["-i", "ghost", "x"], INSTANCE),
        (["-i", "inst", "x", "-k", "0"], USAGE),
        (["-i", "inst", "x", "--kind", "manual"], USAGE),
        (["-i", "inst", " "], 1),  # nothing to search for
    ],
    "memory index": [([], USAGE), (["-i", "ghost"], INSTANCE), (["-i", "../x"], INSTANCE)],
    "memory reindex": [([], USAGE), (["-i", "ghost"], INSTANCE)],
    "memory archive": [
        ([], USAGE),
        (["-i", "inst"], USAGE),  # no SOURCE
        (["-i", "ghost", "memory/2026-01-01.md#0"], INSTANCE),
        (["-i", "inst", "memory/2026-01-01.md#0"], USAGE),  # no such note
    ],
    "memory restore": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "inst", "memory/2026-01-01.md#0"], USAGE),  # not archived
    ],
    "memory wiki": [([], USAGE), (["nosuch"], USAGE)],
    "memory wiki ls": [([], USAGE), (["-i", "ghost"], INSTANCE)],
    "memory wiki show": [
        ([], USAGE),
        (["-i", "ghost", "a"], INSTANCE),
        (["-i", "inst", "no-page"], USAGE),
        (["-i", "inst", "Bad_Slug"], 1),
    ],
    "memory graph": [([], USAGE), (["nosuch"], USAGE)],
    "memory graph query": [
        ([], USAGE),
        (["-i", "inst", "CREATE (n:Node {id: 'x'})"], 8),
        (["-i", "ghost", "MATCH (n) RETURN n"], INSTANCE),
    ],
    "memory graph rebuild": [([], USAGE), (["-i", "ghost"], INSTANCE)],
    "memory quarantine": [
        ([], USAGE),
        (["-t", "../x"], USAGE),
        (["-t", "crew", "--release", "x"], USAGE),
    ],
    "init": [
        ([], USAGE),
        (["-i", "../x"], INSTANCE),
        (["-i", "inst"], INSTANCE),
        (["-i", "new", "--role", "{dir}"], ROLE_DOC),
    ],
    "list": [(["extra"], USAGE)],
    "show": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "../x"], INSTANCE),
        (["-i", "inst", "-n", "-1"], USAGE),
        (["-i", "inst", "-n", "many"], USAGE),
    ],
    "clear": [([], USAGE), (["-i", "ghost"], INSTANCE), (["-i", "a/b"], INSTANCE)],
    "delete": [([], USAGE), (["-i", "ghost", "--force"], INSTANCE), (["-i", "inst"], USAGE)],
    "note": [
        ([], USAGE),
        (["-i", "inst"], USAGE),
        (["-i", "ghost", "hi"], INSTANCE),
        (["-i", "inst", "  "], 1),  # nothing to write
    ],
    "role": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "inst", "--set", "{dir}"], ROLE_DOC),
        (["-i", "inst", "--set", "{file}", "--set-from-url", "https://x.invalid/r.md"], USAGE),
    ],
    "export": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "inst", "-o", "{dir}"], USAGE),
        (["-i", "inst", "-o", "{missing}/w.jsonl"], USAGE),
        (["-i", "inst", "-o", "{file}/w.jsonl"], USAGE),
    ],
    "import": [
        ([], USAGE),
        (["-i", "inst", "{dir}"], USAGE),
        (["-i", "inst", "{missing}"], USAGE),
        (["-i", "ghost", "{file}"], INSTANCE),
        (["-i", "inst", "{file}"], STORE),
    ],
    "migrate": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "../x"], INSTANCE),
        (["-i", "inst", "--all"], USAGE),
    ],
    "run": [
        ([], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "../x"], INSTANCE),
        (["-i", "inst", "-p", "a"], USAGE),
        (["-i", "inst", "--rehearsal", "{two}"], USAGE),
        (["-i", "inst", "--rehearsal", "{dir}"], USAGE),
        (["-i", "inst", "--rehearsal", "{missing}"], CONFIG),
        (["-i", "inst", "--rehearsal", "{two}", "-p", "zz"], USAGE),
        (["-i", "inst", "--replay-backlog"], USAGE),  # no foreign table to replay
    ],
    "rehearse": [
        ([], USAGE),
        (["-i", "inst"], USAGE),
        (["-i", "ghost", "--script", "{two}"], INSTANCE),
        (["-i", "inst", "--script", "{missing}"], CONFIG),
        (["-i", "inst", "--script", "{bad_toml}"], CONFIG),
        (["-i", "inst", "--script", "{two}"], USAGE),
        (["-i", "inst", "--script", "{two}", "-p", "zz"], USAGE),
        (["-i", "inst", "--script", "{two}", "-p", "a", "--log", "{dir}"], USAGE),
        (["-i", "inst", "--script", "{two}", "--cassette", "{file}"], USAGE),
        (["-i", "inst", "--cassette", "{missing}"], CONFIG),
        (["-i", "inst", "--cassette", "{bad_toml}"], CONFIG),
        (["-i", "ghost", "--cassette", "{file}"], INSTANCE),
        (["--cassette", "{file}", "--to-script", "{file}"], USAGE),
        (["--cassette", "{file}"], USAGE),
    ],
    "record": [
        ([], USAGE),
        (["-i", "inst"], USAGE),
        (["-i", "ghost", "--cassette", "{dir}/c.jsonl"], INSTANCE),
        (["-i", "inst", "--cassette", "{dir}"], USAGE),
        (["-i", "inst", "--cassette", "{missing}/c.jsonl"], USAGE),
        (["-i", "inst", "--cassette", "{file}"], USAGE),
        (["-i", "inst", "--cassette", "{dir}/c.jsonl", "--upstream", "ftp:x"], USAGE),
    ],
    "up": [
        ([], USAGE),
        (["{missing}"], USAGE),
        (["{dir}"], USAGE),
        (["{bad_toml}"], CONFIG),
        (["{file}", "--headless", "--life", "two words"], USAGE),  # it goes in the pid file
    ],
    "down": [
        ([], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "../x"], USAGE),
        (["-t", "crew", "--wait", "-1"], USAGE),
    ],
    "ps": [
        ([], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "../x"], USAGE),
        (["-t", "{dir}"], USAGE),
        (["-t", "{file}"], CONFIG),
    ],
    "attach": [
        ([], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "../x"], USAGE),
        (["-t", "crew"], USAGE),  # a real team, but no terminal to draw on
    ],
    "dash": [
        ([], USAGE),
        (["-t", "ghost", "--web"], HOST),
        (["-t", "../x", "--web"], USAGE),
        (["-t", "crew"], USAGE),  # without --web: the terminal dashboard, and no terminal
        (["-t", "crew", "--port", "9999"], USAGE),  # a browser option without --web
        (["-t", "crew", "--web", "--host", "0.0.0.0"], USAGE),  # another address, no token
        (["-t", "crew", "--web", "--token", "short"], USAGE),
        (["-t", "crew", "--web", "--port", "0"], USAGE),
    ],
    "logs": [
        ([], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "crew", "-n", "-1"], USAGE),
        (["-t", "../x"], USAGE),
        (["-t", "crew", "-p", "ghost"], USAGE),  # as `send -p ghost`: an unknown panel
    ],
    "mcp": [
        ([], USAGE),
        (["-t", "crew"], USAGE),  # no --as
        (["-t", "ghost", "--as", "cc"], HOST),  # never ran here: its team file is unknown
        (["-t", "../x", "--as", "cc"], USAGE),
        (["-t", "crew", "--as", "cc"], USAGE),  # no team file on record: nobody admitted
        (["-t", "{file}", "--as", "cc"], CONFIG),
        (["-t", "{bad_toml}", "--as", "cc"], CONFIG),
        (["-t", "crew", "--as", "cc", "--port", "9999"], USAGE),  # an HTTP option, no --http
        (["-t", "crew", "--as", "cc", "--http", "--bind", "0.0.0.0"], USAGE),  # no token
        (["-t", "crew", "--as", "cc", "--http", "--token", "short"], USAGE),
        (["-t", "crew", "--as", "cc", "--http", "--port", "70000"], USAGE),
    ],
    "send": [
        ([], USAGE),
        (["-t", "crew", "hi"], USAGE),
        (["-t", "crew", "-p", "ghost", "hi"], USAGE),
        (["-t", "ghost", "-p", "eng", "hi"], HOST),
        (["-t", "crew", "-p", "eng"], USAGE),
    ],
    "approve": [
        ([], USAGE),
        (["-t", "crew", "--answer", "maybe"], USAGE),
        (["-t", "crew", "-a", "YES"], USAGE),
        (["-t", "crew", "-p", "ghost"], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "crew", "-r", "0"], USAGE),
        (["-t", "crew"], 0),  # no host runs: nothing waits, and nothing is queued
        (["-t", "crew", "-r", "3"], 1),  # that question cannot be answered
    ],
    "deny": [
        ([], USAGE),
        (["-t", "crew", "-p", "ghost"], USAGE),
        (["-t", "ghost"], HOST),
        (["-t", "crew", "-r", "-1"], USAGE),
        (["-t", "crew", "-p", "eng"], 0),
    ],
    **{
        verb: [
            ([], USAGE),
            (["-t", "crew"], USAGE),
            (["-t", "crew", "-p", "ghost"], USAGE),
            (["-t", "ghost", "-p", "eng"], HOST),
            (["-t", "../x", "-p", "eng"], USAGE),
        ]
        for verb in ("halt", "resume", "pause", "stop")
    },
    "inbox": [
        ([], USAGE),
        (["-t", "crew", "-p", "eng", "maybe"], USAGE),
        (["-t", "crew", "-p", "ghost"], USAGE),
        (["-t", "ghost", "-p", "eng"], HOST),
    ],
    "rewind": [
        ([], USAGE),
        (["-t", "crew", "-p", "ghost"], USAGE),
        (["-t", "ghost", "-p", "eng"], HOST),
        (["-t", "../x", "-p", "eng"], USAGE),
        (["-i", "ghost"], INSTANCE),
        (["-i", "inst", "-t", "crew"], USAGE),
        (["-i", "inst", "--turn", "0"], USAGE),
        (["-i", "inst", "--list", "--turn", "1"], USAGE),
        (["-i", "inst"], 1),  # no checkpoints yet
    ],
    "demo": [(["extra"], USAGE)],
    "claude": [],  # everything goes to the bundled CLI: only the MNEMARA_HOME case below
    "bus": [([], USAGE), (["nosuch"], USAGE)],
    "bus send": [
        ([], USAGE),
        (["--db", "{bus}", "{not json"], USAGE),
        (["-t", "crew", "[1, 2]"], BUS),
        (["{}"], USAGE),
        (["-t", "../x", "{}"], USAGE),
        (["--db", "{dir}", "{}"], USAGE),
        (["-t", "crew", "--from", "bad role", "{}"], BUS),
        (["--db", "{missing}/bus.sqlite", "{}"], BUS),
    ],
    "bus inbox": [
        ([], USAGE),
        (["-t", "crew"], USAGE),
        (["--db", "{missing}", "-p", "eng"], BUS),
        (["-t", "crew", "-p", "eng", "--limit", "-1"], USAGE),
        (["-t", "crew", "-p", "eng", "other"], USAGE),
    ],
    "bus tail": [
        ([], USAGE),
        (["--db", "{missing}"], BUS),
        (["-t", "crew", "--limit", "-1"], USAGE),
        (["-t", "crew", "-n", "-1"], USAGE),
        (["-t", "crew", "-f", "--count", "-1"], USAGE),
        (["-t", "crew", "--after", "-5"], USAGE),
        (["-t", "crew", "-f", "--timeout", "-1"], USAGE),
    ],
    "bus stats": [
        ([], USAGE),
        (["-t", "../x"], USAGE),
        (["--db", "{missing}"], BUS),
        (["--db", "{dir}"], USAGE),
        (["--db", "{file}"], BUS),
    ],
    "bus dead": [
        ([], USAGE),
        (["-t", "crew", "--limit", "-1"], USAGE),
        (["--db", "{missing}"], BUS),
    ],
    "bus retry": [
        (["-t", "crew"], USAGE),
        ([], USAGE),
        (["-t", "crew", "0"], USAGE),
        (["--db", "{missing}", "--all"], BUS),
    ],
    "bus prune": [
        ([], USAGE),
        (["-t", "crew", "--older-than", "soon"], USAGE),
        (["--db", "{missing}"], BUS),
    ],
    "bus migrate": [
        ([], USAGE),
        (["--to", "{dir}/new.sqlite"], USAGE),
        (["--from", "{missing}", "-t", "crew", "--to", "{dir}/new.sqlite"], USAGE),
        (["--from", "{missing}", "--to", "{dir}/new.sqlite"], BUS),
        (["--from", "{file}", "--to", "{file}"], USAGE),
        (["--from", "{file}", "--to", "mysql://db/x"], BUS),
        (["--from", "{dir}", "--to", "{dir}/new.sqlite"], USAGE),
        (["--from", "{file}", "--to", "postgresql://nobody:pw@127.0.0.1:1/x"], BUS),
    ],
}

# One command line per command that would be fine but for MNEMARA_HOME being a file.
FINE_BUT_FOR_HOME: dict[str, list[str]] = {
    "replay": ["-i", "inst"],
    "memory search": ["-i", "inst", "x"],
    "memory index": ["-i", "inst"],
    "memory reindex": ["-i", "inst"],
    "memory archive": ["-i", "inst", "memory/2026-01-01.md#0"],
    "memory restore": ["-i", "inst"],
    "memory wiki ls": ["-i", "inst"],
    "memory wiki show": ["-i", "inst", "a"],
    "memory graph query": ["-i", "inst", "MATCH (n) RETURN n"],
    "memory graph rebuild": ["-i", "inst"],
    "memory quarantine": ["-t", "crew"],
    "init": ["-i", "x"],
    "list": [],
    "show": ["-i", "inst"],
    "clear": ["-i", "inst"],
    "delete": ["-i", "inst", "--force"],
    "note": ["-i", "inst", "hi"],
    "role": ["-i", "inst"],
    "export": ["-i", "inst"],
    "import": ["-i", "inst", "{file}"],
    "migrate": ["--all"],
    "run": ["-i", "inst"],
    "rehearse": ["-i", "inst", "--script", "{two}", "-p", "a"],
    "record": ["-i", "inst", "--cassette", "{dir}/c.jsonl"],
    "up": ["{bad_toml}"],
    "down": ["-t", "crew"],
    "ps": ["-t", "crew"],
    "logs": ["-t", "crew"],
    "attach": ["-t", "crew"],
    "dash": ["-t", "crew"],
    "send": ["-t", "crew", "-p", "eng", "hi"],
    "mcp": ["-t", "crew", "--as", "cc"],
    "approve": ["-t", "crew"],
    "deny": ["-t", "crew"],
    "halt": ["-t", "crew", "-p", "eng"],
    "resume": ["-t", "crew", "-p", "eng"],
    "pause": ["-t", "crew", "-p", "eng"],
    "stop": ["-t", "crew", "-p", "eng"],
    "inbox": ["-t", "crew", "-p", "eng"],
    "rewind": ["-i", "inst", "--list"],
    "demo": [],
    "claude": ["--version"],
    "bus send": ["-t", "crew", "{}"],
    "bus inbox": ["-t", "crew", "-p", "eng"],
    "bus tail": ["-t", "crew"],
    "bus stats": ["-t", "crew"],
    "bus dead": ["-t", "crew"],
    "bus retry": ["-t", "crew", "--all"],
    "bus prune": ["-t", "crew"],
    "bus migrate": ["-t", "crew", "--to", "{dir}/new.sqlite"],
}

# What a case's output says, beyond its exit code, by its command and arguments.
SAYS: dict[tuple[str, ...], str] = {
    ("approve", "-t", "crew"): "nothing to answer: no host of team 'crew' is running",
    ("deny", "-t", "crew", "-p", "eng"): "nothing to answer: no host of team 'crew' is running",
    ("approve", "-t", "crew", "-r", "3"): "question 3 cannot be answered: no host",
}
# An unknown panel of team crew is one error everywhere, naming the team's panels.
UNKNOWN_PANEL = "no panel 'ghost' in team 'crew'; its panels: eng"


def expected_text(argv: list[str]) -> str | None:
    if "crew" in argv and "-p" in argv and argv[argv.index("-p") + 1] == "ghost":
        return UNKNOWN_PANEL
    return SAYS.get(tuple(argv))


PASSTHROUGH = {"claude"}  # `-h` and unknown options belong to the bundled CLI


def command_paths() -> list[str]:
    """Every command and group of the app, e.g. "show", "bus", "bus send"."""

    def walk(group: Any, prefix: str) -> Iterator[str]:
        for name, command in group.commands.items():
            path = f"{prefix}{name}"
            yield path
            if hasattr(command, "commands"):
                yield from walk(command, f"{path} ")

    return sorted(walk(typer.main.get_command(app), ""))


def test_every_command_has_bad_inputs() -> None:
    paths = command_paths()
    assert "bus send" in paths and "claude" in paths
    assert sorted(CASES) == paths, "add bad inputs for the new command to CASES"
    groups = ("bus", "memory", "memory wiki", "memory graph")
    assert sorted(FINE_BUT_FOR_HOME) == [p for p in paths if p not in groups]


@pytest.fixture
def world(tmp_path: Path) -> dict[str, str]:
    """The places the cases name, and a home with instance `inst` and team `crew`."""
    home = tmp_path / "home"
    paths = InstancePaths.for_name("inst", home)
    paths.root.mkdir(parents=True)
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    state = home / "_teams" / "crew"
    state.mkdir(parents=True)
    bus = state / "bus.sqlite"
    close_bus(connect_bus(bus))
    conn = connect(state / "host.sqlite")
    upsert_panels(conn, [PanelRow("eng", "worker", "idle")])
    set_meta(conn, {"bus": str(bus)})
    conn.close()
    (tmp_path / "dir").mkdir()
    (tmp_path / "file.txt").write_text("nothing in particular\n")
    (tmp_path / "bad.toml").write_text("this is [[ not toml\n")
    (tmp_path / "homefile").write_text("not a directory\n")
    two = tmp_path / "two.toml"
    two.write_text('[panels.a]\nfallback_text = "a"\n\n[panels.b]\nfallback_text = "b"\n')
    return {
        "home": str(home),
        "homefile": str(tmp_path / "homefile"),
        "dir": str(tmp_path / "dir"),
        "file": str(tmp_path / "file.txt"),
        "missing": str(tmp_path / "missing"),
        "bad_toml": str(tmp_path / "bad.toml"),
        "two": str(two),
        "bus": str(bus),
    }


def fill(args: list[str], world: dict[str, str]) -> list[str]:
    out = []
    for arg in args:
        for key, value in world.items():
            arg = arg.replace("{" + key + "}", value)
        out.append(arg)
    return out


def all_cases(world: dict[str, str]) -> list[tuple[str, list[str], dict[str, str], int]]:
    """(label, argv, env, expected exit code) for every case."""
    normal = {"MNEMARA_HOME": world["home"]}
    cases = []
    for path, bad in CASES.items():
        words = path.split()
        for args, code in bad:
            cases.append((path, [*words, *fill(args, world)], normal, code))
        if path not in PASSTHROUGH:
            cases.append((path, [*words, "-h"], normal, 0))
            cases.append((path, [*words, "--no-such-option"], normal, USAGE))
        if path in FINE_BUT_FOR_HOME:
            argv = [*words, *fill(FINE_BUT_FOR_HOME[path], world)]
            cases.append((path, argv, {"MNEMARA_HOME": world["homefile"]}, CONFIG))
            under = {"MNEMARA_HOME": os.path.join(world["homefile"], "sub")}
            cases.append((path, argv, under, CONFIG))
    return cases


def run_driver(cases: list[tuple[str, list[str], dict[str, str], int]], tmp_path: Path) -> Any:
    spec = tmp_path / "cases.json"
    spec.write_text(json.dumps([{"args": argv, "env": env} for _, argv, env, _ in cases]))
    done = subprocess.run(
        [sys.executable, str(DRIVER), str(spec)],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
def test_bad_input_ends_with_the_documented_code_and_no_traceback(
    world: dict[str, str], tmp_path: Path
) -> None:
    cases = all_cases(world)
    assert len(cases) > 150
    results = run_driver(cases, tmp_path)
    wrong = []
    for (label, argv, env, code), got in zip(cases, results, strict=True):
        output = got["stdout"] + got["stderr"]
        shown = f"{label}: mnemara {' '.join(argv)} (MNEMARA_HOME={env['MNEMARA_HOME']})"
        if any(word in output for word in FORBIDDEN):
            wrong.append(f"{shown}: printed a traceback:\n{output}")
        elif got["code"] != code:
            wrong.append(f"{shown}: exit {got['code']}, not {code}:\n{output.strip()}")
        elif code not in (0, USAGE) and not got["stderr"].startswith("mnemara: "):
            wrong.append(f"{shown}: the error is not one `mnemara: ...` line:\n{output}")
        elif "-h" in argv and f"Usage: mnemara {label}" not in got["stdout"]:
            wrong.append(f"{shown}: no help:\n{output}")
        elif (
            env == {"MNEMARA_HOME": world["home"]}
            and (said := expected_text(argv))
            and (said not in output)
        ):
            wrong.append(f"{shown}: does not say {said!r}:\n{output}")
    assert not wrong, "\n\n".join(wrong)
    # Nothing the cases did created or changed what they named.
    assert not (Path(world["home"]) / "new").exists()
    assert not (Path(world["home"]) / "x").exists()
    assert (Path(world["home"]) / "inst" / "config.json").is_file()


@pytest.mark.parametrize(
    ("args", "env_home", "code"),
    [
        (["list"], "homefile", CONFIG),
        (["logs", "-t", "crew", "-n", "-3"], "home", USAGE),
        (["bus", "send", "--db", "{bus}", "{oops"], "home", USAGE),
        (["approve", "-t", "crew", "--answer", "perhaps"], "home", USAGE),
        (["show", "-i", "../x"], "home", INSTANCE),
        (["ps", "-t", "ghost"], "home", HOST),
    ],
)
def test_as_the_console_script_runs_it(
    args: list[str], env_home: str, code: int, world: dict[str, str]
) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "panels.cli.main", *fill(args, world)],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env={**os.environ, "MNEMARA_HOME": world[env_home]},
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == code, output
    assert not any(word in output for word in FORBIDDEN), output
