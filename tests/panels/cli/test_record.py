"""`mnemara record` and `mnemara rehearse --cassette`: through the real bundled CLI.

The recorded "real" service is the rehearsal model itself, on loopback in a thread of its
own (the relay's upstream), so the whole chain runs offline: CLI → relay → rehearsal
server, then the cassette replayed through the CLI against a fresh instance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import claude_agent_sdk
import pytest
from anyio.from_thread import start_blocking_portal
from typer.testing import CliRunner, Result

from panels.cli.main import app
from runtime.cassette.file import load_cassette
from runtime.cassette.script import cassette_script
from runtime.instance.config import InstanceConfig, save_config
from runtime.instance.home import InstancePaths
from runtime.rehearsal import RehearsalServer, load_script, open_rehearsal_server, parse_script
from runtime.store import TurnStore

CLI = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not CLI.exists(), reason=f"the SDK's bundled CLI is not installed at {CLI}"),
]

UPSTREAM_KEY = "sk-ant-api03-UPSTREAMplantedKEY0123456789"
ROLE_KEY = "sk-ant-api03-ROLEDOCplantedKEY98765"
HEADER_KEY = "sk-ant-api03-HEADERplantedKEY00001"
ENV_SECRET = "tok-planted-env-value-42"  # no known shape: scrubbed as a literal
REPLY_TOKEN = "ghp_PLANTEDreplyTOKEN000000000000042"
ROLE = f"# Role\nYou are the engineer. The deploy key is {ROLE_KEY}; never print it.\n"
BASH = "printenv MY_SERVICE_TOKEN"
SCRIPT = f"""
[panels.eng]
strict = true
[[panels.eng.replies]]
when = {{ user_text_contains = "hello" }}
text = "Hello. My token is {REPLY_TOKEN}."
[[panels.eng.replies]]
when = {{ user_text_contains = "env" }}
content = [{{ text = "Checking." }}, {{ tool_use = "Bash", input = {{ command = "{BASH}" }} }}]
[[panels.eng.replies]]
when = {{ tool_result_contains = "" }}
text = "Done with the tool."
"""


def make_instance(name: str, role: str = ROLE, *, allow_bash: bool = True) -> InstancePaths:
    paths = InstancePaths.for_name(name)
    paths.root.mkdir()
    paths.role.write_text(role, encoding="utf-8")
    save_config(paths.config, InstanceConfig(role_doc_path=str(paths.role)))
    TurnStore.open(paths.turns).close()
    if allow_bash:
        paths.permissions.write_text(json.dumps({"Bash": [re.escape(BASH)]}), encoding="utf-8")
    return paths


@pytest.fixture
def upstream(monkeypatch: pytest.MonkeyPatch) -> Iterator[RehearsalServer]:
    """The rehearsal model as the service being recorded, with secrets planted around it."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", UPSTREAM_KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", ENV_SECRET)
    monkeypatch.setenv("ANTHROPIC_CUSTOM_HEADERS", f"X-Trace-Token: {HEADER_KEY}")
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(open_rehearsal_server(parse_script(SCRIPT))) as server,
    ):
        yield server


def mnemara(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def record(server: RehearsalServer, cassette: Path) -> Result:
    result = mnemara(
        "record", "-i", "eng", "--cassette", str(cassette),
        "--upstream", server.base_url_for("eng"),
        "--prompt", "hello", "--prompt", "show the env",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return result


def test_one_recorded_session_replays_reports_divergence_and_becomes_a_script(
    upstream: RehearsalServer, tmp_path: Path
) -> None:
    """One recording (a real CLI session through the relay) serves the three uses of a
    cassette, each against an instance of its own: recording it three times took two more
    CLI sessions and proved nothing more."""
    make_instance("eng")
    cassette = tmp_path / "session.jsonl"
    result = record(upstream, cassette)
    replays_offline_with_the_same_requests_and_decisions(upstream, cassette, result)
    reports_a_changed_role_doc_and_policy_as_the_first_divergence(cassette)
    becomes_a_script_that_rehearses_the_same_session(cassette, tmp_path)


def replays_offline_with_the_same_requests_and_decisions(
    upstream: RehearsalServer, cassette: Path, result: Result
) -> None:
    assert "  result: " + ENV_SECRET in result.stdout  # the tool really ran, upstream answered
    assert f"cassette: {cassette} holds 3 request(s)" in result.stdout
    assert "scrubbed: anthropic-key x3; env:MY_SERVICE_TOKEN x1; github-token x3" in result.stdout
    assert [r.status for r in upstream.requests("eng")] == [200, 200, 200]

    raw = cassette.read_bytes()
    for secret in (UPSTREAM_KEY, ROLE_KEY, HEADER_KEY, ENV_SECRET, REPLY_TOKEN):
        for form in (secret, json.dumps(secret)[1:-1]):
            assert form.encode() not in raw, secret
    loaded = load_cassette(cassette)
    assert loaded.inputs == ("hello", "show the env")
    assert [e.request.path for e in loaded.exchanges] == ["/v1/messages?beta=true"] * 3
    assert loaded.scrubbed is not None
    assert loaded.scrubbed["headers"] == ["x-api-key", "x-trace-token"]
    assert "exchange[0].request.body.system[2].text" in loaded.scrubbed["paths"]

    make_instance("fresh")
    replay = mnemara("rehearse", "-i", "fresh", "--cassette", str(cassette))
    assert replay.exit_code == 0, replay.output
    assert "assistant: Hello. My token is [scrubbed:github-token]." in replay.stdout
    assert "requests: all 3 match the recording\ntool decisions: 1/1 the same\n" in replay.stdout


def reports_a_changed_role_doc_and_policy_as_the_first_divergence(cassette: Path) -> None:
    make_instance("changed", ROLE.replace("engineer", "reviewer"), allow_bash=False)
    # Unconfined, the policy without the recorded "always" rule asks, and headless refuses
    # (in the sandbox the same Bash call would run: the sandbox contains it).
    replay = mnemara("rehearse", "-i", "changed", "--cassette", str(cassette), "--sandbox", "off")
    assert replay.exit_code == 11, replay.output
    found = re.search(
        r"requests: request 0 differs from the recording at byte (\d+) \(in system\[2\]\): "
        r"recorded 'engineer\. The deploy key is \[scrub.*', replayed 'reviewer\. The deploy",
        replay.stdout,
    )
    assert found, replay.stdout
    assert "tool decisions: 0/1 the same\n" in replay.stdout
    assert re.search(
        r"tool call 0 \(Bash toolu_\w+\): recorded allowed; replayed refused", replay.stdout
    )


def becomes_a_script_that_rehearses_the_same_session(cassette: Path, tmp_path: Path) -> None:
    out = tmp_path / "session.toml"
    converted = mnemara("rehearse", "--cassette", str(cassette), "--to-script", str(out))
    assert converted.exit_code == 0, converted.output
    assert f"wrote {out}: panel 'eng', 3 recorded answer(s), strict" in converted.stdout
    assert load_script(out) == cassette_script(load_cassette(cassette), "eng")

    again = mnemara("rehearse", "--cassette", str(cassette), "--to-script", str(out))
    assert again.exit_code == 2 and "already exists; give --force" in again.stderr
    forced = mnemara("rehearse", "--cassette", str(cassette), "--to-script", str(out), "--force")
    assert forced.exit_code == 0, forced.output

    make_instance("scripted")
    run = mnemara(
        "rehearse", "-i", "scripted", "--script", str(out),
        "--prompt", "hello", "--prompt", "show the env",
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    assert "  result: " + ENV_SECRET in run.stdout
    assert "assistant: Done with the tool." in run.stdout


def test_record_without_a_key_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_instance("eng")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    result = mnemara("record", "-i", "eng", "--cassette", str(tmp_path / "c.jsonl"))
    assert result.exit_code == 6
    assert result.stderr.startswith("mnemara: no key to record with: set ANTHROPIC_API_KEY")
    assert result.stderr.count("\n") == 1
    assert not (tmp_path / "c.jsonl").exists()


def test_record_refuses_a_bad_upstream_and_an_existing_cassette(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    make_instance("eng")
    monkeypatch.setenv("ANTHROPIC_API_KEY", UPSTREAM_KEY)
    bad = mnemara("record", "-i", "eng", "--cassette", str(tmp_path / "c"), "--upstream", "ftp:x")
    assert bad.exit_code == 2 and "--upstream 'ftp:x' is not an http(s) URL" in bad.stderr
    existing = tmp_path / "old.jsonl"
    existing.write_text("keep me")
    kept = mnemara("record", "-i", "eng", "--cassette", str(existing))
    assert kept.exit_code == 2 and "already exists; give --force" in kept.stderr
    assert existing.read_text() == "keep me"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give exactly one of --script FILE or --cassette FILE"),
        (
            ["--script", "a.toml", "--cassette", "b.jsonl"],
            "give exactly one of --script FILE or --cassette FILE",
        ),
        (
            ["--script", "a.toml", "--to-script", "o.toml"],
            "--to-script converts a cassette: give --cassette FILE",
        ),
        (["--cassette", "b.jsonl"], "give the instance to rehearse with --instance NAME"),
    ],
)
def test_rehearse_wants_exactly_one_source(args: list[str], message: str) -> None:
    result = mnemara("rehearse", *args)
    assert result.exit_code == 2
    assert result.stderr == f"mnemara: {message}\n"


def test_a_broken_cassette_is_one_line_naming_the_file(tmp_path: Path) -> None:
    make_instance("eng")
    path = tmp_path / "cut.jsonl"
    path.write_text('{"cassette": 1}\n{"exchange": 0, "requ')
    result = mnemara("rehearse", "-i", "eng", "--cassette", str(path))
    assert result.exit_code == 3
    assert result.stderr.startswith(f"mnemara: {path}: line 2: not valid JSON")
    assert result.stderr.count("\n") == 1


def test_the_repl_inputs_are_recorded_and_replayed(
    upstream: RehearsalServer, tmp_path: Path
) -> None:
    make_instance("eng")
    cassette = tmp_path / "repl.jsonl"
    args = ["record", "-i", "eng", "--cassette", str(cassette)]
    result = CliRunner().invoke(
        app, [*args, "--upstream", upstream.base_url_for("eng")], input="hello\n/quit\n"
    )
    assert result.exit_code == 0, result.output
    assert "assistant: Hello. My token is [scrubbed" not in result.stdout  # the live answer
    assert load_cassette(cassette).inputs == ("hello",)  # not the /quit
    make_instance("fresh")
    replay = mnemara("rehearse", "-i", "fresh", "--cassette", str(cassette))
    assert replay.exit_code == 0, replay.output
    assert "requests: all 1 match the recording\ntool decisions: 0/0 the same\n" in replay.stdout
