"""What listings print: the asked-for count, "nothing" said plainly, operator input marked,
this session's spend, and `run`'s exit code and rehearsal panel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from panels.hostdb import PanelRow, append_events, connect, set_meta, upsert_panels
from panels.hostdb.catalogue import Said
from peerbus.sqlite import close_bus, connect_bus, submit
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore

runner = CliRunner()


def mnemara(*args: str) -> tuple[int, str, str]:
    from panels.cli.main import app

    result = runner.invoke(app, list(args), prog_name="mnemara")
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def inst(mnemara_home: Path) -> InstancePaths:
    paths = InstancePaths.for_name("inst", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    return paths


@pytest.fixture
def crew(mnemara_home: Path) -> Path:
    """Team `crew` that ran once: panel `eng` (delivery off), an empty bus, no events."""
    state = mnemara_home / "_teams" / "crew"
    state.mkdir(parents=True)
    close_bus(connect_bus(state / "bus.sqlite"))
    conn = connect(state / "host.sqlite")
    upsert_panels(conn, [PanelRow("eng", "worker", "idle", inbox=False)])
    set_meta(conn, {"bus": str(state / "bus.sqlite")})
    conn.close()
    return state


def test_logs_n_shows_exactly_n_lines_the_newest(crew: Path) -> None:
    conn = connect(crew / "host.sqlite")
    upsert_panels(conn, [PanelRow("lead", "worker", "idle")])
    said = [
        (float(i), Said(panel="eng" if i % 2 else "lead", text=f"line {i}")) for i in range(1200)
    ]
    append_events(conn, said)
    conn.close()
    code, out, _ = mnemara("logs", "-t", "crew", "-n", "7")
    assert code == 0
    assert [line.split()[-1] for line in out.splitlines()] == [str(i) for i in range(1193, 1200)]
    code, out, _ = mnemara("logs", "-t", "crew", "-n", "3", "-p", "lead")
    assert [line.split()[-1] for line in out.splitlines()] == ["1194", "1196", "1198"]
    code, out, _ = mnemara("logs", "-t", "crew", "-n", "700")
    assert len(out.splitlines()) == 700  # more than one page of the log
    code, out, _ = mnemara("logs", "-t", "crew", "-n", "0")
    assert code == 0 and out == "(nothing asked for: -n 0)\n"


@pytest.mark.parametrize(
    "args",
    [
        ["logs", "-t", "crew", "-n", "-1"],
        ["show", "-i", "inst", "-n", "-1"],
        ["bus", "tail", "-t", "crew", "--limit", "-2"],
        ["bus", "tail", "-t", "crew", "-f", "--count", "-1"],
        ["bus", "inbox", "-t", "crew", "-p", "eng", "--limit", "-1"],
        ["bus", "dead", "-t", "crew", "--limit", "-1"],
        ["down", "-t", "crew", "--wait", "-1"],
    ],
)
def test_negative_counts_are_refused(args: list[str], crew: Path, inst: InstancePaths) -> None:
    code, out, err = mnemara(*args)
    assert code == 2 and out == ""
    assert "is negative; give 0 or more" in err


def test_empty_listings_say_so(mnemara_home: Path, crew: Path) -> None:
    assert mnemara("list")[1].startswith("no instances under ")
    assert mnemara("logs", "-t", "crew")[1] == "(no events to show yet)\n"
    assert mnemara("bus", "tail", "-t", "crew")[1] == "(no messages on this bus yet)\n"
    assert mnemara("bus", "dead", "-t", "crew")[1] == "(no dead letters)\n"
    assert mnemara("bus", "inbox", "-t", "crew", "-p", "eng")[1] == "(nothing waits for eng)\n"
    assert "(no messages on this bus yet)" in mnemara("bus", "stats", "-t", "crew")[1]
    assert mnemara("bus", "dead", "-t", "crew", "--json")[1] == "[]\n"  # JSON stays JSON
    code, out, _ = mnemara("inbox", "-t", "crew", "-p", "eng")
    assert (
        code == 0 and out == "eng: delivery of peer messages is off; 0 waiting\n(nothing waits)\n"
    )
    assert mnemara("init", "-i", "fresh")[0] == 0
    assert "(the window is empty)" in mnemara("show", "-i", "fresh")[1]
    conn = connect(crew / "host.sqlite")
    conn.execute("DELETE FROM panels")
    conn.close()
    assert "(no panels recorded yet" in mnemara("ps", "-t", "crew")[1]


def test_a_panels_inbox_shows_operator_input_marked(crew: Path) -> None:
    bus = connect_bus(crew / "bus.sqlite")
    try:
        submit(bus, "operator", "eng@operator", {"type": "input", "text": "do it"})
        submit(bus, "lead", "eng", {"text": "a task"})
        submit(bus, "lead", "other", {"text": "not for eng"})
    finally:
        close_bus(bus)
    code, out, _ = mnemara("bus", "inbox", "-t", "crew", "-p", "eng")
    assert code == 0
    first, second = out.splitlines()
    assert "operator (operator input):" in first and "do it" in first
    assert "lead:" in second and "operator input" not in second and "a task" in second
    code, out, _ = mnemara("bus", "inbox", "eng", "-t", "crew", "--json")  # the old spelling
    assert [(i["id"], i["operator_input"]) for i in json.loads(out)] == [(1, True), (2, False)]
    code, out, _ = mnemara("inbox", "-t", "crew", "-p", "eng")
    lines = out.splitlines()
    assert lines[0] == "eng: delivery of peer messages is off; 2 waiting"
    assert "(operator input)" in lines[1] and "(operator input)" not in lines[2]


def test_bus_commands_take_panel_and_team_with_the_old_spellings_too(crew: Path) -> None:
    assert mnemara("bus", "send", "-t", "crew", "-p", "eng", '{"n": 1}')[1] == "sent message 1\n"
    assert mnemara("bus", "send", "-t", "crew", "--to", "lead", '{"n": 2}')[0] == 0
    for spelling in ("-p", "--panel", "--role"):
        code, out, _ = mnemara("bus", "tail", "-t", "crew", spelling, "lead", "--json")
        assert code == 0 and [json.loads(line)["id"] for line in out.splitlines()] == [2]
    for spelling in ("-p", "--recipient"):
        assert mnemara("bus", "dead", "-t", "crew", spelling, "eng")[0] == 0
        assert mnemara("bus", "retry", "-t", "crew", spelling, "eng")[1] == (
            "retried 0 dead letter(s)\n"
        )
    code, _, err = mnemara("bus", "inbox", "lead", "-t", "crew", "-p", "eng")
    assert code == 2 and "disagree" in err


def test_a_team_name_finds_the_solo_host_of_an_instance(inst: InstancePaths) -> None:
    state = inst.root / "host"  # where `mnemara run -i inst` keeps its host's files
    state.mkdir()
    bus = connect_bus(state / "bus.sqlite")
    try:
        submit(bus, "operator", "inst@operator", {"type": "input", "text": "hello"})
    finally:
        close_bus(bus)
    conn = connect(state / "host.sqlite")
    upsert_panels(conn, [PanelRow("inst", "worker", "idle")])
    set_meta(conn, {"bus": str(state / "bus.sqlite")})
    conn.close()
    assert "inst@operator" in mnemara("bus", "tail", "-t", "inst")[1]
    assert "(operator input)" in mnemara("bus", "inbox", "-t", "inst", "-p", "inst")[1]
    assert "team inst: host stopped" in mnemara("ps", "-t", "inst")[1]


def test_show_says_the_spend_is_this_sessions(inst: InstancePaths) -> None:
    spend = {"turns": 3, "requests": 5, "input_tokens": 900, "output_tokens": 40, "usd": 0.25}
    with TurnStore.open(inst.turns) as store:
        store.set_meta("spend", json.dumps({**spend, "limits": {"max_session_usd": 2.0}}))
    code, out, _ = mnemara("show", "-i", "inst")
    assert code == 0
    assert (
        "spend this session: 3 turns, 5 requests, 900 input tokens, 40 output tokens, $0.2500 "
        "(limits: max_session_usd=2.0)"
    ) in out


# -- run ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_run_exits_non_zero_when_the_host_gave_up(
    ok: bool, code: int, inst: InstancePaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    import panels.repl.face as face

    async def run_solo(team: Any, **_: Any) -> bool:
        assert team.panels[0].instance == "inst"
        return ok

    monkeypatch.setattr(face, "run_solo", run_solo)
    got, out, err = mnemara("run", "-i", "inst", "--no-tui")
    assert got == code and out == "" and err == ""  # the face has said why, once


SCRIPT = '[panels.{}]\nfallback_text = "hi"\n'


@pytest.mark.parametrize(
    ("panels", "extra", "chosen"),
    [
        (["engineer"], [], "engineer"),  # the script's only panel
        (["a", "inst"], [], "inst"),  # the one named like the instance
        (["a", "b"], ["-p", "b"], "b"),  # the one asked for
    ],
)
def test_run_with_a_rehearsal_uses_the_scripts_panel(
    panels: list[str],
    extra: list[str],
    chosen: str,
    inst: InstancePaths,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import panels.cli.rehearse as rehearse

    script = tmp_path / "script.toml"
    script.write_text("\n".join(SCRIPT.format(name) for name in panels))
    used: list[tuple[str, str, list[str]]] = []

    async def fake(
        instance: str, parsed: Any, panel: str, prompts: list[str], log: Any, sandbox: str
    ) -> tuple[int, bool]:
        used.append((instance, panel, prompts))
        return 0, True

    monkeypatch.setattr(rehearse, "_rehearse", fake)
    code, _, err = mnemara("run", "-i", "inst", "--rehearsal", str(script), *extra)
    assert code == 0, err
    assert used == [("inst", chosen, [])]


def test_run_with_a_rehearsal_of_several_panels_names_them(
    inst: InstancePaths, tmp_path: Path
) -> None:
    script = tmp_path / "two.toml"
    script.write_text(SCRIPT.format("a") + SCRIPT.format("b"))
    code, _, err = mnemara("run", "-i", "inst", "--rehearsal", str(script))
    assert code == 2
    assert err == (
        f"mnemara: {script} defines 2 panels (a, b) and none is named 'inst'; "
        "choose one with --panel NAME\n"
    )
