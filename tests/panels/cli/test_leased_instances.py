"""Commands that change or remove an instance refuse while another process leases it."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from panels.cli.main import app
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore
from runtime.window.rows import NewRow
from tests.lease_kit import held_elsewhere

runner = CliRunner()

# Each changing command, with the end of the sentence it refuses with.
CHANGES = [
    (["delete", "--instance", "coder", "--force"], "delete it"),
    (["delete", "--instance", "coder"], "delete it"),
    (["clear", "--instance", "coder"], "clear its window"),
    (["clear", "--instance", "coder", "--all"], "clear its window"),
    (["import", "--instance", "coder", "{dump}"], "import into it"),
    (["import", "--instance", "coder", "{dump}", "--replace"], "import into it"),
    (["migrate", "--instance", "coder"], "migrate it"),
    (["role", "--instance", "coder", "--set", "{role}"], "change its role doc"),
    (
        ["role", "--instance", "coder", "--set-from-url", "https://example.invalid/role.md"],
        "change its role doc",
    ),
]


def ids(cases: Sequence[tuple[Any, ...]]) -> list[str]:
    return [" ".join(a for a in case[0] if a not in ("--instance", "coder")) for case in cases]


def mnemara(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def coder(tmp_path: Path) -> InstancePaths:
    """Instance `coder` with two rows, and an export of it in tmp_path/dump.jsonl."""
    assert mnemara("init", "--instance", "coder")[0] == 0
    paths = InstancePaths.for_name("coder")
    with TurnStore.open(paths.turns) as store:
        store.append(
            [
                NewRow("user", ({"type": "text", "text": "hello"},), 2),
                NewRow("assistant", ({"type": "text", "text": "hi"},), 2),
            ]
        )
    assert mnemara("export", "--instance", "coder", "-o", str(tmp_path / "dump.jsonl"))[0] == 0
    (tmp_path / "other-role.md").write_text("# Another role\n", encoding="utf-8")
    return paths


@pytest.fixture
def holder(coder: InstancePaths) -> Iterator[subprocess.Popen[str]]:
    """A live process holding coder's lease as the host of team 'trio'."""
    with held_elsewhere(coder) as child:
        yield child


def snapshot(paths: InstancePaths) -> dict[str, bytes]:
    """Every file of the instance but the lease file, by relative path."""
    return {
        str(p.relative_to(paths.root)): p.read_bytes()
        for p in sorted(paths.root.rglob("*"))
        if p.is_file() and p.name != ".lease"
    }


def fill(args: list[str], tmp_path: Path) -> list[str]:
    dump, role = str(tmp_path / "dump.jsonl"), str(tmp_path / "other-role.md")
    return [a.format(dump=dump, role=role) for a in args]


@pytest.mark.parametrize(("args", "action"), CHANGES, ids=ids(CHANGES))
def test_a_change_to_a_leased_instance_is_refused_and_names_the_owner(
    args: list[str],
    action: str,
    coder: InstancePaths,
    holder: subprocess.Popen[str],
    tmp_path: Path,
) -> None:
    before = snapshot(coder)
    code, out, err = mnemara(*fill(args, tmp_path))
    assert code == 4, err
    assert out == ""
    assert err.startswith(
        f"mnemara: instance 'coder' is in use by the host of team 'trio' (pid {holder.pid} on "
    )
    assert err.endswith(f"; stop it first (`mnemara down --team trio`) before you {action}\n")
    assert snapshot(coder) == before
    assert holder.poll() is None


# The same commands once the owner died, and how each ends (all offline: no --set-from-url).
AFTER_DEATH = [
    (["delete", "--instance", "coder", "--force"], 0, "deleted"),
    (["delete", "--instance", "coder"], 2, "add --force to confirm"),
    (["clear", "--instance", "coder"], 0, "removed 2 rows"),
    (["clear", "--instance", "coder", "--all"], 0, "removed 2 rows"),
    (["import", "--instance", "coder", "{dump}"], 5, "already holds 2 rows"),
    (["import", "--instance", "coder", "{dump}", "--replace"], 0, "imported"),
    (["migrate", "--instance", "coder"], 0, "coder: "),
    (["role", "--instance", "coder", "--set", "{role}"], 0, "role doc for coder"),
]


@pytest.mark.parametrize(("args", "code", "says"), AFTER_DEATH, ids=ids(AFTER_DEATH))
def test_once_the_owner_died_the_command_goes_ahead_and_reports_the_takeover(
    args: list[str],
    code: int,
    says: str,
    coder: InstancePaths,
    holder: subprocess.Popen[str],
    tmp_path: Path,
) -> None:
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    got, out, err = mnemara(*fill(args, tmp_path))
    assert got == code, err
    assert says in out + err
    stale = f"took over the stale lease of the host of team 'trio' (pid {holder.pid} on "
    assert stale in err
    if args[0] == "delete" and code == 0:
        assert not coder.root.exists()
    else:
        assert coder.config.is_file()


def test_reading_and_noting_work_while_leased(
    coder: InstancePaths, holder: subprocess.Popen[str], tmp_path: Path
) -> None:
    code, out, _ = mnemara("list")
    assert code == 0 and out.startswith("coder\t")
    code, out, _ = mnemara("show", "--instance", "coder")
    assert code == 0 and "hello" in out
    code, _, _ = mnemara("export", "--instance", "coder", "-o", str(tmp_path / "again.jsonl"))
    assert code == 0 and (tmp_path / "again.jsonl").read_text() != ""
    code, out, _ = mnemara("role", "--instance", "coder")
    assert code == 0 and out == "(no role doc set)\n"
    code, out, _ = mnemara("note", "--instance", "coder", "while", "it", "runs")
    assert code == 0 and "noted in memory/" in out and "searchable after the next search" in out
    assert "while it runs" in next(coder.memory.glob("*.md")).read_text()
    assert not (coder.root / "graph").exists()  # the holder's engines are not raced
    code, _, err = mnemara("memory", "search", "while it runs", "--instance", "coder")
    assert code == 0 and "searchable after the running host's next search" in err
    assert not (coder.root / "index").exists()  # nor by a search beside it
    assert holder.poll() is None


def test_migrate_all_skips_a_leased_instance_and_fails_at_the_end(
    coder: InstancePaths, holder: subprocess.Popen[str]
) -> None:
    assert mnemara("init", "--instance", "other")[0] == 0
    code, out, err = mnemara("migrate", "--all")
    assert code == 4
    assert "coder:" not in out and "other: " in out
    assert (
        f"mnemara: skipped: instance 'coder' is in use by the host of team 'trio' (pid {holder.pid}"
        in err
    )
    assert err.endswith(
        "mnemara: skipped 1 instance(s) in use (coder); migrate them once they are stopped\n"
    )


def test_a_finished_command_leaves_no_lease_behind(coder: InstancePaths) -> None:
    assert mnemara("clear", "--instance", "coder")[0] == 0
    code, _, err = mnemara("clear", "--instance", "coder")
    assert code == 0 and "stale" not in err
    assert (coder.root / ".lease").read_bytes() == b""
