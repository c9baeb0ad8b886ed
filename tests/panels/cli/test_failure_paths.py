"""Failures while a host starts or runs end the command with one line and an exit code.

Each runs the real entry point in a subprocess: the errors come out of anyio task groups
as ExceptionGroups, and must be reported like the bare error, never as a traceback.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.store import TurnStore

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = ("Traceback", "ExceptionGroup")


def mnemara(*args: str, home: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "panels.cli.main", *args],
        cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout,
        env={**os.environ, "MNEMARA_HOME": str(home)},
    )  # fmt: skip


def clean(done: subprocess.CompletedProcess[str]) -> str:
    output = done.stdout + done.stderr
    assert not any(word in output for word in FORBIDDEN), output
    return output


@pytest.fixture
def solo_team(tmp_path: Path) -> Path:
    """A copy of the solo example team (panel `assistant`, instance `solo-assistant`)."""
    team = tmp_path / "solo"
    shutil.copytree(ROOT / "examples" / "teams" / "solo", team)
    return team / "team.toml"


def test_a_broken_rehearsal_script_stops_the_host_start(
    solo_team: Path, mnemara_home: Path
) -> None:
    (solo_team.parent / "rehearsal.toml").write_text("this is [[ not toml\n")
    done = mnemara("up", str(solo_team), "--headless", home=mnemara_home)
    clean(done)
    assert done.returncode == 3
    assert done.stderr.startswith("mnemara: ") and "rehearsal.toml: not valid TOML" in done.stderr
    detached = mnemara("up", str(solo_team), home=mnemara_home)
    clean(detached)
    assert detached.returncode == 3
    assert "the host of team 'solo' did not start: " in detached.stderr
    assert "rehearsal.toml: not valid TOML" in detached.stderr


HOLDER = textwrap.dedent(
    """
    import sys
    from runtime.instance.home import InstancePaths
    from runtime.instance.lease import LeaseOwner, acquire_lease

    paths = InstancePaths.for_name(sys.argv[1])
    lease = acquire_lease(paths, LeaseOwner.this_process("the host of team 'trio'", team="trio"))
    print("held", flush=True)
    sys.stdin.read()
    """
)


@pytest.fixture
def held(mnemara_home: Path) -> Iterator[str]:
    """Instance `solo-assistant`, leased by another live process."""
    paths = InstancePaths.for_name("solo-assistant", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, paths.name],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "MNEMARA_HOME": str(mnemara_home)},
    ) as holder:  # fmt: skip
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline() == "held\n"
        try:
            yield paths.name
        finally:
            holder.stdin.close()
            holder.wait(timeout=10)


def test_a_host_that_cannot_lease_its_instance_says_who_holds_it(
    solo_team: Path, mnemara_home: Path, held: str
) -> None:
    for args in (["up", str(solo_team), "--headless"], ["run", "-i", held, "--no-tui"]):
        done = mnemara(*args, home=mnemara_home)
        clean(done)
        assert done.returncode == 4, done.stderr
        assert f"instance '{held}' is in use by the host of team 'trio'" in done.stderr
        assert done.stderr.count("\n") == 1


def _corrupt_turns(paths: InstancePaths) -> None:
    for extra in ("", "-wal", "-shm"):
        Path(f"{paths.turns}{extra}").unlink(missing_ok=True)
    paths.turns.write_bytes(b"not a database" * 100)


def _corrupt_permissions(paths: InstancePaths) -> None:
    paths.permissions.write_text("{not json")


def test_a_corrupt_turns_store_stops_run_before_the_host_starts(mnemara_home: Path) -> None:
    """`run` reads the store before it leases the instance (an original's is refused there,
    naming `migrate`): a corrupt one is said once, with its code, and no host starts."""
    paths = InstancePaths.for_name("broken", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    _corrupt_turns(paths)
    done = mnemara("run", "-i", "broken", "--no-tui", home=mnemara_home)
    clean(done)
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("not a usable SQLite database") == 1, done.stderr
    assert "given up" not in done.stdout + done.stderr


def _corrupt_config(paths: InstancePaths) -> None:
    paths.config.write_text("{not json")


@pytest.mark.parametrize(
    ("corrupt", "code", "says"),
    [
        (_corrupt_turns, 5, "turns.sqlite is not a usable SQLite database"),
        (_corrupt_permissions, 8, "permissions.json: not valid JSON"),
        (_corrupt_config, 3, "config.json: not valid JSON"),
    ],
    ids=["turns.sqlite", "permissions.json", "config.json"],
)
def test_rehearse_reports_a_corrupt_file_by_its_code(
    corrupt: object, code: int, says: str, mnemara_home: Path
) -> None:
    paths = InstancePaths.for_name("broken", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    TurnStore.open(paths.turns).close()
    assert callable(corrupt)
    corrupt(paths)
    script = ROOT / "examples" / "rehearsal" / "solo.toml"
    done = mnemara(
        "rehearse", "-i", "broken", "--script", str(script), "--prompt", "hi", home=mnemara_home
    )
    clean(done)
    assert done.returncode == code, done.stderr
    assert done.stderr.startswith("mnemara: ") and says in done.stderr


def test_a_corrupt_permissions_file_stops_run_before_the_host_starts(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("badperm", mnemara_home)
    paths.root.mkdir()
    save_config(paths.config, InstanceConfig())
    _corrupt_permissions(paths)
    done = mnemara("run", "-i", "badperm", "--no-tui", home=mnemara_home)
    clean(done)
    assert done.returncode == 8, done.stderr
    assert done.stderr.count("permissions.json: not valid JSON") == 1, done.stderr
    assert "given up" not in done.stdout + done.stderr


def test_a_corrupt_config_stops_run_before_the_host_starts(mnemara_home: Path) -> None:
    paths = InstancePaths.for_name("badconf", mnemara_home)
    paths.root.mkdir()
    paths.config.write_text("{not json")
    done = mnemara("run", "-i", "badconf", "--no-tui", home=mnemara_home)
    clean(done)
    assert done.returncode == 3 and "config.json: not valid JSON" in done.stderr


@pytest.mark.e2e
@pytest.mark.slow
def test_ctrl_c_during_the_demo_exits_130_without_a_traceback(mnemara_home: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "panels.cli.main", "demo"],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    ) as demo:  # fmt: skip
        assert demo.stdout is not None
        seen = []
        for line in demo.stdout:  # until the team is at work
            seen.append(line)
            if "host ready" in line:
                break
        os.killpg(demo.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        seen.append(demo.stdout.read())
        code = demo.wait(timeout=60)
    output = "".join(seen)
    assert code == 130, output
    assert not any(word in output for word in FORBIDDEN), output
