"""`mnemara rehearse`: a solo session against a rehearsal script, for testing a role doc free.

The real Claude Code CLI runs the turns, with the instance's role doc, window and permission
policy, but its model service is the rehearsal model (runtime/rehearsal/) serving the script
on loopback: no network, no key, no tokens spent. The CLI gets a throwaway HOME and a dummy
key, and every switch that could send it to a real service (Bedrock, Vertex, an OAuth token)
is cleared, so a rehearsal can never bill anyone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from panels.cli.errors import (
    EXIT_DIVERGED,
    EXIT_DRIVER,
    EXIT_FAILURE,
    EXIT_USAGE,
    fail,
    reports_errors,
)
from panels.cli.options import SandboxOpt, check_output, sandbox_mode

if TYPE_CHECKING:
    from panels.repl.terminal import Terminal
    from panels.team import TeamSpec
    from runtime.claude import ClaudeDriver
    from runtime.rehearsal import RehearsalServer, RequestRecord, Script
    from runtime.rehearsal.server import UsageHook
    from runtime.sandbox.settings import Mode
    from runtime.turn.driver import AgentDriver


def pick_panel(
    script: Script, wanted: str | None, source: Path, *, instance: str | None = None
) -> str:
    """The panel of the script that answers: `wanted`; else the one named like the instance;
    else the script's only panel. Exits 2 naming the script's panels when none fits."""
    names = sorted(script.panels)
    listed = ", ".join(names) or "(none)"
    if wanted is not None:
        if wanted not in script.panels:
            raise fail(f"{source}: no panel {wanted!r}; it has: {listed}", EXIT_USAGE)
        return wanted
    if instance is not None and instance in script.panels:
        return instance
    if len(names) != 1:
        named = f" and none is named {instance!r}" if instance is not None else ""
        raise fail(
            f"{source} defines {len(names)} panels ({listed}){named}; choose one with --panel NAME",
            EXIT_USAGE,
        )
    return names[0]


def usage_line(records: Sequence[RequestRecord]) -> str:
    """One line of summed usage over some requests, as the model service would bill them."""
    from runtime.rehearsal import summarize

    t = summarize(records)
    return (
        f"{t.requests} request(s): input {t.input_tokens}, cache write "
        f"{t.cache_creation_input_tokens}, cache read {t.cache_read_input_tokens} "
        f"({t.cache_read_share:.0%} of the prompt), output {t.output_tokens}, "
        f"${t.cost_usd:.4f} at list price"
    )


@reports_errors
def rehearse(
    instance: Annotated[
        str | None,
        typer.Option(
            "--instance",
            "-i",
            metavar="NAME",
            help="The instance (its directory in MNEMARA_HOME); not needed with --to-script.",
        ),
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option(
            "--script",
            metavar="FILE",
            help="Rehearsal script (TOML) saying what the model answers; see "
            "examples/rehearsal/README.md.",
        ),
    ] = None,
    cassette: Annotated[
        Path | None,
        typer.Option(
            "--cassette",
            metavar="FILE",
            help="Replay a session recorded by `mnemara record` and report where it differs "
            f"(exit {EXIT_DIVERGED} when it does).",
        ),
    ] = None,
    to_script: Annotated[
        Path | None,
        typer.Option(
            "--to-script",
            metavar="FILE",
            help="With --cassette: write it as a rehearsal script (TOML) instead of running.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="With --to-script: replace an existing file.")
    ] = False,
    panel: Annotated[
        str | None,
        typer.Option(
            "--panel",
            "-p",
            metavar="NAME",
            help="Which panel of the script answers; needed when it has several and none is "
            "named like the instance.",
        ),
    ] = None,
    prompt: Annotated[
        list[str] | None,
        typer.Option(
            "--prompt",
            metavar="TEXT",
            help="Run this input as a turn, print the reply and exit (repeat for several "
            "turns; with --cassette, instead of the recorded inputs). Tool calls the policy "
            "would ask about are refused, as in a headless run.",
        ),
    ] = None,
    log: Annotated[
        Path | None,
        typer.Option(
            "--log",
            metavar="FILE",
            help="Append one JSON line per model request (usage, cache) to this file.",
        ),
    ] = None,
    sandbox: SandboxOpt = "auto",
) -> None:
    """Talk to an instance with the model replaced by a script or a recorded cassette.

    No network, no tokens. Without --prompt: the line REPL of `mnemara run --no-tui` (the
    instance as a team of one under the host), then a usage summary.
    """
    from panels.cli.cassette import run_cassette, write_script
    from panels.cli.record import refuse_existing
    from runtime.instance.home import InstancePaths
    from runtime.store.schema import refuse_original

    mode = sandbox_mode(sandbox)
    if (script is None) == (cassette is None):
        raise fail("give exactly one of --script FILE or --cassette FILE", EXIT_USAGE)
    if to_script is not None:
        if cassette is None:
            raise fail("--to-script converts a cassette: give --cassette FILE", EXIT_USAGE)
        refuse_existing(to_script, force)
        write_script(cassette, to_script, instance)
        return
    if instance is None:
        raise fail("give the instance to rehearse with --instance NAME", EXIT_USAGE)
    if log is not None:
        check_output(log)
    refuse_original(InstancePaths.for_name(instance).turns)  # only `migrate` converts one
    if cassette is not None:
        run_cassette(instance, cassette, prompt or [], log, rehearse=_rehearse, sandbox=mode)
    elif script is not None:
        run_rehearsal(instance, script, panel, prompt or [], log, mode)


def run_rehearsal(
    instance: str,
    script: Path,
    panel: str | None,
    prompts: list[str],
    log: Path | None,
    sandbox: Mode = "auto",
) -> None:
    """`rehearse`, and `run --rehearsal`: exits 6 when a prompt's turn failed, 1 when the
    host gave up on the panel (the face has said why)."""
    import anyio

    from runtime.instance.home import InstancePaths
    from runtime.policy.rules import load_rules

    # A bad permissions.json would only stop the panel once the host runs: say so now (exit 8).
    load_rules(InstancePaths.for_name(instance).require().permissions)
    parsed, chosen = checked_script(instance, script, panel)
    failed, ok = anyio.run(
        lambda: _rehearse(instance, parsed, chosen, prompts, log, sandbox), backend="trio"
    )
    if failed:
        raise typer.Exit(EXIT_DRIVER)
    if not ok:
        raise typer.Exit(EXIT_FAILURE)


def checked_script(instance: str, script: Path, panel: str | None) -> tuple[Script, str]:
    """The rehearsal script at `script` and its panel that answers `instance` (exits 2 on a
    directory, or a panel the script has not)."""
    from runtime.rehearsal import load_script

    if script.is_dir():
        raise fail(f"{script} is a directory; give the rehearsal script (TOML) in it", EXIT_USAGE)
    parsed = load_script(script)
    return parsed, pick_panel(parsed, panel, script, instance=instance)


@asynccontextmanager
async def rehearsal_driver(
    script: Script,
    panel: str,
    team: TeamSpec,
    *,
    log: Path | None = None,
    usage_hook: UsageHook | None = None,
) -> AsyncIterator[tuple[ClaudeDriver, RehearsalServer, str]]:
    """The script served on loopback, a CLI driver aimed at its `panel` (a throwaway HOME, a
    dummy key) and confined as `team` says, and what confines it (the note a face shows),
    for the block."""
    import tempfile

    from panels.host.turns.confine import team_sandbox
    from panels.unconfined import UNCONFINED, told
    from runtime.claude import ClaudeDriver
    from runtime.rehearsal import open_rehearsal_server
    from runtime.rehearsal.env import rehearsal_env

    sandbox, note = team_sandbox(team)
    if note.startswith(UNCONFINED):
        typer.echo(f"mnemara: {note}", err=True)
    with tempfile.TemporaryDirectory(prefix="mnemara-rehearsal-") as cli_home:
        async with open_rehearsal_server(script, log_path=log, usage_hook=usage_hook) as server:
            env = rehearsal_env(server.base_url_for(panel), Path(cli_home))
            yield ClaudeDriver(env=env, sandbox=sandbox), server, told(note, team)


async def _rehearse(
    instance: str,
    script: Script,
    panel: str,
    prompts: list[str],
    log: Path | None,
    sandbox: Mode = "auto",
    *,
    seen: list[RequestRecord] | None = None,
    usage_hook: UsageHook | None = None,
    typed: list[str] | None = None,
) -> tuple[int, bool]:
    """Run the REPL or the given prompts: how many turns failed, and False when the host
    gave up on the panel. `seen` gets the panel's request log (for a cassette's report);
    `typed`: lines for the REPL to take as if typed before stdin (a REPL recording)."""
    from panels.host.solo import solo_team
    from panels.repl.face import run_solo

    failed, ok = 0, True
    team = solo_team(instance, sandbox=sandbox)
    async with rehearsal_driver(script, panel, team, log=log, usage_hook=usage_hook) as (
        driver,
        server,
        note,
    ):
        if prompts:
            failed = await _run_prompts(instance, driver, server, panel, prompts)
        elif typed is not None:
            ok = await _run_typed(team, driver, typed, note)
        else:
            ok = await run_solo(team, drivers=lambda spec: driver, sandbox_note=note)
        typer.echo(f"rehearsal total: {usage_line(server.requests(panel))}")
        if seen is not None:
            seen.extend(server.requests(panel))
    return failed, ok


async def _run_typed(
    team: TeamSpec, driver: AgentDriver, lines: list[str], sandbox_note: str
) -> bool:
    """The REPL with `lines` queued as typed input, then stdin (usually at its end)."""
    from panels.repl.face import run_face
    from panels.repl.terminal import Terminal

    terminal = Terminal()
    terminal.queued.extend(lines)
    return await run_face(team, terminal, drivers=lambda spec: driver, sandbox_note=sandbox_note)


async def _run_prompts(
    instance: str, driver: AgentDriver, server: RehearsalServer, panel: str, prompts: list[str]
) -> int:
    """Each prompt as a turn, printed as the REPL prints it, with the turn's usage after it.

    No asker: the session is headless, so a call the policy would ask about is refused.
    """
    from panels.repl.terminal import Terminal

    with Terminal() as terminal:
        return await _prompt_turns(instance, driver, server, panel, prompts, terminal)


async def _prompt_turns(
    instance: str,
    driver: AgentDriver,
    server: RehearsalServer,
    panel: str,
    prompts: list[str],
    terminal: Terminal,
) -> int:
    from panels.repl.loop import run_turn
    from runtime.errors import DriverError
    from runtime.turn.open import open_session

    failed = 0
    async with open_session(instance, driver=driver) as session:
        for text in prompts:
            seen = len(server.requests(panel))
            terminal.write(f"you> {text}\n")
            try:
                await run_turn(session, terminal, text)
            except DriverError as exc:
                failed += 1
                terminal.write(f"[error] {exc}\n")
            terminal.write(f"[turn: {usage_line(server.requests(panel)[seen:])}]\n")
    return failed
