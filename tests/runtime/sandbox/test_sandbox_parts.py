"""The sandbox's parts on their own: the probe, the plan's mounts, the gateway's proxy."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from runtime.sandbox import SandboxSettings, SandboxUnavailable, probe, sandbox_for
from runtime.sandbox.gateway import Gateway, allowed_targets, parse_connect
from runtime.sandbox.launch import RELAY, launcher_script, open_gateway, relay_python, write_files
from runtime.sandbox.plan import Plan, build_plan
from runtime.sandbox.probe import check
from tests.noexec_kit import ROOT_ONLY, run_on_noexec


def test_a_missing_bwrap_is_named_with_the_fix(tmp_path: Path) -> None:
    support = check(None)
    assert not support.available
    assert "apt-get install bubblewrap" in support.reason
    broken = tmp_path / "bwrap"
    broken.write_text("#!/bin/sh\necho 'no namespaces here' >&2\nexit 1\n", encoding="utf-8")
    broken.chmod(0o755)
    said = check(str(broken))
    assert not said.available and "no namespaces here" in said.reason


def test_required_refuses_and_auto_runs_unconfined_without_bwrap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap on it
    with pytest.raises(SandboxUnavailable, match=r"required.*not installed"):
        sandbox_for(SandboxSettings(mode="required"), user_home=tmp_path, state_home=None)
    assert sandbox_for(SandboxSettings(), user_home=tmp_path, state_home=None) is None
    assert sandbox_for(SandboxSettings(mode="off"), user_home=tmp_path, state_home=None) is None


def mounts(argv: list[str]) -> list[tuple[str, ...]]:
    """The plan's mount options as tuples, e.g. ("--bind", src, dest)."""
    arity = {"--bind": 2, "--ro-bind": 2, "--tmpfs": 1, "--remount-ro": 1, "--symlink": 2}
    found, i = [], 0
    while i < len(argv) and argv[i] != "--":
        n = arity.get(argv[i])
        if n is not None:
            found.append(tuple(argv[i : i + n + 1]))
            i += n + 1
        else:
            i += 1
    return found


def plan_for(tmp_path: Path, settings: SandboxSettings, env: dict[str, str]) -> list[str]:
    home = tmp_path / "home"
    work = home / "proj"
    (work / ".git" / "hooks").mkdir(parents=True)
    (work / ".git" / "config").write_text("", encoding="utf-8")
    (work / ".ssh").mkdir()
    (work / "bus.sqlite").write_text("", encoding="utf-8")
    (work / "team.toml").write_text("", encoding="utf-8")
    gateway = tmp_path / "gw"
    gateway.mkdir()
    return build_plan(
        bwrap="/usr/bin/bwrap",
        cli=Path("/usr/lib/claude/claude"),
        python=Path("/usr/bin/python3"),
        relay=Path("relay.py"),
        gateway_dir=gateway,
        cwd=work,
        env=env,
        settings=settings,
        user_home=home,
        state_home=home / ".mnemara",
    ).argv


def test_the_plan_binds_the_work_dir_and_guards_what_is_in_it(tmp_path: Path) -> None:
    work = (tmp_path / "home" / "proj").resolve()
    team_file = work / "team.toml"
    settings = SandboxSettings(read_only=(team_file,))
    argv = plan_for(tmp_path, settings, {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/p/eng"})
    found = mounts(argv)
    assert ("--bind", str(work), str(work)) in found
    after_work = found[found.index(("--bind", str(work), str(work))) :]
    assert ("--ro-bind", str(work / ".git" / "hooks"), str(work / ".git" / "hooks")) in after_work
    assert ("--ro-bind", str(team_file), str(team_file)) in after_work
    assert ("--tmpfs", str(work / ".ssh")) in after_work
    assert ("--ro-bind", "/dev/null", str(work / "bus.sqlite")) in after_work
    assert ("--tmpfs", str((tmp_path / "home").resolve())) in found  # the rest of home: empty
    assert "--unshare-net" in argv and argv[argv.index("--cap-drop") + 1] == "ALL"
    relay = argv[argv.index("--") + 1 :]
    assert relay[-2:] == ["--", "/usr/lib/claude/claude"]
    assert any(r.endswith("model.sock:cli") for r in relay)  # network off: the CLI's alone
    assert argv[argv.index("ANTHROPIC_BASE_URL") + 1] == "http://127.0.0.1:18080/p/eng"


def test_an_https_endpoint_goes_through_the_proxy(tmp_path: Path) -> None:
    settings = SandboxSettings(network=("pypi.org",))
    argv = plan_for(tmp_path, settings, {"ANTHROPIC_API_KEY": "k"})
    assert argv[argv.index("ANTHROPIC_BASE_URL") + 1] == "https://api.anthropic.com"
    assert argv[argv.index("HTTPS_PROXY") + 1] == "http://127.0.0.1:18081"
    relay = argv[argv.index("--") + 1 :]
    assert not any(r.endswith(":cli") for r in relay)  # an allow-list is for commands too


def test_connect_heads_are_parsed_strictly() -> None:
    assert parse_connect(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: x\r\n\r\n") == ("pypi.org", 443)
    assert parse_connect(b"CONNECT [::1]:443 HTTP/1.1\r\n\r\n") == ("::1", 443)
    for bad in (b"GET http://x/ HTTP/1.1\r\n\r\n", b"CONNECT pypi.org HTTP/1.1\r\n\r\n", b"\x00"):
        assert parse_connect(bad) is None
    assert allowed_targets(["PyPI.org", "h:8443"]) == {("pypi.org", 443), ("h", 8443)}


@pytest.fixture
def upstream() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def serve() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.sendall(b"hello from upstream")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()


def through_proxy(directory: Path, target: str) -> bytes:
    client = socket.socket(socket.AF_UNIX)
    client.settimeout(10)
    client.connect(str(directory / "proxy.sock"))
    client.sendall(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n\r\n".encode())
    data = b""
    while chunk := client.recv(4096):
        data += chunk
    client.close()
    return data


def test_the_proxy_lets_through_only_the_allowed(tmp_path: Path, upstream: int) -> None:
    allowed = frozenset({("127.0.0.1", upstream)})
    gateway = Gateway(tmp_path, model=None, allowed=allowed)
    try:
        refused = through_proxy(tmp_path, "example.org:443")
        assert refused.startswith(b"HTTP/1.1 403")
        passed = through_proxy(tmp_path, f"127.0.0.1:{upstream}")
        assert passed.startswith(b"HTTP/1.1 200") and passed.endswith(b"hello from upstream")
    finally:
        gateway.close()
    assert gateway.refused == [("example.org", 443)]


@pytest.mark.parametrize("where", ["home", "tmp"])
def test_a_cli_installed_under_home_or_tmp_still_runs_inside(tmp_path: Path, where: str) -> None:
    """The sandbox empties HOME and /tmp; a CLI in a virtualenv there must still be found
    (it is mounted after them). Runs the real bubblewrap and relay with a stand-in CLI."""
    support = probe()
    assert support.bwrap is not None, support.reason
    home = tmp_path / "home"
    work = home / "proj"
    work.mkdir(parents=True)
    venv = (home / "proj-env" if where == "home" else tmp_path / "env") / "bin"
    venv.mkdir(parents=True)
    cli = venv / "claude"
    cli.write_text('#!/bin/sh\necho "stand-in CLI ran in $PWD with $1"\n', encoding="utf-8")
    cli.chmod(0o755)
    gateway = tmp_path / "gw"
    gateway.mkdir()
    shutil.copyfile(RELAY, gateway / RELAY.name)
    plan = build_plan(
        bwrap=support.bwrap,
        cli=cli,
        python=relay_python(),
        relay=RELAY,
        gateway_dir=gateway,
        cwd=work,
        env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/p/eng", "HOME": str(home)},
        settings=SandboxSettings(),
        user_home=home,
        state_home=None,
    )
    write_files(gateway, plan)
    opened = open_gateway(gateway, plan)  # the relay refuses to start without its tie
    try:
        done = subprocess.run([*plan.argv, "--flag"], capture_output=True, text=True, timeout=60)
    finally:
        opened.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"stand-in CLI ran in {work.resolve()} with --flag"


def stand_in_plan(tmp_path: Path, script: str) -> tuple[Path, Plan]:
    """(work dir, plan) of a sandbox whose "CLI" is the shell `script`; its gateway directory
    is tmp_path/gw."""
    support = probe()
    assert support.bwrap is not None, support.reason
    home, gateway = tmp_path / "home", tmp_path / "gw"
    work = home / "proj"
    work.mkdir(parents=True)
    gateway.mkdir()
    cli = tmp_path / "env" / "claude"
    cli.parent.mkdir()
    cli.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    cli.chmod(0o755)
    shutil.copyfile(RELAY, gateway / RELAY.name)
    plan = build_plan(
        bwrap=support.bwrap, cli=cli, python=relay_python(), relay=RELAY, gateway_dir=gateway,
        cwd=work, env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9/p/eng", "HOME": str(home)},
        settings=SandboxSettings(), user_home=home, state_home=None,
    )  # fmt: skip
    write_files(gateway, plan)
    return work, plan


def test_the_sandbox_outlives_the_thread_that_started_it_and_ends_with_the_gateway(
    tmp_path: Path,
) -> None:
    """trio starts processes from worker threads that exit after 10 idle seconds; a sandbox
    tied to that thread (bubblewrap's --die-with-parent, when the launcher exec'd it) was
    killed with it, mid-approval.
    Here the starting thread ends once the sandbox is up; the stand-in CLI must still reach
    its second mark, and must end when the turn's gateway closes (as when the host dies)."""
    work, plan = stand_in_plan(
        tmp_path, 'echo one > mark1\nwhile [ ! -e go ]; do sleep 0.05; done\n'
                  f'echo two > mark2\nsleep {LEFT} &\nexec sleep 61\n',  # one left behind
    )  # fmt: skip
    launcher = tmp_path / "claude"  # what the SDK starts, as Sandbox.turn writes it
    launcher.write_text(launcher_script(plan), encoding="utf-8")
    launcher.chmod(0o700)
    gateway = open_gateway(tmp_path / "gw", plan)
    started: list[subprocess.Popen[bytes]] = []
    up = threading.Event()

    def start() -> None:  # like trio's worker thread: alive while the sandbox comes up
        started.append(subprocess.Popen([str(launcher)]))
        up.wait(30)

    thread = threading.Thread(target=start)
    thread.start()
    try:
        wait_for(lambda: (work / "mark1").exists(), "the CLI started")
    finally:
        up.set()
        thread.join()
    task = Path(f"/proc/self/task/{thread.native_id}")
    wait_for(lambda: not task.exists(), "the starting thread gone from the kernel too")
    (process,) = started
    try:
        (work / "go").touch()
        wait_for(lambda: (work / "mark2").exists(), "the CLI still running after its thread")
        assert process.poll() is None
        gateway.close()
        assert process.wait(timeout=30) != 0  # killed
        # With what it left behind: bubblewrap's init would wait for it, keeping the sandbox.
        wait_for(lambda: not running(f"sleep {LEFT}"), "the sandbox emptied")
    finally:
        gateway.close()
        if process.poll() is None:
            process.kill()


def test_the_relay_refuses_to_start_without_its_tie_to_the_host(tmp_path: Path) -> None:
    work, plan = stand_in_plan(tmp_path, "echo ran > ran\n")
    done = subprocess.run(plan.argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 70 and "relay: cannot open" in done.stderr
    assert not (work / "ran").exists()


LEFT = "60.0713"  # a process the stand-in CLI leaves behind, by its command line


def running(command: str) -> bool:
    """Whether a process with exactly this command line runs (on this machine)."""
    for entry in Path("/proc").iterdir():
        try:
            if (entry / "cmdline").read_bytes().replace(b"\0", b" ").strip() == command.encode():
                return True
        except OSError:
            continue
    return False


def wait_for(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"not seen within {within:g}s: {what}"
        time.sleep(0.05)


def test_killing_the_launcher_ends_the_whole_sandbox(tmp_path: Path) -> None:
    """What the SDK started is "the CLI" to it: killing it must end everything inside, or
    the sandbox would keep the SDK's pipes open and the turn would never end."""
    work, plan = stand_in_plan(tmp_path, f"echo one > mark1\nsleep {LEFT} &\nexec sleep 61\n")
    launcher = tmp_path / "claude"
    launcher.write_text(launcher_script(plan), encoding="utf-8")
    launcher.chmod(0o700)
    gateway = open_gateway(tmp_path / "gw", plan)
    process = subprocess.Popen([str(launcher)], stdout=subprocess.PIPE)
    try:
        wait_for(lambda: (work / "mark1").exists(), "the CLI started")
        process.kill()
        wait_for(lambda: not running(f"sleep {LEFT}"), "the sandbox emptied")
        assert process.stdout is not None
        assert process.stdout.read() == b""  # EOF: nothing inside holds the pipe any more
    finally:
        gateway.close()
        if process.poll() is None:
            process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_where_a_sandbox_cannot_nest_commands_share_the_cli_s_namespaces_and_it_is_said(
    tmp_path: Path,
) -> None:
    fake = tmp_path / "bwrap"
    fake.write_text(
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = "{fake}" ] && {{ echo "bwrap: no nesting" >&2; '
        "exit 1; }; done\nexit 0\n",
        encoding="utf-8",
    )
    fake.chmod(0o755)
    support = check(str(fake))
    assert support.available and not support.nested
    assert support.nested_reason == "bwrap: no nesting"
    plan = build_plan(
        bwrap=str(fake), cli=Path("/usr/lib/claude/claude"), python=Path("/usr/bin/python3"),
        relay=Path("relay.py"), gateway_dir=tmp_path, cwd=tmp_path, env={},
        settings=SandboxSettings(), user_home=tmp_path, state_home=None, isolate=False,
    )  # fmt: skip
    assert "CLAUDE_CODE_SHELL_PREFIX" not in plan.argv and plan.files == {}


@ROOT_ONLY
def test_a_temporary_folder_that_runs_nothing_means_no_sandbox_and_says_what_to_do(
    tmp_path: Path,
) -> None:
    """Each turn's launcher is written to the temporary folder and run from there: mounted
    noexec, every sandboxed turn would fail to start, so the probe says no, with the fix."""
    mount = tmp_path / "noexec"
    check = "from runtime.sandbox import probe; s = probe(); print(s.bwrap); print(s.reason)"
    bwrap, reason = run_on_noexec(mount, check).splitlines()
    assert bwrap == "None"
    assert reason == (
        f"the temporary folder {mount} is mounted noexec, so a sandbox's launcher cannot run "
        "there; set TMPDIR to a folder where programs can run"
    )
    assert probe().available  # here, where /tmp runs programs
