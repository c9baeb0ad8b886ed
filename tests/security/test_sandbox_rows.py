"""The sandbox, through the real CLI: what a pattern allows cannot reach past the panel's areas.

Each test lets the policy allow a command (as an "always allow" pattern would) that then tries
to do harm, and proves from the file system and from what the command printed that the
kernel stopped it: #12 (an allowed command runs arbitrary code), #19 (a symlink swapped after
the decision), #20 (a hard link to a file elsewhere), #25 (sockets), and the network.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from panels.host.demo import EXAMPLE, demo_team
from panels.host.turns.confine import team_sandbox
from runtime.claude import ClaudeDriver
from runtime.guard.policy import build_policy as build_approver
from runtime.instance.config import InstanceConfig, ToolPolicy, default_tool_policies, load_config
from runtime.sandbox import Sandbox, SandboxSettings, probe
from runtime.sandbox.relay import splice
from runtime.turn.driver import Approver, Decision, ToolCallRequest, ToolResult
from runtime.turn.open import open_session

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

PROBE = "probe.py"


@pytest.fixture
def anyio_backend() -> str:
    """What holds an escape here is the kernel (bubblewrap), the relay (a process inside)
    and the gateway (threads): none of them runs on the loop, which only spawns the same
    launcher script either way. Every sandboxed driver mnemara runs is on trio (the host,
    `rehearse`, `record`); the driver on both loops is tests/e2e/'s. Each row run again on
    asyncio cost a CLI session and proved nothing more."""
    return "trio"  # the host's own backend


def allowing(*patterns: str) -> InstanceConfig:
    bash = ToolPolicy(tool="Bash", mode="ask", allowed_patterns=patterns)
    others = tuple(p for p in default_tool_policies() if p.tool != "Bash")
    return InstanceConfig(allowed_tools=(bash, *others))


def script_running(command: str) -> str:
    return f"""
[[panels.eng.replies]]
when = {{ user_text_contains = "go" }}
content = [ {{ tool_use = "Bash", input = {{ command = {json.dumps(command)} }} }} ]

[[panels.eng.replies]]
when = {{ tool_result_contains = "" }}
text = "finished"
"""


async def run_probe(rehearse_fixture, work_code: str, *, settings: SandboxSettings) -> dict:  # type: ignore[no-untyped-def]
    """Write `probe.py` (which prints one JSON line) into the work dir and run it, allowed."""
    async with rehearse_fixture(
        script_running(f"python3 {PROBE}"), config=allowing(rf"python3 {PROBE}"), sandbox=settings
    ) as rig:
        (rig.work / PROBE).write_text(work_code, encoding="utf-8")
        async with rig.session() as session:
            events = [e async for e in session.turn("go")]
        results = [e for e in events if isinstance(e, ToolResult)]
        assert len(results) == 1, events
        out = results[0].content
        line = next(line for line in out.splitlines() if line.startswith("{"))
        return {"rig": rig, **json.loads(line)}


ATTEMPT = """
import json, os, socket, sys
def attempt(fn):
    try:
        return "ok: " + str(fn())
    except Exception as exc:
        return "refused: " + type(exc).__name__
"""


@pytest.fixture
def listener() -> Iterator[int]:
    """A TCP listener on the host's loopback, standing for "the network"."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


async def test_12_an_allowed_command_cannot_write_outside_read_secrets_or_reach_the_network(
    rehearse, tmp_path: Path, listener: int, anyio_backend: str
) -> None:  # type: ignore[no-untyped-def]
    assert probe().available, probe().reason
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("SECRET KEY", encoding="utf-8")
    bashrc = home / ".bashrc"
    bashrc.write_text("# mine\n", encoding="utf-8")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    code = (
        ATTEMPT
        + f"""
print(json.dumps({{
    "bashrc": attempt(lambda: open({str(bashrc)!r}, "a").write("evil")),
    "ssh": attempt(lambda: open({str(home / ".ssh" / "id_rsa")!r}).read()),
    "outside": attempt(lambda: open({str(outside / "planted")!r}, "w").write("x")),
    "network": attempt(lambda: socket.create_connection(("127.0.0.1", {listener}), 2)),
    "own_dir": attempt(lambda: open("made-here.txt", "w").write("fine")),
}}))
"""
    )
    found = await run_probe(rehearse, code, settings=SandboxSettings(mode="required"))
    # Inside, the home directory is an empty throwaway: the write lands there, not here.
    assert found["ssh"].startswith("refused"), found
    assert found["outside"].startswith("refused"), found
    assert found["network"].startswith("refused"), found
    assert found["own_dir"].startswith("ok"), found
    assert bashrc.read_text(encoding="utf-8") == "# mine\n"
    assert not (outside / "planted").exists()
    assert (found["rig"].work / "made-here.txt").read_text(encoding="utf-8") == "fine"


WRITE_THROUGH_LINK = """
[[panels.eng.replies]]
when = { user_text_contains = "go" }
content = [ { tool_use = "Write", input = { file_path = "FILE", content = "planted" } } ]

[[panels.eng.replies]]
when = { tool_result_contains = "" }
text = "finished"
"""


class SwapAfterDeciding:
    """The real policy decides; then, before the CLI writes, the link is re-pointed outside,
    as a Bash command running at the same moment could do (#19)."""

    def __init__(self, policy: Approver, link: Path, target: Path) -> None:
        self.policy, self.link, self.target = policy, link, target

    async def decide(self, call: ToolCallRequest) -> Decision:
        decision = await self.policy.decide(call)
        if call.name == "Write":
            self.link.unlink()
            self.link.symlink_to(self.target)
        return decision


@pytest.mark.parametrize("confined", [True, False], ids=["sandbox", "unconfined"])
async def test_19_a_symlink_swapped_after_the_decision_does_not_escape(
    rehearse, tmp_path: Path, confined: bool, anyio_backend: str
) -> None:  # type: ignore[no-untyped-def]
    """Unconfined, the swap redirects the write (the defect the sandbox closes). Confined,
    the outside does not exist inside, so the link leads nowhere (today the CLI notices the
    changed resolution first; were it not to, the open would fail in the kernel)."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    settings = SandboxSettings(mode="required") if confined else None
    home_work = tmp_path / "home" / "work"
    link = home_work / "link"
    script = WRITE_THROUGH_LINK.replace("FILE", str(link / "x.txt"))
    write = ToolPolicy(tool="Write", mode="allow")
    others = tuple(p for p in default_tool_policies() if p.tool != "Write")
    config = InstanceConfig(allowed_tools=(write, *others))
    async with rehearse(script, config=config, sandbox=settings) as rig:
        (rig.work / "inside").mkdir()
        link.symlink_to(rig.work / "inside")
        policy = build_approver(rig.paths, load_config(rig.paths.config), cwd=rig.work)
        approver = SwapAfterDeciding(policy, link, outside)
        async with rig.session(approver=approver) as session:
            events = [e async for e in session.turn("go")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 1 and results[0].is_error is confined, results
    assert not (rig.work / "inside" / "x.txt").exists()
    assert (outside / "x.txt").exists() is not confined


async def test_20_a_hard_link_cannot_be_made_to_a_file_outside(
    rehearse, tmp_path: Path, anyio_backend: str
) -> None:  # type: ignore[no-untyped-def]
    """Inside, a file elsewhere has no name to link to, so an edit through a link is moot."""
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("theirs", encoding="utf-8")
    code = (
        ATTEMPT
        + f"""
print(json.dumps({{
    "link": attempt(lambda: os.link({str(secret)!r}, "h")),
    "write": attempt(lambda: open("h", "a").write("mine")),
}}))
"""
    )
    found = await run_probe(rehearse, code, settings=SandboxSettings(mode="required"))
    assert found["link"].startswith("refused"), found
    assert secret.read_text(encoding="utf-8") == "theirs"


async def test_25_host_sockets_are_not_there(rehearse, tmp_path: Path, anyio_backend: str) -> None:  # type: ignore[no-untyped-def]
    """A Unix socket outside the panel's areas (an agent, docker) cannot be reached."""
    path = tmp_path / "agent.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    try:
        code = (
            ATTEMPT
            + f"""
def reach():
    s = socket.socket(socket.AF_UNIX)
    s.connect({str(path)!r})
    return "connected"
print(json.dumps({{"socket": attempt(reach), "run": attempt(lambda: sorted(os.listdir("/run")))}}))
"""
        )
        found = await run_probe(rehearse, code, settings=SandboxSettings(mode="required"))
    finally:
        server.close()
    assert found["socket"].startswith("refused"), found
    # The machine's /run (dbus, docker, agents' sockets) is not there: only the gateway's.
    assert found["run"] == "ok: ['mnemara']", found


@pytest.mark.parametrize("network", ["off", "model"])
async def test_the_model_endpoint_is_the_cli_s_alone_when_the_network_is_off(
    rehearse, network: str, anyio_backend: str
) -> None:  # type: ignore[no-untyped-def]
    """The relay carries the CLI's own connection to the model (the turn ran), but with
    network "off" a command that dials the same relay port is cut off; with "model" it
    gets through to the model endpoint (and only there)."""
    code = (
        ATTEMPT
        + """
def dial():
    s = socket.create_connection(("127.0.0.1", 18080), 2)
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    data = s.recv(100)
    if not data:
        raise ConnectionResetError("closed")
    return data[:12]
print(json.dumps({"model": attempt(dial)}))
"""
    )
    settings = SandboxSettings(mode="required", network=network)  # type: ignore[arg-type]
    found = await run_probe(rehearse, code, settings=settings)
    assert found["model"].startswith("refused" if network == "off" else "ok"), found


def test_the_demo_team_runs_inside_a_required_sandbox(tmp_path: Path) -> None:
    """The whole demo (three panels, an approval, the watchdog's halt) with the sandbox
    required: a host that could not confine the panels would refuse to start; here it builds
    the very sandbox the shipped demo team ("auto") gets where bubblewrap works. That team's
    run through the real CLI (tests/panels/host/test_e2e.py) checks that every panel's tools
    ran sandboxed, to the end of the story, so it is this run too: made a second time, it
    took a whole demo and proved nothing more."""
    assert probe().available, probe().reason
    shipped = demo_team(tmp_path, EXAMPLE)
    assert shipped.sandbox.mode == "auto"
    required = dataclasses.replace(
        shipped, sandbox=dataclasses.replace(shipped.sandbox, mode="required")
    )
    home = tmp_path / "home"
    auto_box, auto_note = team_sandbox(shipped, home)
    box, note = team_sandbox(required, home)
    assert box is not None and auto_box is not None
    assert note == auto_note and note.startswith("tools run in the sandbox"), note
    # The same sandbox but for the mode itself, which only sandbox_for reads (to refuse).
    assert box.settings.mode == "required"
    assert box == dataclasses.replace(
        auto_box, settings=dataclasses.replace(auto_box.settings, mode="required")
    )


@pytest.fixture
def tls_front(tmp_path: Path) -> Iterator[tuple[Path, Callable[[int], int]]]:
    """A self-signed certificate for 127.0.0.2, and `front(port)`: a TLS listener on
    127.0.0.2 that carries each connection, decrypted, to 127.0.0.1:port (standing for the
    model service's HTTPS endpoint)."""
    cert, key = tmp_path / "ca" / "cert.pem", tmp_path / "ca" / "key.pem"
    cert.parent.mkdir()
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=127.0.0.2", "-addext", "subjectAltName=IP:127.0.0.2",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    listeners: list[socket.socket] = []
    carriers: list[threading.Thread] = []

    def front(port: int) -> int:
        server = socket.socket()
        server.bind(("127.0.0.2", 0))
        server.listen()
        listeners.append(server)

        def serve() -> None:
            while True:
                try:
                    raw, _ = server.accept()
                except OSError:
                    return  # closed at the end of the test
                try:
                    conn = context.wrap_socket(raw, server_side=True)
                except OSError:
                    raw.close()
                    continue
                upstream = socket.create_connection(("127.0.0.1", port))
                carry = threading.Thread(target=splice, args=(conn, upstream), daemon=True)
                carry.start()
                carriers.append(carry)

        threading.Thread(target=serve, daemon=True).start()
        return int(server.getsockname()[1])

    yield cert, front
    for server in listeners:
        server.close()
    for carry in carriers:  # each closes both its sockets when the CLI's connection ends
        carry.join(timeout=10)


async def test_an_https_model_endpoint_is_reached_only_through_the_host_s_proxy(
    rehearse, tls_front: tuple[Path, Callable[[int], int]], anyio_backend: str
) -> None:  # type: ignore[no-untyped-def]
    """The live path: the CLI inside has no network, reaches the HTTPS endpoint through the
    gateway's CONNECT proxy (TLS end to end, checked against the endpoint's certificate),
    and a command's CONNECT to anywhere else is refused."""
    cert, front = tls_front
    code = (
        ATTEMPT
        + """
def elsewhere():
    s = socket.create_connection(("127.0.0.1", 18081), 2)
    s.sendall(b"CONNECT example.org:443 HTTP/1.1\\r\\n\\r\\n")
    return s.recv(64)
print(json.dumps({"proxy": attempt(elsewhere)}))
"""
    )
    settings = SandboxSettings(mode="required", network="model", readable=(cert.parent,))
    async with rehearse(
        script_running(f"python3 {PROBE}"), config=allowing(rf"python3 {PROBE}")
    ) as rig:
        port = front(int(rig.server.base_url.rsplit(":", 1)[1]))
        env = {
            **rig.env,
            "ANTHROPIC_BASE_URL": f"https://127.0.0.2:{port}/p/eng",
            "NODE_EXTRA_CA_CERTS": str(cert),
        }
        support = probe()
        assert support.bwrap is not None, support.reason
        sandbox = Sandbox(settings, support.bwrap, rig.home, rig.paths.root.parent)
        (rig.work / PROBE).write_text(code, encoding="utf-8")
        driver = ClaudeDriver(env=env, sandbox=sandbox)
        async with open_session(rig.paths.name, driver=driver, cwd=rig.work) as session:
            events = [e async for e in session.turn("go")]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(results) == 1, events
    assert "403 Forbidden" in results[0].content, results[0].content
    assert len(rig.requests()) == 2  # both model requests went through the proxy
