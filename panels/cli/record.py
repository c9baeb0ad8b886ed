"""`mnemara record`: a real solo session whose model traffic is saved, scrubbed, to a cassette.

The session is the one `mnemara rehearse` runs (the instance's role doc, window and policy,
the real CLI with a throwaway HOME), but its model service is a loopback relay
(runtime/cassette/relay.py) that forwards every request to the real upstream with the real
key, and appends each finished exchange, scrubbed, to the cassette. The operator's inputs are
saved too, so `mnemara rehearse --cassette` can replay the same turns offline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlsplit, urlunsplit

import typer

from panels.cli.errors import EXIT_DRIVER, EXIT_FAILURE, EXIT_USAGE, fail, reports_errors
from panels.cli.options import InstanceOpt, check_output

if TYPE_CHECKING:
    from panels.repl.terminal import Terminal
    from runtime.cassette.file import CassetteWriter
    from runtime.cassette.relay import Credential
    from runtime.turn.driver import AgentDriver

NO_KEY = (
    "no key to record with: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) to the key of the "
    "model service, and ANTHROPIC_BASE_URL or --upstream URL when it is not {upstream}"
)


def refuse_existing(path: Path, force: bool) -> None:
    """Exit 2 when `path` exists and `force` was not given (a cassette is never clobbered)."""
    check_output(path)
    if path.exists() and not force:
        raise fail(f"{path} already exists; give --force to replace it", EXIT_USAGE)


def upstream_of(given: str | None, env: Mapping[str, str]) -> tuple[str, Credential]:
    """Where to forward and with what key: `--upstream`, else ANTHROPIC_BASE_URL, else the
    public service; the key from ANTHROPIC_API_KEY, else ANTHROPIC_AUTH_TOKEN (exit 6)."""
    from runtime.cassette.relay import DEFAULT_UPSTREAM, Credential

    target = given or env.get("ANTHROPIC_BASE_URL") or DEFAULT_UPSTREAM
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        where = "--upstream" if given else "ANTHROPIC_BASE_URL"
        raise fail(f"{where} {target!r} is not an http(s) URL, e.g. {DEFAULT_UPSTREAM}", EXIT_USAGE)
    if env.get("ANTHROPIC_API_KEY"):
        return target, Credential(env["ANTHROPIC_API_KEY"])
    if env.get("ANTHROPIC_AUTH_TOKEN"):
        return target, Credential(env["ANTHROPIC_AUTH_TOKEN"], bearer=True)
    raise fail(NO_KEY.format(upstream=DEFAULT_UPSTREAM), EXIT_DRIVER)


def shown_url(url: str) -> str:
    """The upstream as saved in the cassette: no user, password or query (they may be keys)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


@reports_errors
def record(
    instance: InstanceOpt,
    cassette: Annotated[
        Path,
        typer.Option("--cassette", metavar="FILE", help="Write the recording to this file."),
    ],
    prompt: Annotated[
        list[str] | None,
        typer.Option(
            "--prompt",
            metavar="TEXT",
            help="Run this input as a turn and exit (repeat for several turns); without it, "
            "the line REPL.",
        ),
    ] = None,
    upstream: Annotated[
        str | None,
        typer.Option(
            "--upstream",
            metavar="URL",
            help="The model service to record (default: ANTHROPIC_BASE_URL, else the public "
            "Anthropic API).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace an existing cassette.")] = False,
) -> None:
    """Run a real session and save its model requests and answers, scrubbed, to a cassette.

    Replay it offline with `mnemara rehearse --cassette FILE`."""
    import anyio

    from runtime.instance.home import InstancePaths
    from runtime.policy.rules import load_rules

    refuse_existing(cassette, force)
    load_rules(InstancePaths.for_name(instance).require().permissions)
    target, credential = upstream_of(upstream, os.environ)
    failed, ok = anyio.run(
        lambda: _record(instance, cassette, prompt or [], target, credential), backend="trio"
    )
    if failed:
        raise typer.Exit(EXIT_DRIVER)
    if not ok:
        raise typer.Exit(EXIT_FAILURE)


async def _record(
    instance: str, path: Path, prompts: list[str], target: str, credential: Credential
) -> tuple[int, bool]:
    import tempfile

    from panels.host.solo import solo_team
    from panels.host.turns.confine import team_sandbox
    from panels.repl.face import run_face
    from panels.unconfined import UNCONFINED, told
    from runtime.cassette.file import CassetteWriter
    from runtime.cassette.relay import open_relay
    from runtime.cassette.scrub import Scrubber, env_secrets
    from runtime.claude import ClaudeDriver
    from runtime.instance.home import InstancePaths
    from runtime.rehearsal.env import rehearsal_env

    scrubber = Scrubber({**env_secrets(os.environ), "upstream-key": credential.value})
    mode: Literal["prompts", "repl"] = "prompts" if prompts else "repl"
    writer = CassetteWriter(path, instance=instance, upstream=shown_url(target), mode=mode)
    team = solo_team(instance)
    sandbox, note = team_sandbox(team)
    if note.startswith(UNCONFINED):
        typer.echo(f"mnemara: {note}", err=True)
    failed, ok = 0, True
    try:
        async with open_relay(target, credential, writer.add_exchange, scrubber=scrubber) as relay:
            with tempfile.TemporaryDirectory(prefix="mnemara-record-") as cli_home:
                env = rehearsal_env(relay.base_url, Path(cli_home))
                driver = ClaudeDriver(env=env, sandbox=sandbox)
                if prompts:
                    failed = await _prompt_turns(instance, driver, prompts, writer)
                else:
                    history = InstancePaths.for_name(instance).prompt_history
                    terminal = _recording_terminal(writer, history)
                    ok = await run_face(
                        team, terminal, drivers=lambda spec: driver, sandbox_note=told(note, team)
                    )
        writer.finish(relay.tally.as_json())
    finally:
        writer.close()
    for problem in relay.failures:
        typer.echo(f"mnemara: {problem}", err=True)
    typer.echo(f"cassette: {path} holds {writer.count} request(s)")
    typer.echo(f"scrubbed: {relay.tally.summary()}")
    return failed, ok


def _recording_terminal(writer: CassetteWriter, history: Path) -> Terminal:
    """The REPL's terminal, saving each operator input (not /commands) to the cassette."""
    from panels.repl.terminal import Terminal

    class RecordingTerminal(Terminal):
        async def read(self, prompt: str = "") -> str | None:
            line = await super().read(prompt)
            if line is not None and line.strip() and not line.strip().startswith("/"):
                writer.add_input(line)
            return line

    return RecordingTerminal(history=history)


async def _prompt_turns(
    instance: str, driver: AgentDriver, prompts: list[str], writer: CassetteWriter
) -> int:
    """Each prompt as a turn, printed as the REPL prints it; how many failed. Headless: a
    call the policy would ask about is refused."""
    from panels.repl.loop import run_turn
    from panels.repl.terminal import Terminal
    from runtime.errors import DriverError
    from runtime.turn.open import open_session

    failed = 0
    with Terminal() as terminal:
        async with open_session(instance, driver=driver) as session:
            for text in prompts:
                writer.add_input(text)
                terminal.write(f"you> {text}\n")
                try:
                    await run_turn(session, terminal, text)
                except DriverError as exc:
                    failed += 1
                    terminal.write(f"[error] {exc}\n")
    return failed
