"""A role doc's lane from the shell: `show` prints it, `init` and `role --set` refuse a lane
that cannot be read (the panel would halt on it). The host's `role` verb: test_role_verb.py."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from panels.cli.main import app

runner = CliRunner()
LANE = "---\nwritable: [src/**]\nrecipients: [reviewer]\nmax_turn_tool_calls: 12\n---\n"
BAD = "---\nwritable: [src/**]\ntools: [Read, on]\n---\nBody.\n"


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_show_prints_the_lane_the_role_doc_declares(mnemara_home: Path, tmp_path: Path) -> None:
    doc = tmp_path / "role.md"
    doc.write_text(LANE + "# Role\n", encoding="utf-8")
    assert mnemara("init", "-i", "x", "--role", str(doc))[0] == 0
    code, out, _ = mnemara("show", "-i", "x")
    assert code == 0
    assert f"lane (from {doc}):" in out
    assert "  writable: src/**" in out and "  recipients: reviewer" in out
    assert "  readable: (home and working directory only)" in out
    assert "  max_turn_tool_calls: 12" in out
    code, out, _ = mnemara("show", "-i", "x", "--json")
    shown = json.loads(out)
    assert shown["lane"]["writable"] == ["src/**"] and shown["lane"]["tools"] is None
    assert shown["lane_problem"] is None
    doc.write_text("# Role, no front matter\n", encoding="utf-8")
    assert "lane: none (" in mnemara("show", "-i", "x")[1]


def test_show_names_a_lane_that_cannot_be_read_and_exits_7(
    mnemara_home: Path, tmp_path: Path
) -> None:
    doc = tmp_path / "role.md"
    doc.write_text("Body.\n", encoding="utf-8")
    assert mnemara("init", "-i", "x", "--role", str(doc))[0] == 0
    doc.write_text(BAD, encoding="utf-8")  # edited after it was set: the next turn halts
    code, out, err = mnemara("show", "-i", "x")
    assert code == 7
    assert "the window is empty" in out and "lane: unknown" in out  # the rest is still shown
    assert f"{doc}:3: lane field 'tools[1]'" in err
    code, out, _ = mnemara("show", "-i", "x", "--json")
    assert code == 7 and "tools[1]" in json.loads(out)["lane_problem"]


def test_init_and_role_set_refuse_a_lane_that_cannot_be_read(
    mnemara_home: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.md"
    bad.write_text(BAD, encoding="utf-8")
    code, _, err = mnemara("init", "-i", "x", "--role", str(bad))
    assert code == 7 and f"{bad}:3: lane field 'tools[1]'" in err
    assert not (mnemara_home / "x").exists()
    assert mnemara("init", "-i", "y")[0] == 0
    code, _, err = mnemara("role", "-i", "y", "--set", str(bad))
    assert code == 7 and "tools[1]" in err
    assert mnemara("role", "-i", "y")[1].strip() == "(no role doc set)"
