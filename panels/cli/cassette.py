"""`mnemara rehearse --cassette`: replay a recorded session offline, or convert it to a script.

The replay is an ordinary rehearsal (rehearse.py) whose script is the cassette's recorded
answers in order (runtime/cassette/script.py), with the recorded operator inputs
as its turns. Afterwards the replay's requests are compared with the recording
(runtime/cassette/check.py): the first request that differs and where, and whether
each recorded tool call was allowed or refused the same way. Exit 0 when identical,
`EXIT_DIVERGED` when not.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from panels.cli.errors import EXIT_DIVERGED, EXIT_DRIVER, EXIT_FAILURE

if TYPE_CHECKING:
    from runtime.cassette.check import ReplayReport
    from runtime.cassette.file import Cassette
    from runtime.rehearsal import RequestRecord
    from runtime.sandbox.settings import Mode


def write_script(cassette: Path, out: Path, instance: str | None) -> None:
    """Convert `cassette` to a rehearsal script at `out` (the panel named like the recorded
    instance, or `instance` when given), written whole or not at all."""
    from runtime.cassette.file import load_cassette
    from runtime.cassette.script import script_toml, turns

    parsed = load_cassette(cassette)
    panel = instance or parsed.instance or "recorded"
    text = script_toml(parsed, panel)
    temp = out.with_name(f".{out.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    temp.replace(out)
    typer.echo(f"wrote {out}: panel {panel!r}, {len(turns(parsed))} recorded answer(s), strict")


def run_cassette(
    instance: str,
    cassette: Path,
    prompts: list[str],
    log: Path | None,
    *,
    rehearse: Callable[..., Awaitable[tuple[int, bool]]],
    sandbox: Mode = "auto",
) -> None:
    """Replay `cassette` through the real CLI against `instance` with `rehearse` (rehearse.py's
    one rehearsal runner, for cassettes and scripts alike); print how it compares."""
    import anyio

    from runtime.cassette.file import load_cassette
    from runtime.cassette.script import cassette_script, recorded_usage
    from runtime.instance.home import InstancePaths
    from runtime.policy.rules import load_rules

    load_rules(InstancePaths.for_name(instance).require().permissions)
    parsed = load_cassette(cassette)
    script = cassette_script(parsed, instance)
    # A REPL recording replays through the REPL (the hosted panel sees the host's tools);
    # --prompt, or a --prompt recording, runs the inputs as headless turns.
    typed = list(parsed.inputs) if parsed.mode == "repl" and not prompts else None
    inputs = prompts or ([] if typed is not None else list(parsed.inputs))
    records: list[RequestRecord] = []
    usage = recorded_usage(parsed, instance)
    failed, ok = anyio.run(
        lambda: rehearse(
            instance,
            script,
            instance,
            inputs,
            log,
            sandbox,
            seen=records,
            usage_hook=usage,
            typed=typed,
        ),
        backend="trio",
    )
    report = compare(parsed, records)
    for line in report.lines():
        typer.echo(line)
    if not report.identical:
        raise typer.Exit(EXIT_DIVERGED)
    if failed:
        raise typer.Exit(EXIT_DRIVER)
    if not ok:
        raise typer.Exit(EXIT_FAILURE)


def compare(cassette: Cassette, records: list[RequestRecord]) -> ReplayReport:
    """The replay's conversation requests against the recorded ones."""
    from runtime.cassette.check import compare_replay
    from runtime.cassette.script import turns
    from runtime.cassette.scrub import Scrubber, env_secrets

    recorded = turns(cassette)
    bodies = [e.request.body if isinstance(e.request.body, dict) else {} for e in recorded]
    answers = [
        (e.response.message if e.response.stream else e.response.body) or {} for e in recorded
    ]
    replayed = [r.body for r in records if r.source != "structured-default"]
    scrubber = Scrubber(env_secrets(os.environ))
    return compare_replay(
        bodies, [a if isinstance(a, dict) else {} for a in answers], replayed, scrubber
    )
